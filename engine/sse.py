"""Server-sent events as they arrive: a streamed answer's body read line by line, event by event.

The head is read as any answer's (engine/http1.py); the body then comes in the pieces
the server sends, so a chat turn's first token is timed when it arrives, not when the
answer ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from gevent import socket

from engine.http1 import (
    NO_BODY,
    Body,
    ExchangeError,
    body_framing,
    decoded_pieces,
    final_head,
    header_value,
    over_bound,
    redirect_location,
)


@dataclass(frozen=True)
class Event:
    """One server-sent event: its name (``message`` when the server gave none) and its data
    (the event's ``data:`` lines joined by newlines)."""

    name: str
    data: bytes


class StreamedAnswer:
    """An answer whose body is read as it arrives: its status and head first, then the
    body as ``lines`` or server-sent ``events``, or all of it with ``read``.

    The body ends in good order (the chunked body's last chunk, Content-Length reached,
    or the server closing a body delimited by neither) by the iterator ending; anything
    else raises: ``ExchangeError`` (connection closed in the body, a bad chunk, one line,
    or a body read whole, past ``max_body``) or the OS error itself (a reset).
    """

    def __init__(self, sock: socket.socket, max_body: int):
        self._sock = sock
        self._max_body = max_body
        self._raw_head, self._rest, self.status, _ = final_head(sock, upgrade=False)
        self._head = self._raw_head.lower()
        # Body bytes handed out so far: what a broken turn says it had received.
        self.received = 0

    @property
    def location(self) -> str | None:
        """Where a redirect pointed (its ``Location``, as sent), None when absent."""
        return redirect_location(self._raw_head, self._head)

    @property
    def content_type(self) -> str:
        """The answer's media type, lowercased, without its parameters ("" when it has none):
        a stream asked for that came back as one JSON body says so here."""
        value = header_value(self._head, b"content-type") or b""
        return value.split(b";")[0].strip().decode("latin-1")

    def read(self) -> bytes:
        """The rest of the body, whole (a refusal's words), up to ``max_body``."""
        return b"".join(self._pieces(self._max_body))

    def lines(self) -> Iterator[bytes]:
        """The body's lines as they arrive, without their ends (CRLF, LF or a lone CR, as
        server-sent events allow); a last line without an end is yielded when the body ends."""
        pending = b""
        for piece in self._pieces(None):
            pending += piece
            start = 0
            while True:
                cr, lf = pending.find(b"\r", start), pending.find(b"\n", start)
                if cr < 0 and lf < 0:
                    break
                end = lf if cr < 0 or (0 <= lf < cr) else cr
                if end == cr and end == len(pending) - 1:
                    # A CR at the end of what arrived may be the first half of a CRLF.
                    break
                yield pending[start:end]
                start = end + (2 if pending[end : end + 2] == b"\r\n" else 1)
            pending = pending[start:]
            if len(pending) > self._max_body:
                raise ExchangeError(over_bound("line", self._max_body, "counted as read"))
        if pending:
            yield pending.rstrip(b"\r")

    def events(self) -> Iterator[Event]:
        """The body's server-sent events as each is complete (its blank line arrived): the
        WHATWG event-stream format's event and data fields; comments (a heartbeat), ids and
        retry hints are read past. An event without data is not dispatched, as a browser's
        EventSource does not."""
        name = b""
        data: list[bytes] = []
        for line in self.lines():
            if not line:
                if data:
                    yield Event(name.decode() or "message", b"\n".join(data))
                name, data = b"", []
                continue
            field, _, value = line.partition(b":")
            if value[:1] == b" ":
                value = value[1:]
            if field == b"event":
                name = value
            elif field == b"data":
                data.append(value)

    def _pieces(self, bound: int | None) -> Iterator[bytes]:
        """The body in the pieces it arrives in, bounded whole by ``bound`` where given."""
        if self.status in NO_BODY:
            return
        body = Body(self._sock, self._rest, body_framing(self._head), bound)
        for piece in decoded_pieces(body, self._head, bound):
            self.received += len(piece)
            yield piece
