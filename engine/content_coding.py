"""Content-Encoding undone as a body arrives, with the body bound held on the decoded bytes.

Real clients ask for gzip (browsers, requests, the official SDKs, k6), so a
platform's real cost includes compressing, and a proxy may compress an answer
nobody asked it to. zlib and brotli do the decoding; this module only keeps each
layer's output within the bound, so a 1 MB body that expands to 1 GiB (or a 2 KB
one of two layers) costs one failed sample and at most the bound's worth of
decoding, never the process's memory. zstd is not offered: no pinned library
here decodes it with a bound on its output.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import Protocol

import brotli

# What a request may ask for (--accept-encoding): the codings decoded here, and identity.
ACCEPTABLE = ("gzip", "deflate", "br", "identity")
# What the kit asks for unless told otherwise: gzip, as Go's client (k6) and every browser do.
DEFAULT_ACCEPT = "gzip"
# Decoded bytes asked of a decoder per step where no bound is nearer: a bounded piece.
STEP = 1 << 20


class CodingError(ValueError):
    """A body that cannot be decoded: an unknown coding, bad bytes, or a stream cut short."""


class PastBound(Exception):
    """A coding's decoded output passed the bound; ``coding`` names the layer."""

    def __init__(self, coding: str):
        super().__init__(coding)
        self.coding = coding


def accept_problem(value: str) -> str | None:
    """What is wrong with an Accept-Encoding the kit would send, None when nothing is."""
    codings = [c.strip() for c in value.split(",")]
    unknown = [c for c in codings if c not in ACCEPTABLE]
    if not value.strip() or unknown:
        shown = ", ".join(repr(c[:40]) for c in unknown) or "nothing"
        return f"{shown} is not a coding the kit decodes; give a list of {', '.join(ACCEPTABLE)}"
    return None


def codings(value: bytes) -> tuple[str, ...]:
    """The codings a (lower-cased) Content-Encoding value names, in the order to undo them
    (the last applied first); identity drops out. Raises CodingError for one not decoded here."""
    named = []
    for token in value.split(b","):
        token = token.strip()
        if token in (b"", b"identity"):
            continue
        coding = "gzip" if token == b"x-gzip" else token.decode("ascii", "replace")
        if coding not in _DECODERS:
            raise CodingError(f"unknown Content-Encoding: {coding[:40]}")
        named.append(coding)
    return tuple(reversed(named))


def decoded(pieces: Iterator[bytes], undo: tuple[str, ...], bound: int | None) -> Iterator[bytes]:
    """The body's decoded bytes as they come, each layer in ``undo`` in turn; a layer whose
    output passes ``bound`` raises PastBound (None: no bound, each step still bounded)."""
    for coding in undo:
        pieces = _layer(pieces, coding, bound)
    return pieces


def _layer(pieces: Iterator[bytes], coding: str, bound: int | None) -> Iterator[bytes]:
    decoder = _DECODERS[coding]()
    made = 0
    for piece in pieces:
        data = piece
        while True:
            room = STEP if bound is None else min(STEP, bound + 1 - made)
            out = decoder.take(data, room)
            made += len(out)
            if bound is not None and made > bound:
                raise PastBound(coding)
            if out:
                yield out
            if not decoder.more:
                break
            data = b""
    decoder.finish()


class _Inflate:
    """gzip (members one after another, as RFC 1952 allows) or deflate: zlib's own stream,
    or the raw one some servers send under that name (as browsers and urllib3 accept)."""

    __slots__ = ("_coding", "_fed", "_first", "_next", "_z", "more")

    def __init__(self, coding: str):
        self._coding = coding
        self._z = zlib.decompressobj(31 if coding == "gzip" else 15)
        # deflate's first bytes, kept until they decode, so a raw stream can be tried instead.
        self._first: bytes | None = None if coding == "gzip" else b""
        # The next gzip member's first bytes, not yet fed.
        self._next = b""
        self._fed = False
        self.more = False

    def take(self, data: bytes, room: int) -> bytes:
        """Up to ``room`` decoded bytes from ``data`` and what was held back; ``more`` says
        whether calling again (with nothing new) gives more."""
        z = self._z
        if self._next:
            data, self._next = self._next + data, b""
        elif z.unconsumed_tail:
            data = z.unconsumed_tail + data
        self._fed = self._fed or bool(data)
        try:
            out = z.decompress(data, room)
        except zlib.error as exc:
            if self._first is None:
                raise CodingError(f"bad {self._coding} body ({exc})") from None
            # Not zlib's stream: a raw deflate one, from its first byte.
            self._z, first, self._first = zlib.decompressobj(-15), self._first + data, None
            return self.take(first, room)
        if self._first is not None:
            self._first = None if out else self._first + data
        if z.eof and z.unused_data:
            if self._coding != "gzip":
                raise CodingError(f"bad {self._coding} body (bytes after its end)")
            self._next, self._z = z.unused_data, zlib.decompressobj(31)
            self.more = True
            return out
        self.more = bool(z.unconsumed_tail) or (len(out) >= room and not z.eof)
        return out

    def finish(self) -> None:
        """Raise CodingError if bytes were fed and the stream did not end."""
        if self._fed and not self._z.eof:
            raise CodingError(f"{self._coding} body cut short")


class _Brotli:
    """br: brotli's decoder, which keeps the input it was given and yields output in steps."""

    __slots__ = ("_d", "_fed", "_held", "more")

    def __init__(self) -> None:
        self._d = brotli.Decompressor()
        self._held = b""
        self._fed = False
        self.more = False

    def take(self, data: bytes, room: int) -> bytes:
        """As _Inflate.take: brotli takes new input only once it has given all it can."""
        d, held = self._d, self._held + data if self._held else data
        self._fed = self._fed or bool(held)
        try:
            if held and d.can_accept_more_data():
                self._held = b""
                out = d.process(held, output_buffer_limit=room)
            else:
                self._held = held
                out = d.process(b"", output_buffer_limit=room)
        except brotli.error as exc:
            raise CodingError(f"bad br body ({exc})") from None
        self.more = bool(self._held) or not d.can_accept_more_data()
        return out

    def finish(self) -> None:
        """Raise CodingError if bytes were fed and the stream did not end."""
        if self._fed and not self._d.is_finished():
            raise CodingError("br body cut short")


class _Decoder(Protocol):
    """One coding's decoder, as _layer drives it."""

    more: bool

    def take(self, data: bytes, room: int) -> bytes: ...

    def finish(self) -> None: ...


_DECODERS: dict[str, Callable[[], _Decoder]] = {
    "gzip": lambda: _Inflate("gzip"),
    "deflate": lambda: _Inflate("deflate"),
    "br": _Brotli,
}
