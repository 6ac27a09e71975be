"""How one AG-UI run's events are read and judged, one event at a time: the same for a chat turn
read as it arrives and an agent run read whole, so both end a run in the same words.

A run ends at ``RUN_FINISHED`` or ``RUN_ERROR``; a stream that ends before either is
``stream ended before complete``, as on every platform. Text is the first *non-empty*
``TEXT_MESSAGE_CONTENT`` (or ``TEXT_MESSAGE_CHUNK``) delta: agno wraps each tool call in an
empty TEXT_MESSAGE_START/END pair, and the schema allows empty deltas as keep-alives, so
neither is a token. A finished run succeeds only with text: the kit's agent answers in
words at its last step, so a run that finished without any said nothing. Tool calls are
followed from ``TOOL_CALL_START`` to ``TOOL_CALL_RESULT``: the kit offers the agent no
frontend tool, so every call is the server's own to run, and a run that finished with one
still unanswered stopped its loop short (named with the tool). An interrupted run (its
outcome ``interrupt``) waits for a person the kit is not, and a ``cancelled`` outcome
nobody asked for is ``stopped unasked``. Any other event type is read past.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from engine.dialect_kit import BAD_FRAME, STOPPED_UNASKED, STREAM_ENDED, words
from workloads.ag_ui.answers import (
    CANCELLED,
    EVENT,
    INTERRUPT,
    RUN_ERROR,
    RUN_FINISHED,
    TEXT_CHUNK,
    TEXT_CONTENT,
    TOOL_CALL_RESULT,
    TOOL_CALL_START,
    Event,
    Outcome,
)
from workloads.answers import NOT_JSON, held

NO_TEXT = "run finished without text"
# A server-sent event stream's line ends: CRLF, LF or a lone CR.
_LINE_END = re.compile(rb"\r\n|\r|\n")


class RunRead:
    """How far one run got: whether it ended and how, whether it said anything, and the tool
    calls it started that have no result yet."""

    def __init__(self) -> None:
        self.ended = False
        # Why the run failed ("" while it goes on, and when it finished well).
        self.failure = ""
        self.text = False
        # Tool call id -> the tool's name, for calls started without a result so far.
        self._open_calls: dict[str, str] = {}

    def take(self, data: bytes) -> bool:
        """Read one event's data; whether it brought text. ``ended`` is set at the run's end,
        and at a frame that is not an event (the run is then failed, named by it)."""
        event = held(data, EVENT)
        if isinstance(event, str):
            self._end(BAD_FRAME if event == NOT_JSON else event.replace("bad body", "bad frame", 1))
            return False
        kind = event.type
        if kind in (TEXT_CONTENT, TEXT_CHUNK):
            if isinstance(event.delta, str):
                self.text = self.text or bool(event.delta)
                return bool(event.delta)
            if event.delta is not None or kind == TEXT_CONTENT:
                self._end(f"bad frame: {kind} without a text delta")
        elif kind == TOOL_CALL_START:
            self._open_calls[event.tool_call_id or ""] = event.tool_call_name or "a tool"
        elif kind == TOOL_CALL_RESULT:
            self._open_calls.pop(event.tool_call_id or "", None)
        elif kind == RUN_ERROR:
            self._end(run_error(event))
        elif kind == RUN_FINISHED:
            self._end(self._finished(event))
        return False

    def verdict(self) -> str:
        """Why the run failed, "" when it finished well; a run still going ended short."""
        return self.failure if self.ended else STREAM_ENDED

    def _end(self, failure: str) -> None:
        self.ended, self.failure = True, failure

    def _finished(self, event: Event) -> str:
        outcome = event.outcome_type
        if outcome == INTERRUPT:
            waits = event.outcome.interrupts if isinstance(event.outcome, Outcome) else []
            reason = words(waits[0].reason) if waits and waits[0].reason else "no reason given"
            return f"run interrupted: {reason}"
        if outcome == CANCELLED:
            return STOPPED_UNASKED
        if self._open_calls:
            return f"tool call unanswered: {words(next(iter(self._open_calls.values())))}"
        # An outcome the kit does not know is success, as the schema tells a consumer to read it.
        return "" if self.text else NO_TEXT


def run_error(event: Event) -> str:
    """``RUN_ERROR <code>: <message>``, as the server gave them (either may be absent)."""
    code = f" {words(str(event.code))}" if event.code not in (None, "") else ""
    message = words(event.message or "")
    return f"RUN_ERROR{code}: {message}" if message else f"RUN_ERROR{code}"


def body_events(body: bytes) -> Iterator[bytes]:
    """The data of each event in a whole server-sent event body (an agent run's, read to its
    end by the transport), as the engine's reader gives a streamed one's: an event is
    dispatched at its blank line, its ``data:`` lines joined by newlines; other fields and
    comments are read past, and an event the body ends inside of is dropped, as a browser's
    EventSource drops it. The engine's reader reads a socket; this body is already whole."""
    data: list[bytes] = []
    for line in _LINE_END.split(body):
        if not line:
            if data:
                yield b"\n".join(data)
            data = []
            continue
        field, _, value = line.partition(b":")
        if field == b"data":
            data.append(value[1:] if value[:1] == b" " else value)
