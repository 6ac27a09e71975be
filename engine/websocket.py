"""A WebSocket on a connection of its own: wsproto speaks the protocol, this module the socket.

Why wsproto (sans-IO) and not a client library: a chat turn's sample must say
what failed, in words, and the client libraries say too little or do too much.
websocket-client 1.9 reports a wrong ``Sec-WebSocket-Accept``, a missing
``Upgrade`` and a wrong subprotocol all as one ``Invalid WebSocket Header``,
follows a 3xx to its Location (sending the turn again, elsewhere), and reads a
refusal's body whole, however large it says it is. wsproto validates the
handshake and frames (the library built for it, already the reference target's)
and says which check failed; here, every read is bounded and nothing is re-sent:

- the answer to the upgrade is read by the HTTP transport's own reader (interim 1xx
  read past, the body of a refusal framed and bounded as any answer's); a 101 fails as
  ``WebSocket handshake: bad Sec-WebSocket-Accept`` (or the check that failed), any
  other answer is ``Refused`` (status, bounded body, Location) for the dialect to word
  as it words any HTTP answer;
- a message past the bound fails as ``frame over 8 MiB (8388609 read)``; a frame the
  protocol forbids as ``bad frame: <wsproto's reason>``;
- pings are answered; the platform's close frame, a FIN and a reset are told apart
  (``PeerClosed``, ``SocketEnded``, ``ConnectionResetError``) for the dialect to word.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

from gevent import socket
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Event,
    Message,
    Ping,
    Request,
    TextMessage,
)
from wsproto.frame_protocol import CloseReason
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from engine.http import (
    READ_CHUNK,
    Answer,
    ExchangeError,
    HttpTransport,
    over_bound,
    read_upgrade,
)

HANDSHAKE = "WebSocket handshake"
# wsproto's reasons for a 101 it will not accept, in the header names a reader looks for.
_HANDSHAKE_WORDS = {
    "Bad accept token": "bad Sec-WebSocket-Accept",
    "Missing header, 'Connection: Upgrade'": "no Connection: Upgrade",
    "Missing header, 'Upgrade: websocket'": "no Upgrade: websocket",
    "Bad HTTP message": "bad HTTP answer",
}


class Refused(Exception):
    """The platform answered the upgrade with something other than 101: that answer."""

    def __init__(self, answer: Answer):
        super().__init__(f"{HANDSHAKE}: status {answer.status}")
        self.answer = answer


class PeerClosed(Exception):
    """The platform sent a close frame; ``code`` is its close code, None when it gave none."""

    def __init__(self, code: int | None):
        super().__init__(f"closed by the platform ({code})")
        self.code = code


class SocketEnded(Exception):
    """The connection ended (a FIN) without a close frame."""


class FrameError(Exception):
    """A message the kit will not read: past the bound, or forbidden by the protocol."""


def not_upgraded(status: int) -> str:
    """``WebSocket handshake: status 200, not 101``: an answer that neither upgrades nor refuses."""
    return f"{HANDSHAKE}: status {status}, not 101"


def _until_accepted(events: Iterator[Event]) -> Iterator[Event]:
    """The handshake's events, stopping at the acceptance (what follows it is the turn's)."""
    for event in events:
        yield event
        if isinstance(event, AcceptConnection):
            return


class WebSocket:
    """One client WebSocket, opened by ``open``; ``received`` counts the message bytes (text:
    characters) the platform sent."""

    def __init__(self, sock: socket.socket, connection: WSConnection, max_message: int):
        self._sock, self._ws, self._max = sock, connection, max_message
        # wsproto's events for the bytes fed so far, parsed lazily: a close frame that came
        # behind a token is not seen (and the stream not closing) until that token is read,
        # so a stop sent on the token still goes out, as it would on the wire.
        self._events: Iterator[Event] = iter(())
        self.received = 0

    @classmethod
    def open(
        cls, http: HttpTransport, url: str, subprotocols: list[str], timeout_s: float
    ) -> WebSocket:
        """A WebSocket to ``url`` (ws:// or wss://, on ``http``'s host) once the platform
        accepted the upgrade; raises ``Refused``, or ``ExchangeError`` naming what failed."""
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        sock = http.open_socket()
        try:
            sock.settimeout(timeout_s)
            connection = WSConnection(ConnectionType.CLIENT)
            request = Request(host=parts.netloc, target=target, subprotocols=subprotocols)
            sock.sendall(connection.send(request))
            head, refusal = read_upgrade(sock, http.max_body)
            http.keep_session(sock)
            if refusal is not None:
                raise Refused(refusal)
            websocket = cls(sock, connection, http.max_body)
            websocket._accept(head)
        except BaseException:
            sock.close()
            raise
        return websocket

    def _accept(self, head: bytes) -> None:
        """Hand the 101's head (and the frames behind it) to wsproto, which checks the
        handshake; raises ``ExchangeError`` naming the check that failed."""
        events = self._ws.events()
        try:
            self._ws.receive_data(head)
            handshake = list(_until_accepted(events))
        except RemoteProtocolError as exc:
            said = _HANDSHAKE_WORDS.get(str(exc), str(exc))
            raise ExchangeError(f"{HANDSHAKE}: {said}") from None
        if not any(isinstance(event, AcceptConnection) for event in handshake):
            raise ExchangeError(f"{HANDSHAKE}: {_HANDSHAKE_WORDS['Bad HTTP message']}")
        # Frames that came with the 101 are the turn's.
        self._events = events

    def send_text(self, text: str) -> None:
        """Send one text message."""
        self._sock.sendall(self._ws.send(TextMessage(data=text)))

    def receive(self) -> str | bytes:
        """The next whole message (text or binary), pings answered on the way; raises
        ``PeerClosed``, ``SocketEnded``, ``FrameError`` or the socket's own error."""
        parts: list = []
        size = 0
        while True:
            for event in self._events:
                if isinstance(event, Ping):
                    self._sock.sendall(self._ws.send(event.response()))
                elif isinstance(event, CloseConnection):
                    if self._ws.state is not ConnectionState.REMOTE_CLOSING:
                        # wsproto found the frame invalid (its own close, not the platform's).
                        raise FrameError(f"bad frame: {event.reason}")
                    code = None if event.code == CloseReason.NO_STATUS_RCVD else event.code
                    raise PeerClosed(code)
                elif isinstance(event, Message):
                    parts.append(event.data)
                    size += len(event.data)
                    self.received += len(event.data)
                    if size > self._max:
                        # Named by the bound, not by how far the kernel's buffers reached,
                        # so equal faults read alike (as a body's do).
                        raise FrameError(over_bound("frame", self._max, f"{self._max + 1} read"))
                    if event.message_finished:
                        empty = "" if isinstance(event, TextMessage) else b""
                        return empty.join(parts)
            data = self._sock.recv(READ_CHUNK)
            if not data:
                raise SocketEnded()
            self._ws.receive_data(data)
            self._events = self._ws.events()

    def close(self) -> None:
        """Send the close frame (or the reply to the platform's) without waiting for an answer,
        then close the socket: the turn's time is over."""
        try:
            if self._ws.state in (ConnectionState.OPEN, ConnectionState.REMOTE_CLOSING):
                self._sock.sendall(self._ws.send(CloseConnection(code=CloseReason.NORMAL_CLOSURE)))
        except (OSError, LocalProtocolError):
            pass
        finally:
            self._sock.close()
