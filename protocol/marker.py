"""The loop's marker: the kit's plan for one turn, written into the turn's user message.

The kit writes ``<loadkit>{JSON}</loadkit>`` into the message every platform passes to
its model, and the stub reads it back from the request alone (stub/plan.py says how it
plans a step from it); the two sides share this module and nothing else.
"""

from __future__ import annotations

import msgspec

MARKER_OPEN = "<loadkit>"
MARKER_CLOSE = "</loadkit>"


class Marker(msgspec.Struct, frozen=True, omit_defaults=True):
    """The kit's plan for one turn, as written into its user message (a Struct: msgspec reads
    and checks it in about a microsecond, json.loads and a dataclass took ten)."""

    run: str
    arrival: int
    steps: int = 1
    parallel: int = 1
    tool: str | None = None
    args: dict | None = None
    tokens: int | None = None


_ENCODER = msgspec.json.Encoder()


def write_marker(marker: Marker) -> str:
    """The marker as the kit writes it into a turn's message: only what differs from the
    defaults (one step, one call per step, the first tool, plain arguments, --tokens)."""
    return MARKER_OPEN + _ENCODER.encode(marker).decode() + MARKER_CLOSE


_DECODER = msgspec.json.Decoder(Marker)


def read_marker(text: str) -> Marker | None:
    """The marker in one message's text, or None if it has none or it is not the kit's."""
    start = text.rfind(MARKER_OPEN)
    if start < 0:
        return None
    end = text.find(MARKER_CLOSE, start)
    if end < 0:
        return None
    try:
        marker = _DECODER.decode(text[start + len(MARKER_OPEN) : end])
    except msgspec.DecodeError:  # not JSON, or not the kit's fields and types
        return None
    if marker.steps < 1 or marker.parallel < 1 or (marker.tokens is not None and marker.tokens < 1):
        return None
    return marker
