"""Answers held to a contract's shape: typed msgspec Structs, and the words when one does not fit.

A 2xx is success only with the body the contract promises, and "promises" means
its shape, not a few bytes of it: a list read whose ``items`` is a string, or
whose envelope sits one level down, is a failure. Each platform spells its
success bodies as Structs (fields it does not name are ignored, as a client
must); msgspec decodes and checks a body in one pass, in C, cheaper than
``json.loads`` alone (docs/internals.md, "Figures behind the code"), so the
busiest workload can afford it. What does not fit becomes one stable line, grouped in
"Failures by reason" by what was wrong, never by where a value sat in a list.
"""

from __future__ import annotations

import re
from typing import Protocol, TypeVar

import msgspec

from engine.dialect_kit import words
from engine.samples import FAILED, Result

NOT_JSON = "bad body: not JSON"
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

# msgspec's words for a body that does not fit its type (msgspec==0.23.0, pinned).
_WHERE = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_MISSING = re.compile(r"Object missing required field `(?P<field>[^`]+)`")
_EXPECTED = re.compile(r"Expected `(?P<want>[^`]+)`, got `(?P<got>[^`]+)`")
_INDEX = re.compile(r"\[\d+\]")


class AnyObject(msgspec.Struct):
    """A JSON object whatever its fields (a list's item): checked to be an object, never built."""


class Decodes(Protocol[T_co]):
    """What ``held`` needs of a decoder: msgspec's Decoder[T] is one, and (being read-only
    here) a Decoder of a list of objects is also one of any wider type, such as object."""

    def decode(self, buf: bytes, /) -> T_co: ...


def decoder(shape: type[T]) -> msgspec.json.Decoder[T]:
    """A reusable decoder for one success body's Struct (made once per shape, at import)."""
    return msgspec.json.Decoder(shape)


def held(body: bytes, shape: Decodes[T]) -> T | str:
    """The body decoded as ``shape``, or the sample's words for why it does not fit."""
    try:
        return shape.decode(body)
    except msgspec.ValidationError as exc:
        return misfit(str(exc))
    except msgspec.DecodeError:
        # Caught second: msgspec's ValidationError is a DecodeError too.
        return NOT_JSON


def misfit(message: str) -> str:
    """``bad body: ...`` from msgspec's validation message: what was missing or of the wrong
    kind, and where (``items``, ``results[].content``; list positions are not kept)."""
    where = _WHERE.search(message)
    path = _INDEX.sub("[]", where["path"]).lstrip(".") if where else ""
    if path.startswith("[]"):
        # Inside a body that is itself a list: its items.
        path = "item" + path[2:]
    message = message[: where.start()] if where else message
    if missing := _MISSING.fullmatch(message):
        field = f"{path}.{missing['field']}" if path else missing["field"]
        return f"bad body: no {field}"
    if expected := _EXPECTED.fullmatch(message):
        want, got = expected["want"], expected["got"]
        if not path:
            article = "an" if want[0] in "aeiou" else "a"
            return f"bad body: not {article} {want}"
        return f"bad body: {path} is {got}, not {want}"
    return f"bad body: {words(message)}" + (f" at {path}" if path else "")


def fits(result: Result, held_or_words: object) -> Result:
    """The sample as judged by the body's shape: ``result`` when ``held`` decoded it, else
    failed in the words ``held`` returned."""
    if isinstance(held_or_words, str):
        return result._replace(outcome=FAILED, detail=held_or_words)
    return result
