"""HTTP for the workloads: a small HTTP/1.1 client that never re-sends nor blames a stale socket.

Hand-written because the client libraries put lies in the sample (geventhttpclient
re-sent a GET on a closed connection and wrote to keep-alive sockets the server had
closed; docs/internals.md, "One attempt per request"). The rules it keeps:

- once any byte may have reached the server, whatever breaks is raised, named
  (``ExchangeError``, or the OS error itself) and never re-sent; an idle connection is
  checked (a zero-timeout poll, and a peek if readable) before anything is written to
  it, and never reused once idle for ``idle_s``;
- every answer is read by one reader: interim 1xx answers read past, the framing
  decided once (``_framing``: a bad, negative or twice-and-different Content-Length
  named), the body read in bounded pieces (``_Body``) and bounded by the caller's
  ``max_body`` (the scenario's ``max_body_mib``), on the pooled path, the streamed
  path and a refused WebSocket upgrade alike;
- requests ask for the codings the kit decodes (``accept_encoding``, gzip unless told
  otherwise, as real clients ask) and a coded answer is decoded as it arrives
  (engine/content_coding.py), the bound held on the decoded bytes;
- a redirect is an answer, never followed: its ``Location`` comes back with it.
"""

from __future__ import annotations

import errno
import re
import socket as _stdlib_socket
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple
from urllib.parse import urlsplit

import gevent
from gevent import monkey, socket, ssl

from engine.content_coding import (
    DEFAULT_ACCEPT,
    CodingError,
    PastBound,
    accept_problem,
    codings,
    decoded,
)
from engine.samples import FAILED, OK, SHED, Result
from engine.trust import Trust, current

# Idle connections older than this are closed instead of reused: below the 5 s keep-alive
# timeout uvicorn, aiohttp and many proxies default to, so the server is never the one closing.
IDLE_S = 4.0
# A request made outside the dispatcher (sign-in, a dialect's follow-up) gives up after this;
# the dispatcher's own deadline, started when the request leaves, governs every arrival.
BACKSTOP_TIMEOUT_S = 60.0
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
# Peek flags for the liveness check: look without consuming, never block.
_PEEK = _stdlib_socket.MSG_PEEK | _stdlib_socket.MSG_DONTWAIT
# The liveness check's first look: the kernel's own poll (gevent's would go through its hub
# for a zero timeout), one for each connection, its socket registered once.
_POLL = monkey.get_original("select", "poll")
_READABLE = monkey.get_original("select", "POLLIN")
# Statuses that never carry a body, whatever the headers say.
_NO_BODY = (204, 304)
# A request head never carries these: a CR or LF in a path or header would end the line early
# and let what follows be read as another header or request (inputs are checked before load;
# this is the last line of defence for whatever a platform answered, e.g. an id or a token).
_LINE_BREAK = re.compile(r"[\r\n\0]")


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
# A reset, or a close before the status line, on a connection whose last answer was a 5xx.
RESET_AFTER_5XX = "connection reset after the platform's HTTP {status} on this connection"
CLOSED_AFTER_5XX = (
    "connection closed before the status line after the platform's HTTP {status} on this connection"
)


def over_bound(what: str, max_body: int, how: str) -> str:
    """``body over 8 MiB (Content-Length 52428800)``: a body (or a WebSocket frame) past the
    bound, and how that was known: announced, or counted as read."""
    return f"{what} over {_bound_words(max_body)} ({how})"


def _bound_words(max_body: int) -> str:
    return f"{max_body >> 20} MiB" if max_body % (1 << 20) == 0 else f"{max_body} bytes"


def failure_detail(exc: BaseException) -> str:
    """What a failed sample says about an exception: the exchange's words, else its class."""
    return exc.detail if isinstance(exc, ExchangeError) else type(exc).__name__


@dataclass(frozen=True)
class HttpCall:
    """One request as a dialect spells it: a path under the API's base URL, body and headers.

    A dialect that sends the same HttpCall object again (a list read) gets its bytes
    built once: the transport keeps them on the object.
    """

    method: str
    path: str
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)


class Answer(NamedTuple):
    """One answer as the transport read it: its status, whole body, for a 3xx where it
    pointed (the ``Location`` header as sent, None when absent or not a redirect), and for a
    429 how long it asked the client to wait (``Retry-After`` as sent, None when absent): how
    a platform sheds load is part of what it did (reports/faults.py)."""

    status: int
    body: bytes
    location: str | None = None
    retry_after: str | None = None


@dataclass
class TransportStats:
    """What the pool did, so reconnects are visible (the generator's probe rows carry them)."""

    opened: int = 0
    reconnects: int = 0
    retired_idle: int = 0
    open_now: int = 0
    # TLS connections opened with a full handshake, and those that resumed a session.
    tls_handshakes: int = 0
    tls_resumed: int = 0


class _Connection:
    __slots__ = ("idle_since", "last_status", "open", "readable", "sock")

    def __init__(self, sock: socket.socket):
        self.sock = sock
        # What the liveness check asks of the kernel: whether the idle socket is readable.
        self.readable = _POLL()
        self.readable.register(sock.fileno(), _READABLE)
        self.idle_since = 0.0
        # The status of the last answer read on it (0: none yet).
        self.last_status = 0
        # False once discarded: close() may discard a connection its exchange discards again.
        self.open = True


class HttpTransport:
    """Sends HttpCalls to one base URL over reused keep-alive connections; see the module doc.

    The public interface: ``send`` (one exchange), ``prepare`` (open connections ahead
    of load), ``open_socket`` (an unpooled connection, for a WebSocket), ``stats`` (what
    the pool did) and ``close``.
    """

    def __init__(
        self,
        base_url: str,
        *,
        max_body: int,
        accept_encoding: str = DEFAULT_ACCEPT,
        trust: Trust | None = None,
        idle_s: float = IDLE_S,
    ):
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"{base_url!r} is not an http(s) URL")
        # https: verified against the kit's one trust (engine/trust.py; None: the process's).
        self._tls = (trust or current()).context() if url.scheme == "https" else None
        # The last TLS session a connection here was given, for the next one to resume: a
        # chat turn's own connection then costs an abbreviated handshake, as a browser's would.
        self._session: ssl.SSLSession | None = None
        self._server_name = url.hostname
        port = url.port or (443 if self._tls else 80)
        family, _, _, _, address = socket.getaddrinfo(
            url.hostname, port, type=_stdlib_socket.SOCK_STREAM
        )[0]
        self._family, self._address = family, address
        self._prefix = url.path.rstrip("/")
        # Sent with every request: the host, and the codings this client decodes, as a real
        # client states them (the platform's cost of compressing is part of what it serves).
        if problem := accept_problem(accept_encoding):
            raise ValueError(f"Accept-Encoding: {problem}")
        fixed = f"Host: {url.netloc}\r\nAccept-Encoding: {accept_encoding}\r\n"
        self._fixed_headers = fixed.encode()
        self._idle_s = idle_s
        self._max_body = max_body
        self._idle: list[_Connection] = []
        self._busy: set[_Connection] = set()
        self.stats = TransportStats()

    # -- public -----------------------------------------------------------------------------

    def send(self, call: HttpCall, timeout_s: float | None = BACKSTOP_TIMEOUT_S) -> Answer:
        """The answer to one exchange; raises ``ExchangeError`` or an ``OSError``.

        ``timeout_s`` None leaves the deadline to the caller (the dispatcher's, from send).
        """
        if timeout_s is None:
            return self._exchange(call)
        with gevent.Timeout(timeout_s, TimeoutError("timed out")):
            return self._exchange(call)

    @property
    def max_body(self) -> int:
        """The bound on a body, in bytes (the scenario's): the WebSocket turns read to it too."""
        return self._max_body

    def prepare(self, count: int) -> int:
        """Open up to ``count`` connections now (before load), so the first arrivals do not
        pay for connecting; returns how many are open and idle. Failures stop the warm-up."""
        wanted = max(0, count - len(self._idle))
        for _ in range(wanted):
            try:
                connection = self._connect()
            except OSError:
                break
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        return len(self._idle)

    def trim_idle(self, keep: int) -> None:
        """Close the oldest idle connections beyond ``keep``: what the process's files leave
        for them beside the arrivals in flight (engine/limits.py). Idle: nothing of any
        exchange is on them; counted as retired idle."""
        idle = self._idle
        if len(idle) > keep:
            drop = len(idle) - max(0, keep)
            for connection in idle[:drop]:
                self._discard(connection)
            del idle[:drop]
            self.stats.retired_idle += drop

    def close(self) -> None:
        """Close every connection, idle or in use (the run is over)."""
        for connection in [*self._idle, *self._busy]:
            self._discard(connection)
        self._idle.clear()
        self._busy.clear()

    # -- one exchange -----------------------------------------------------------------------

    def _exchange(self, call: HttpCall) -> Answer:
        data = self._wire(call)
        connection = self._take()
        self._busy.add(connection)
        reusable = False
        try:
            sock = connection.sock
            if self._tls is None:
                first = _sent_and_answered(sock, data)
            else:
                sock.sendall(data)
                first = b""
            answer, reusable = _read_response(sock, call.method == "HEAD", self._max_body, first)
            if connection.last_status == 0 and self._tls is not None:
                self.keep_session(connection.sock)
            connection.last_status = answer.status
            return answer
        except OSError as exc:
            after = _after_server_error(exc, connection.last_status)
            if after is None:
                raise
            raise after from exc
        finally:
            self._busy.discard(connection)
            if reusable:
                connection.idle_since = time.monotonic()
                self._idle.append(connection)
            else:
                self._discard(connection)

    def _take(self) -> _Connection:
        """A connection nothing has been written to since its last answer, alive as far as
        the kernel knows; a new one when none is idle."""
        idle, now = self._idle, time.monotonic()
        while idle:
            connection = idle.pop()
            if now - connection.idle_since > self._idle_s:
                # Everything under it on the stack is older still.
                self.stats.retired_idle += len(idle) + 1
                self._discard(connection)
                for old in idle:
                    self._discard(old)
                idle.clear()
                break
            if _alive(connection, self._tls is not None):
                return connection
            self.stats.reconnects += 1
            self._discard(connection)
        return self._connect()

    def open_socket(self) -> socket.socket:
        """A new connected socket to the host (TLS for https), owned by the caller and never
        pooled: a WebSocket turn's own connection, without resolving the host again."""
        sock = socket.socket(self._family, _stdlib_socket.SOCK_STREAM)
        try:
            sock.setsockopt(_stdlib_socket.IPPROTO_TCP, _stdlib_socket.TCP_NODELAY, 1)
            sock.connect(self._address)
            if self._tls is not None:
                sock = self._tls.wrap_socket(
                    sock, server_hostname=self._server_name, session=self._session
                )
                if sock.session_reused:
                    self.stats.tls_resumed += 1
                else:
                    self.stats.tls_handshakes += 1
        except BaseException:
            sock.close()
            raise
        return sock

    def keep_session(self, sock: socket.socket) -> None:
        """Keep a TLS connection's session for the next connection to resume; called once its
        first answer is read (TLS 1.3 sends its tickets after the handshake, before that
        answer). Nothing for a plain connection."""
        session = getattr(sock, "session", None)
        if session is not None:
            self._session = session

    @contextmanager
    def stream(self, call: HttpCall, socket_timeout_s: float) -> Iterator[StreamedAnswer]:
        """One exchange whose answer is read as it arrives, on a connection of its own that
        is closed when the block ends. ``socket_timeout_s`` is the socket's own backstop; the
        caller's deadline (the dispatcher's, from the send) governs. Raises ``ExchangeError``
        or an ``OSError`` as ``send`` does; the answer's reads raise the same."""
        sock = self.open_socket()
        try:
            sock.settimeout(socket_timeout_s)
            sock.sendall(self._wire(call))
            answer = StreamedAnswer(sock, self._max_body)
            self.keep_session(sock)
            yield answer
        finally:
            sock.close()

    def _connect(self) -> _Connection:
        connection = _Connection(self.open_socket())
        self.stats.opened += 1
        self.stats.open_now += 1
        return connection

    def _discard(self, connection: _Connection) -> None:
        if connection.open:
            connection.open = False
            connection.sock.close()
            self.stats.open_now -= 1

    def _wire(self, call: HttpCall) -> bytes:
        """The request's bytes, built once per HttpCall object and transport."""
        cached = call.__dict__.get("_wire")
        if cached is not None and cached[0] is self:
            return cached[1]
        head = [f"{call.method} {self._prefix}{call.path} HTTP/1.1"]
        head += [f"{name}: {value}" for name, value in call.headers.items()]
        if any(_LINE_BREAK.search(line) for line in head):
            raise ValueError(f"refused before sending: a CR, LF or NUL in {_first_line(head)}")
        lines = [(head[0] + "\r\n").encode(), self._fixed_headers]
        lines += [(line + "\r\n").encode() for line in head[1:]]
        if call.body or call.method not in ("GET", "HEAD", "DELETE", "OPTIONS"):
            lines.append(f"Content-Length: {len(call.body)}\r\n".encode())
        lines.append(b"\r\n")
        data = b"".join(lines) + call.body
        object.__setattr__(call, "_wire", (self, data))
        return data


def _after_server_error(exc: OSError, last_status: int) -> ExchangeError | None:
    """The failure named as following the platform's own 5xx on this connection, or None
    when the connection's last answer was not a 5xx or the failure is not the peer closing."""
    if last_status < 500:
        return None
    if isinstance(exc, ConnectionResetError | BrokenPipeError):
        return ExchangeError(RESET_AFTER_5XX.format(status=last_status))
    if isinstance(exc, ExchangeError) and str(exc) == CLOSED_BEFORE_STATUS:
        return ExchangeError(CLOSED_AFTER_5XX.format(status=last_status))
    return None


def _first_line(head: list[str]) -> str:
    """Which line of a request head holds a line break: the request line or a header's name,
    never its value (a header may carry a secret)."""
    bad = next(line for line in head if _LINE_BREAK.search(line))
    return "the request line" if bad is head[0] else f"header {bad.split(':', 1)[0][:40]!r}"


def _alive(connection: _Connection, tls: bool) -> bool:
    """Whether an idle connection is still open: no FIN, no reset, no unread bytes.

    A zero-timeout poll of the kernel socket first: nothing to read is what almost every
    idle connection shows, and answers without the exception a non-blocking peek raises
    on it. Only a readable one is peeked at. Unread bytes on an idle plain connection
    are a protocol error (an answer to nothing), so it is not reused either; under TLS
    they may be session tickets, which the TLS layer consumes.
    """
    if not connection.readable.poll(0):
        return True
    try:
        # The kernel socket under gevent's (its stubs, which pretend gevent's socket is the
        # stdlib's, do not declare it): gevent's own recv would wait out an EAGAIN.
        peeked = connection.sock._sock.recv(1, _PEEK)  # type: ignore[attr-defined]
    except BlockingIOError:
        return True
    except OSError as exc:
        return exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK)
    return bool(peeked) and tls


def _sent_and_answered(sock: socket.socket, data: bytes) -> bytes:
    """Write a request on a plain connection; the first bytes of its answer (b"": closed).

    On the kernel socket under gevent's, once it is readable: gevent's ``sendall`` asks
    the kernel for the send buffer's size on every call, and its ``recv`` tries first
    and waits only on the EAGAIN, which a request just written always meets (a syscall
    and an exception per request, the list read's hot path). A request the kernel does
    not take whole is finished by gevent's ``sendall``, as before.
    """
    # The kernel socket and gevent's own read watcher on it (its stubs do not declare them).
    raw = sock._sock  # type: ignore[attr-defined]
    try:
        sent = raw.send(data)
    except BlockingIOError:
        sent = 0
    if sent < len(data):
        sock.sendall(memoryview(data)[sent:])
    # The hub's own wait: the socket's goes through its timeout's machinery (a dummy timer,
    # as a pooled socket has none); the deadline is the caller's (``send``'s or the
    # dispatcher's).
    sock.hub.wait(sock._read_event)  # type: ignore[attr-defined]
    try:
        return raw.recv(READ_CHUNK)
    except BlockingIOError:
        return sock.recv(READ_CHUNK)


def _read_response(
    sock: socket.socket, head_only: bool, max_body: int, first: bytes = b""
) -> tuple[Answer, bool]:
    """The final answer, read to its end (``first``: what was read of it already), and
    whether the connection may be reused.

    Only what the workloads need: the status line, the framing (``_framing``), the
    Content-Encoding, ``Connection: close`` and HTTP/1.0, and a redirect's Location. A
    body past ``max_body``, as sent or decoded, raises.
    """
    head, rest, status, version_10 = _final_head(sock, upgrade=False, first=first)
    lowered = head.lower()
    connection = _header(lowered, b"connection")
    reusable = b"close" not in connection if connection is not None else not version_10
    location = _location(head, lowered) if 300 <= status < 400 else None
    wait = _retry_after(lowered) if status == 429 else None
    if head_only or status in _NO_BODY:
        return Answer(status, b"", location, wait), reusable
    framing = _framing(lowered)
    if (
        0 <= framing <= len(rest)
        and framing <= max_body
        and lowered.find(b"\r\ncontent-encoding:") < 0
    ):
        # The whole body came with the head, as is (a list page): nothing more to read. Bytes
        # past it are an answer to nothing, so the connection is not reused.
        return Answer(status, rest[:framing], location, wait), reusable and len(rest) == framing
    body = _Body(sock, rest, framing, max_body)
    data = b"".join(_decoded(body, lowered, max_body))
    return Answer(status, data, location, wait), reusable and body.clean


def read_upgrade(sock: socket.socket, max_body: int) -> tuple[bytes, Answer | None]:
    """The answer to a request that asked for an upgrade (a WebSocket's): a 101's head and
    what came behind it, for the protocol's own checks, and None; or b"" and any other final
    answer, read whole within ``max_body``. Interim answers are read past, as on any request."""
    head, rest, status, _ = _final_head(sock, upgrade=True)
    if status == 101:
        return head + b"\r\n\r\n" + rest, None
    lowered = head.lower()
    location = _location(head, lowered) if 300 <= status < 400 else None
    if status in _NO_BODY:
        return b"", Answer(status, b"", location)
    body = _Body(sock, rest, _framing(lowered), max_body)
    return b"", Answer(status, b"".join(_decoded(body, lowered, max_body)), location)


def _final_head(
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


def _framing(lowered_head: bytes) -> int:
    """How the body of an answer that has one is delimited: its length, CHUNKED or TO_CLOSE.

    Transfer-Encoding wins over Content-Length (RFC 9112 6.3). A Content-Length that is
    negative, not a number, or given twice with different values cannot frame a message,
    and is named; the same value twice (``5, 5``) is that value.
    """
    coding = _header(lowered_head, b"transfer-encoding")
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


def _header(lowered_head: bytes, name: bytes) -> bytes | None:
    """The (lower-cased, stripped) value of a header in a lower-cased head, None if absent."""
    start = lowered_head.find(b"\r\n" + name + b":")
    if start < 0:
        return None
    start += len(name) + 3
    end = lowered_head.find(b"\r\n", start)
    return lowered_head[start : None if end < 0 else end].strip()


def _retry_after(lowered_head: bytes) -> str | None:
    """A 429's Retry-After as sent (seconds or an HTTP date), None if absent."""
    value = _header(lowered_head, b"retry-after")
    return None if value is None else value.decode("latin-1")


def _location(head: bytes, lowered_head: bytes) -> str | None:
    """A redirect's Location as the server spelled it (a URL is case-sensitive), None if absent."""
    start = lowered_head.find(b"\r\nlocation:")
    if start < 0:
        return None
    start += len(b"\r\nlocation:")
    end = head.find(b"\r\n", start)
    return head[start : None if end < 0 else end].strip().decode("latin-1")


class _Body:
    """One answer's body as it arrives, its framing undone: the one reader of every path.

    ``pieces`` yields the body's bytes in the pieces they arrive in (a chunk's first
    bytes before its last), never asking the kernel for more than a bounded piece,
    whatever size the server announced. With a ``bound`` (a body read whole), an
    announced length past it fails at once, unread, and a counted one as soon as its
    bytes pass it; without one (a stream read line by line) the caller bounds each line.
    ``clean`` is True once the body ended exactly where the bytes read so far end.
    """

    __slots__ = ("_bound", "_buf", "_framing", "_sock", "clean")

    def __init__(self, sock: socket.socket, buf: bytes, framing: int, bound: int | None):
        self._sock, self._buf, self._framing, self._bound = sock, buf, framing, bound
        self.clean = False

    def pieces(self) -> Iterator[bytes]:
        """The body's bytes as they arrive; raises ``ExchangeError`` naming how it broke."""
        if self._framing == CHUNKED:
            return self._chunked()
        if self._framing == TO_CLOSE:
            return self._to_close()
        return self._sized(self._framing)

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


def _decoded(body: _Body, lowered_head: bytes, bound: int | None) -> Iterator[bytes]:
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
    first = _header(lowered_head, name)
    if first is None:
        return None
    values, start = [first], lowered_head.find(b"\r\n" + name + b":")
    while (start := lowered_head.find(b"\r\n" + name + b":", start + 2)) >= 0:
        values.append(_header(lowered_head[start:], name) or b"")
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
        self._raw_head, self._rest, self.status, _ = _final_head(sock, upgrade=False)
        self._head = self._raw_head.lower()
        # Body bytes handed out so far: what a broken turn says it had received.
        self.received = 0

    @property
    def location(self) -> str | None:
        """Where a redirect pointed (its ``Location``, as sent), None when absent."""
        return _location(self._raw_head, self._head)

    @property
    def content_type(self) -> str:
        """The answer's media type, lowercased, without its parameters ("" when it has none):
        a stream asked for that came back as one JSON body says so here."""
        value = _header(self._head, b"content-type") or b""
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
        if self.status in _NO_BODY:
            return
        body = _Body(self._sock, self._rest, _framing(self._head), bound)
        for piece in _decoded(body, self._head, bound):
            self.received += len(piece)
            yield piece


def classify(status: int, size: int) -> Result:
    """A 2xx is ok, a 429 is shed (the platform refused on purpose), anything else failed."""
    if 200 <= status < 300:
        return Result(status, OK, bytes=size)
    if status == 429:
        return Result(status, SHED, f"HTTP {status}", size)
    return Result(status, FAILED, f"HTTP {status}", size)
