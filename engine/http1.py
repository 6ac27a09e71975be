"""A response's HTTP/1.1 framing: its head, status, body and content coding, read by one reader.

Every answer the transport gets (pooled, streamed, or a refused WebSocket upgrade) is
read here: interim 1xx answers read past, the framing decided once (``framing``: a bad,
negative or twice-and-different Content-Length named), the body read in bounded pieces
(``Body``) and bounded by the caller's ``max_body`` (the scenario's ``max_body_mib``),
a coded body decoded as it arrives (engine/content_coding.py), the bound held on the
decoded bytes. What a hostile answer breaks is raised as an ``ExchangeError`` whose
words are named here, so a failed sample says the same thing for the same fault.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from gevent import socket

from engine.content_coding import CodingError, PastBound, codings, decoded

# Bytes asked of the kernel per read: a list page fits in one.
READ_CHUNK = 65536
# Bytes asked per read of a larger body: a bounded piece, never the size the server announced.
BODY_READ = 1 << 20
# A response head (or a chunk's size line, or its trailers) longer than this is not HTTP this
# client will parse.
MAX_HEAD = 65536
# How a body is delimited, beside a length (>= 0): chunked, or by the connection's end.
CHUNKED = -1
TO_CLOSE = -2
# Statuses that never carry a body, whatever the headers say.
NO_BODY = (204, 304)


class ExchangeError(ConnectionError):
    """The exchange broke after the request may have reached the server; the text says how."""

    @property
    def detail(self) -> str:
        """The stable text a failed sample carries."""
        return str(self)


CLOSED_BEFORE_STATUS = "connection closed before the status line"
CLOSED_IN_HEAD = "connection closed in the response head"
CLOSED_IN_BODY = "connection closed in the response body"
BAD_STATUS_LINE = "bad status line"
HEAD_OVER = f"response head over {MAX_HEAD >> 10} KiB"
BAD_CHUNK = "bad chunked body"
# Content-Length values no body can have: the message cannot be framed, so it is a failure.
LENGTH_NEGATIVE = "bad Content-Length: negative"
LENGTH_NOT_A_NUMBER = "bad Content-Length: not a number"
LENGTH_TWICE = "bad Content-Length: two different values"
# A transfer coding other than chunked (gzip, compress): no client the kit stands for reads it.
TRANSFER_CODING = "unsupported Transfer-Encoding: {coding}"
# 101 Switching Protocols is an answer only to a request that asked for an upgrade.
UNASKED_UPGRADE = "HTTP 101 to a request that asked for no upgrade"


def over_bound(what: str, max_body: int, how: str) -> str:
    """``body over 8 MiB (Content-Length 52428800)``: a body (or a WebSocket frame) past the
    bound, and how that was known: announced, or counted as read."""
    return f"{what} over {_bound_words(max_body)} ({how})"


def _bound_words(max_body: int) -> str:
    return f"{max_body >> 20} MiB" if max_body % (1 << 20) == 0 else f"{max_body} bytes"


def failure_detail(exc: BaseException) -> str:
    """What a failed sample says about an exception: the exchange's words, else its class."""
    return exc.detail if isinstance(exc, ExchangeError) else type(exc).__name__


class Answer(NamedTuple):
    """One answer as the transport read it: its status, whole body, for a 3xx where it
    pointed (the ``Location`` header as sent, None when absent or not a redirect), and for a
    429 how long it asked the client to wait (``Retry-After`` as sent, None when absent): how
    a platform sheds load is part of what it did (reports/faults.py)."""

    status: int
    body: bytes
    location: str | None = None
    retry_after: str | None = None


def read_response(
    sock: socket.socket, head_only: bool, max_body: int, first: bytes = b""
) -> tuple[Answer, bool]:
    """The final answer, read to its end (``first``: what was read of it already), and
    whether the connection may be reused.

    Only what the workloads need: the status line, the framing (``framing``), the
    Content-Encoding, ``Connection: close`` and HTTP/1.0, and a redirect's Location. A
    body past ``max_body``, as sent or decoded, raises.
    """
    head, rest, status, version_10 = final_head(sock, upgrade=False, first=first)
    lowered = head.lower()
    connection = header_value(lowered, b"connection")
    reusable = b"close" not in connection if connection is not None else not version_10
    location = redirect_location(head, lowered) if 300 <= status < 400 else None
    wait = _retry_after(lowered) if status == 429 else None
    if head_only or status in NO_BODY:
        return Answer(status, b"", location, wait), reusable
    framing = body_framing(lowered)
    if (
        0 <= framing <= len(rest)
        and framing <= max_body
        and lowered.find(b"\r\ncontent-encoding:") < 0
    ):
        # The whole body came with the head, as is (a list page): nothing more to read. Bytes
        # past it are an answer to nothing, so the connection is not reused.
        return Answer(status, rest[:framing], location, wait), reusable and len(rest) == framing
    body = Body(sock, rest, framing, max_body)
    data = b"".join(decoded_pieces(body, lowered, max_body))
    return Answer(status, data, location, wait), reusable and body.clean


def read_upgrade(sock: socket.socket, max_body: int) -> tuple[bytes, Answer | None]:
    """The answer to a request that asked for an upgrade (a WebSocket's): a 101's head and
    what came behind it, for the protocol's own checks, and None; or b"" and any other final
    answer, read whole within ``max_body``. Interim answers are read past, as on any request."""
    head, rest, status, _ = final_head(sock, upgrade=True)
    if status == 101:
        return head + b"\r\n\r\n" + rest, None
    lowered = head.lower()
    location = redirect_location(head, lowered) if 300 <= status < 400 else None
    if status in NO_BODY:
        return b"", Answer(status, b"", location)
    body = Body(sock, rest, body_framing(lowered), max_body)
    return b"", Answer(status, b"".join(decoded_pieces(body, lowered, max_body)), location)


def final_head(
    sock: socket.socket, upgrade: bool, first: bytes = b""
) -> tuple[bytes, bytes, int, bool]:
    """The final answer's head, the bytes read past it, its status and whether the server
    spoke HTTP/1.0 (``first``: what was read of the answer already). Any number of interim
    answers (100 Continue, 103 Early Hints) is read past; a 101 is final where ``upgrade``
    was asked for, and a named failure where not."""
    head, rest = _read_head(sock, first)
    status, version_10 = _status(head)
    while 100 <= status < 200:
        if status == 101:
            if upgrade:
                break
            raise ExchangeError(UNASKED_UPGRADE)
        head, rest = _read_head(sock, rest)
        status, version_10 = _status(head)
    return head, rest, status, version_10


def _read_head(sock: socket.socket, buf: bytes) -> tuple[bytes, bytes]:
    """An answer's head (up to its blank line, not included) and the bytes read past it,
    starting from ``buf`` (what was read already: the first read, or what an interim answer
    left); a connection that closes before the head ends, or a head past MAX_HEAD, raises."""
    if not buf:
        buf = sock.recv(READ_CHUNK)
        if not buf:
            raise ExchangeError(CLOSED_BEFORE_STATUS)
    while (end := buf.find(b"\r\n\r\n")) < 0:
        if len(buf) > MAX_HEAD:
            raise ExchangeError(HEAD_OVER)
        more = sock.recv(READ_CHUNK)
        if not more:
            raise ExchangeError(CLOSED_IN_HEAD if b"\r\n" in buf else BAD_STATUS_LINE)
        buf += more
    if end > MAX_HEAD:
        raise ExchangeError(HEAD_OVER)
    return buf[:end], buf[end + 4 :]


def _status(head: bytes) -> tuple[int, bool]:
    """The status code from ``HTTP/1.x NNN reason``, and whether the server spoke HTTP/1.0."""
    line_end = head.find(b"\r\n")
    line = head if line_end < 0 else head[:line_end]
    parts = line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or len(parts[1]) != 3:
        raise ExchangeError(BAD_STATUS_LINE)
    if not parts[1].isdigit():
        raise ExchangeError(BAD_STATUS_LINE)
    return int(parts[1]), parts[0] == b"HTTP/1.0"


def body_framing(lowered_head: bytes) -> int:
    """How the body of an answer that has one is delimited: its length, CHUNKED or TO_CLOSE.

    Transfer-Encoding wins over Content-Length (RFC 9112 6.3). A Content-Length that is
    negative, not a number, or given twice with different values cannot frame a message,
    and is named; the same value twice (``5, 5``) is that value.
    """
    coding = header_value(lowered_head, b"transfer-encoding")
    if coding:
        if coding == b"chunked":
            return CHUNKED
        for token in coding.split(b","):
            if (token := token.strip()) != b"chunked":
                shown = token[:40].decode("ascii", "replace")
                raise ExchangeError(TRANSFER_CODING.format(coding=shown))
        return CHUNKED
    start = lowered_head.find(b"\r\ncontent-length:")
    if start < 0:
        return TO_CLOSE
    end = lowered_head.find(b"\r\n", start + 2)
    value = lowered_head[start + len(b"\r\ncontent-length:") : None if end < 0 else end].strip()
    if value.isdigit() and (end < 0 or lowered_head.find(b"\r\ncontent-length:", end) < 0):
        # One header of digits alone: every answer but a faulty one.
        return int(value)
    lengths = set()
    while start >= 0:
        start += len(b"\r\ncontent-length:")
        end = lowered_head.find(b"\r\n", start)
        for value in lowered_head[start : None if end < 0 else end].split(b","):
            lengths.add(_length(value.strip(b" \t")))
        start = -1 if end < 0 else lowered_head.find(b"\r\ncontent-length:", end)
    if len(lengths) > 1:
        raise ExchangeError(LENGTH_TWICE)
    return lengths.pop()


def _length(value: bytes) -> int:
    """One Content-Length value: digits only (no sign, space or underscore, which int takes)."""
    if value.isdigit():
        return int(value)
    if value[:1] == b"-" and value[1:].isdigit():
        raise ExchangeError(LENGTH_NEGATIVE)
    raise ExchangeError(LENGTH_NOT_A_NUMBER)


def header_value(lowered_head: bytes, name: bytes) -> bytes | None:
    """The (lower-cased, stripped) value of a header in a lower-cased head, None if absent."""
    start = lowered_head.find(b"\r\n" + name + b":")
    if start < 0:
        return None
    start += len(name) + 3
    end = lowered_head.find(b"\r\n", start)
    return lowered_head[start : None if end < 0 else end].strip()


def _retry_after(lowered_head: bytes) -> str | None:
    """A 429's Retry-After as sent (seconds or an HTTP date), None if absent."""
    value = header_value(lowered_head, b"retry-after")
    return None if value is None else value.decode("latin-1")


def redirect_location(head: bytes, lowered_head: bytes) -> str | None:
    """A redirect's Location as the server spelled it (a URL is case-sensitive), None if absent."""
    start = lowered_head.find(b"\r\nlocation:")
    if start < 0:
        return None
    start += len(b"\r\nlocation:")
    end = head.find(b"\r\n", start)
    return head[start : None if end < 0 else end].strip().decode("latin-1")


class Body:
    """One answer's body as it arrives, its framing undone: the one reader of every path.

    ``pieces`` yields the body's bytes in the pieces they arrive in (a chunk's first
    bytes before its last), never asking the kernel for more than a bounded piece,
    whatever size the server announced. With a ``bound`` (a body read whole), an
    announced length past it fails at once, unread, and a counted one as soon as its
    bytes pass it; without one (a stream read line by line) the caller bounds each line.
    ``clean`` is True once the body ended exactly where the bytes read so far end.
    """

    __slots__ = ("_bound", "_buf", "_sock", "clean", "framing")

    def __init__(self, sock: socket.socket, buf: bytes, framing: int, bound: int | None):
        self._sock, self._buf, self.framing, self._bound = sock, buf, framing, bound
        self.clean = False

    def pieces(self) -> Iterator[bytes]:
        """The body's bytes as they arrive; raises ``ExchangeError`` naming how it broke."""
        if self.framing == CHUNKED:
            return self._chunked()
        if self.framing == TO_CLOSE:
            return self._to_close()
        return self._sized(self.framing)

    def _recv(self, size: int = READ_CHUNK) -> bytes:
        more = self._sock.recv(size)
        if not more:
            raise ExchangeError(CLOSED_IN_BODY)
        return more

    def _sized(self, left: int) -> Iterator[bytes]:
        bound = self._bound
        if bound is not None and left > bound:
            # Announced past the bound: nothing of it is read, and the connection goes.
            raise ExchangeError(over_bound("body", bound, f"Content-Length {left}"))
        buf = self._buf
        self.clean = len(buf) <= left
        if buf:
            piece = buf[:left]
            left -= len(piece)
            yield piece
        while left > 0:
            more = self._recv(min(BODY_READ, left))
            left -= len(more)
            yield more

    def _to_close(self) -> Iterator[bytes]:
        bound, read = self._bound, len(self._buf)
        if bound is not None and read > bound:
            raise _counted_past(bound)
        if self._buf:
            yield self._buf
        while True:
            room = READ_CHUNK if bound is None else min(READ_CHUNK, bound + 1 - read)
            more = self._sock.recv(room)
            if not more:
                return
            read += len(more)
            if bound is not None and read > bound:
                raise _counted_past(bound)
            yield more

    def _chunked(self) -> Iterator[bytes]:
        """Each chunk's data as it arrives; ends at the last chunk (its trailers read past),
        raises on a bad size line, a chunk not ended by CRLF, or a close."""
        buf, pos, read, bound = self._buf, 0, 0, self._bound
        while True:
            while (line_end := buf.find(b"\r\n", pos)) < 0:
                if len(buf) - pos > MAX_HEAD:
                    raise ExchangeError(BAD_CHUNK)
                buf, pos = buf[pos:] + self._recv(), 0
            size = _chunk_size(buf[pos:line_end])
            pos = line_end + 2
            if size == 0:
                # Trailer fields, then the empty line that ends the message.
                while (trailer_end := buf.find(b"\r\n", pos)) != pos:
                    if trailer_end >= 0:
                        pos = trailer_end + 2
                    elif len(buf) - pos > MAX_HEAD:
                        raise ExchangeError(BAD_CHUNK)
                    else:
                        buf, pos = buf[pos:] + self._recv(), 0
                self.clean = len(buf) == pos + 2
                return
            if bound is not None and read + size > bound:
                # Counted as read, not as announced: the bytes that pass the bound come first.
                raise self._past_bound(read + min(size, len(buf) - pos), bound)
            read += size
            while size > 0:
                if pos == len(buf):
                    buf, pos = self._recv(), 0
                piece = buf[pos : pos + size]
                pos += len(piece)
                size -= len(piece)
                yield piece
            while len(buf) - pos < 2:
                buf, pos = buf[pos:] + self._recv(), 0
            if buf[pos : pos + 2] != b"\r\n":
                raise ExchangeError(BAD_CHUNK)
            pos += 2

    def _past_bound(self, read: int, bound: int) -> ExchangeError:
        """The failure of a body found past the bound while reading it: ``read`` body bytes
        are in, and more are read (into one scratch buffer, dropped) until one byte past the
        bound. A body that ends before that was cut short, not too large."""
        scratch = bytearray(min(BODY_READ, max(1, bound + 1 - read)))
        while read <= bound:
            got = self._sock.recv_into(scratch, min(len(scratch), bound + 1 - read))
            if not got:
                return ExchangeError(CLOSED_IN_BODY)
            read += got
        return _counted_past(bound)


def decoded_pieces(body: Body, lowered_head: bytes, bound: int | None) -> Iterator[bytes]:
    """The body's bytes with its Content-Encoding undone (engine/content_coding.py), the
    bound held on each layer's decoded bytes as on the bytes as sent."""
    value = _header_values(lowered_head, b"content-encoding")
    try:
        undo = codings(value) if value else ()
        if not undo:
            yield from body.pieces()
            return
        yield from decoded(body.pieces(), undo, bound)
    except CodingError as exc:
        raise ExchangeError(str(exc)) from None
    except PastBound as exc:
        # Only a body read with a bound gets here.
        assert bound is not None
        raise ExchangeError(f"{exc.coding} body over {_bound_words(bound)} decoded") from None


def _header_values(lowered_head: bytes, name: bytes) -> bytes | None:
    """Every value of a header that may be given on several lines, joined as one list
    (``gzip`` and ``gzip`` on two lines are ``gzip, gzip``), None if absent."""
    first = header_value(lowered_head, name)
    if first is None:
        return None
    values, start = [first], lowered_head.find(b"\r\n" + name + b":")
    while (start := lowered_head.find(b"\r\n" + name + b":", start + 2)) >= 0:
        values.append(header_value(lowered_head[start:], name) or b"")
    return b", ".join(values)


def _chunk_size(line: bytes) -> int:
    """A chunk's size from its line: hex digits, before any extension (``;name=value``)."""
    digits = line.split(b";", 1)[0].strip(b" \t")
    if not digits or digits.strip(b"0123456789abcdefABCDEF"):
        raise ExchangeError(BAD_CHUNK)
    return int(digits, 16)


def _counted_past(max_body: int) -> ExchangeError:
    """A body read one byte past the bound (``8388609 read``): the count says how far it was
    read, not how far the kernel's buffers happened to reach, so equal faults read alike."""
    return ExchangeError(over_bound("body", max_body, f"{max_body + 1} read"))
