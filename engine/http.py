"""HTTP for the workloads: a small HTTP/1.1 client that never re-sends nor blames a stale socket.

Hand-written because the client libraries put lies in the sample (geventhttpclient
re-sent a GET on a closed connection and wrote to keep-alive sockets the server had
closed; docs/internals.md, "One attempt per request"). This module is the pool and the
exchange; an answer's framing is engine/http1.py's, a stream's events engine/sse.py's.
The rules it keeps:

- once any byte may have reached the server, whatever breaks is raised, named
  (``ExchangeError``, or the OS error itself) and never re-sent; an idle connection is
  checked (a zero-timeout poll, and a peek if readable) before anything is written to
  it, and never reused once idle for ``idle_s``;
- every answer is read by engine/http1.py's one reader, bounded by the caller's
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
from urllib.parse import urlsplit

import gevent
from gevent import monkey, socket, ssl

from engine.content_coding import DEFAULT_ACCEPT, accept_problem
from engine.http1 import CLOSED_BEFORE_STATUS, READ_CHUNK, Answer, ExchangeError, read_response
from engine.sse import StreamedAnswer
from engine.trust import Trust, current

# Idle connections older than this are closed instead of reused: below the 5 s keep-alive
# timeout uvicorn, aiohttp and many proxies default to, so the server is never the one closing.
IDLE_S = 4.0
# A request made outside the dispatcher (sign-in, a dialect's follow-up) gives up after this;
# the dispatcher's own deadline, started when the request leaves, governs every arrival.
BACKSTOP_TIMEOUT_S = 60.0
# Peek flags for the liveness check: look without consuming, never block.
_PEEK = _stdlib_socket.MSG_PEEK | _stdlib_socket.MSG_DONTWAIT
# The liveness check's first look: the kernel's own poll (gevent's would go through its hub
# for a zero timeout), one for each connection, its socket registered once.
_POLL = monkey.get_original("select", "poll")
_READABLE = monkey.get_original("select", "POLLIN")
# A request head never carries these: a CR or LF in a path or header would end the line early
# and let what follows be read as another header or request (inputs are checked before load;
# this is the last line of defence for whatever a platform answered, e.g. an id or a token).
_LINE_BREAK = re.compile(r"[\r\n\0]")
# A reset, or a close before the status line, on a connection whose last answer was a 5xx.
RESET_AFTER_5XX = "connection reset after the platform's HTTP {status} on this connection"
CLOSED_AFTER_5XX = (
    "connection closed before the status line after the platform's HTTP {status} on this connection"
)


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
            answer, reusable = read_response(sock, call.method == "HEAD", self._max_body, first)
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
