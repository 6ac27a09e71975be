"""A WebSocket on a connection of its own: RFC 6455's client side, in this module, on the socket.

Why not a client library: a chat turn's sample must say what failed, in words,
and the client libraries say too little or do too much. websocket-client 1.9
reports a wrong ``Sec-WebSocket-Accept``, a missing ``Upgrade`` and a wrong
subprotocol all as one ``Invalid WebSocket Header``, follows a 3xx to its Location
(sending the turn again, elsewhere), and reads a refusal's body whole, however
large it says it is. Why not wsproto (sans-IO, which this module used until issue
33): it cost about 470 us of the 800 us of CPU a turn took (its h11 handshake
210 us, 45 us a frame; measured in-process, no sockets), which at 10,000 open
turns is the load process's own scheduling showing up in every first token. The
client side of the protocol without extensions is small: the handshake's four
checks and a frame header. Every read is bounded and nothing is re-sent:

- the answer to the upgrade is read by the HTTP transport's own reader (interim 1xx
  read past, the body of a refusal framed and bounded as any answer's); a 101 fails as
  ``WebSocket handshake: bad Sec-WebSocket-Accept`` (or the check that failed), any
  other answer is ``Refused`` (status, bounded body, Location) for the dialect to word
  as it words any HTTP answer;
- a message past the bound fails as ``frame over 8 MiB (8388609 read)``, known from its
  frame's header, before its payload is read; a frame the protocol forbids (a masked or
  reserved-bit frame, an unknown opcode, a long or fragmented control frame, a
  continuation out of place, text that is not UTF-8, a bad close code) as
  ``bad frame: <the rule>``;
- pings are answered; the platform's close frame, a FIN and a reset are told apart
  (``PeerClosed``, ``SocketEnded``, ``ConnectionResetError``) for the dialect to word.
"""

from __future__ import annotations

import base64
import codecs
import hashlib
import os
import struct
from urllib.parse import urlsplit

from gevent import socket

from engine.http import HttpTransport
from engine.http1 import READ_CHUNK, Answer, ExchangeError, over_bound, read_upgrade

HANDSHAKE = "WebSocket handshake"
BAD_HTTP = "bad HTTP answer"
# RFC 6455 1.3: the accept token is the key's SHA-1 with this GUID, base64.
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_CONTINUATION, _TEXT, _BINARY, _CLOSE, _PING, _PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
_OPCODES = frozenset((_CONTINUATION, _TEXT, _BINARY, _CLOSE, _PING, _PONG))
NORMAL_CLOSURE = 1000
# Close codes a peer may send (RFC 6455 7.4.1, IANA registry): 1004-1006 and 1015 are never
# sent on the wire, 1016-2999 are reserved for the protocol, 3000-4999 are applications'.
_SENDABLE_CLOSE = frozenset((*range(1000, 1004), *range(1007, 1015)))
_LENGTH_16, _LENGTH_64 = struct.Struct("!H"), struct.Struct("!Q")


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


def upgrade_request(host: str, target: str, subprotocols: list[str]) -> tuple[bytes, bytes]:
    """The upgrade request's bytes (RFC 6455 4.1) and the accept token its 101 must carry."""
    key = base64.b64encode(os.urandom(16))
    lines = [
        f"GET {target} HTTP/1.1",
        f"Host: {host}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key.decode()}",
        "Sec-WebSocket-Version: 13",
    ]
    if subprotocols:
        lines.append(f"Sec-WebSocket-Protocol: {', '.join(subprotocols)}")
    accept = base64.b64encode(hashlib.sha1(key + _GUID).digest())
    return ("\r\n".join(lines) + "\r\n\r\n").encode(), accept


def check_accepted(head: bytes, accept: bytes, subprotocols: list[str]) -> str | None:
    """What is wrong with a 101's head (status line and headers, no blank line) for an
    upgrade offered ``subprotocols`` with the key behind ``accept``; None when nothing is."""
    fields: dict[bytes, bytes] = {}
    for line in head.split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            return BAD_HTTP
        fields[name.lower()] = value.strip()
    connection = fields.get(b"connection")
    if connection is None or not any(
        token.strip().lower() == b"upgrade" for token in connection.split(b",")
    ):
        return "no Connection: Upgrade"
    if fields.get(b"upgrade", b"").lower() != b"websocket":
        return "no Upgrade: websocket"
    if fields.get(b"sec-websocket-accept") != accept:
        return "bad Sec-WebSocket-Accept"
    chosen = fields.get(b"sec-websocket-protocol")
    if chosen is not None and chosen.decode("latin-1") not in subprotocols:
        return f"unrecognized subprotocol {chosen.decode('latin-1')}"
    if fields.get(b"sec-websocket-extensions"):
        # None was offered, so none may be in force (RFC 6455 9.1).
        return f"unrequested extension {fields[b'sec-websocket-extensions'].decode('latin-1')}"
    return None


def client_frame(opcode: int, payload: bytes) -> bytes:
    """One final frame as a client sends it: masked (RFC 6455 5.3), with a fresh key."""
    n = len(payload)
    if n < 126:
        header = bytes((0x80 | opcode, 0x80 | n))
    elif n < 1 << 16:
        header = bytes((0x80 | opcode, 0x80 | 126)) + _LENGTH_16.pack(n)
    else:
        header = bytes((0x80 | opcode, 0x80 | 127)) + _LENGTH_64.pack(n)
    mask = os.urandom(4)
    if not n:
        return header + mask
    # XOR as one big integer: a loop over the payload's bytes would cost a microsecond each.
    key = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
    return header + mask + (int.from_bytes(payload, "big") ^ key).to_bytes(n, "big")


class WebSocket:
    """One client WebSocket, opened by ``open``; ``received`` counts the message bytes (text:
    characters) the platform sent."""

    def __init__(self, sock: socket.socket, rest: bytes, max_message: int):
        self._sock, self._max = sock, max_message
        # Bytes read and not yet parsed: frames are parsed one at a time as they are asked
        # for, so a close frame that came behind a token is not seen (and the stream not
        # closing) until that token is read, and a stop sent on the token still goes out.
        self._buf = bytearray(rest)
        self._closing = False  # a close frame has gone (ours, or our reply to the platform's)
        self.received = 0

    @classmethod
    def open(
        cls, http: HttpTransport, url: str, subprotocols: list[str], timeout_s: float
    ) -> WebSocket:
        """A WebSocket to ``url`` (ws:// or wss://, on ``http``'s host) once the platform
        accepted the upgrade; raises ``Refused``, or ``ExchangeError`` naming what failed."""
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        request, accept = upgrade_request(parts.netloc, target, subprotocols)
        sock = http.open_socket()
        try:
            sock.settimeout(timeout_s)
            sock.sendall(request)
            answer, refusal = read_upgrade(sock, http.max_body)
            http.keep_session(sock)
            if refusal is not None:
                raise Refused(refusal)
            head, _, rest = answer.partition(b"\r\n\r\n")
            wrong = check_accepted(head, accept, subprotocols)
            if wrong is not None:
                raise ExchangeError(f"{HANDSHAKE}: {wrong}")
        except BaseException:
            sock.close()
            raise
        # Frames that came with the 101 are the turn's.
        return cls(sock, rest, http.max_body)

    def send_text(self, text: str) -> None:
        """Send one text message."""
        self._sock.sendall(client_frame(_TEXT, text.encode()))

    def receive(self) -> str | bytes:
        """The next whole message (text or binary), pings answered on the way; raises
        ``PeerClosed``, ``SocketEnded``, ``FrameError`` or the socket's own error."""
        parts: list[bytes] = []  # a binary message's frames so far
        pieces: list[str] = []  # a text message's, decoded as they come
        size, kind = 0, -1
        decoder = None
        while True:
            fin, opcode, payload = self._frame(size)
            if opcode >= _CLOSE:
                if opcode == _PING:
                    if not self._closing:
                        self._sock.sendall(client_frame(_PONG, payload))
                elif opcode == _CLOSE:
                    raise PeerClosed(self._close_code(payload))
                continue
            if (opcode == _CONTINUATION) != (kind >= 0):
                raise FrameError(
                    "bad frame: continuation frame without a message"
                    if opcode == _CONTINUATION
                    else "bad frame: new message before the last one finished"
                )
            if kind < 0:
                kind = opcode
            size += len(payload)
            if kind == _BINARY:
                self.received += len(payload)
                parts.append(payload)
                if fin:
                    return b"".join(parts)
                continue
            if fin and decoder is None:
                # The common case: a whole text message in one frame.
                text = self._text(payload)
                self.received += len(text)
                return text
            if decoder is None:
                decoder = codecs.getincrementaldecoder("utf-8")()
            try:
                piece = decoder.decode(payload, final=fin)
            except UnicodeDecodeError:
                raise FrameError("bad frame: text is not UTF-8") from None
            self.received += len(piece)
            pieces.append(piece)
            if fin:
                return "".join(pieces)

    @staticmethod
    def _text(payload: bytes) -> str:
        try:
            return payload.decode()
        except UnicodeDecodeError:
            raise FrameError("bad frame: text is not UTF-8") from None

    def _frame(self, size: int) -> tuple[bool, int, bytes]:
        """The next frame's FIN bit, opcode and payload, read off the socket as far as needed;
        ``size``: the message bytes so far, held with the frame's own to the bound."""
        buf = self._buf
        while len(buf) < 2:
            self._more()
        first, second = buf[0], buf[1]
        if first & 0x70:
            raise FrameError("bad frame: reserved bits set with no extension agreed")
        if second & 0x80:
            raise FrameError("bad frame: masked frame from the server")
        opcode, length, at = first & 0x0F, second & 0x7F, 2
        if opcode not in _OPCODES:
            raise FrameError(f"bad frame: unknown opcode {opcode}")
        if opcode >= _CLOSE and (length > 125 or not first & 0x80):
            raise FrameError("bad frame: control frame fragmented or over 125 bytes")
        if length >= 126:
            at = 4 if length == 126 else 10
            while len(buf) < at:
                self._more()
            if length == 126:
                length = _LENGTH_16.unpack_from(buf, 2)[0]
            else:
                length = _LENGTH_64.unpack_from(buf, 2)[0]
                if length >> 63:
                    raise FrameError("bad frame: length over 2**63")
        if opcode < _CLOSE and size + length > self._max:
            # Named by the bound, not by how far the frame said it reached, so equal faults
            # read alike (as a body's do).
            raise FrameError(over_bound("frame", self._max, f"{self._max + 1} read"))
        end = at + length
        while len(buf) < end:
            self._more()
        payload = bytes(buf[at:end])
        del buf[:end]
        return bool(first & 0x80), opcode, payload

    def _more(self) -> None:
        data = self._sock.recv(READ_CHUNK)
        if not data:
            raise SocketEnded()
        self._buf += data

    def _close_code(self, payload: bytes) -> int | None:
        """The platform's close code (None when it gave none); a malformed close is a bad frame."""
        if not payload:
            return None
        if len(payload) == 1:
            raise FrameError("bad frame: close frame of one byte")
        code = _LENGTH_16.unpack_from(payload)[0]
        if code not in _SENDABLE_CLOSE and not 3000 <= code <= 4999:
            raise FrameError(f"bad frame: close code {code}")
        try:
            payload[2:].decode()
        except UnicodeDecodeError:
            raise FrameError("bad frame: close reason is not UTF-8") from None
        return code

    def close(self) -> None:
        """Send the close frame (or the reply to the platform's) without waiting for an answer,
        then close the socket: the turn's time is over."""
        try:
            if not self._closing:
                self._closing = True
                self._sock.sendall(client_frame(_CLOSE, _LENGTH_16.pack(NORMAL_CLOSURE)))
        except OSError:
            pass
        finally:
            self._sock.close()
