"""The kit's own WebSocket client (engine/websocket.py) against an independent peer on 127.0.0.1.

The peer is wsproto's server side, over a real socket: it checks the client's
handshake and that every frame the client sends is masked and well formed, and
it hands back what it read, so what the client sends is judged by another
implementation of RFC 6455, not by the code under test. Frames the server
itself must never send (reserved bits, unknown opcodes, bad close codes) are
written raw, and each must fail as ``bad frame: ...``, never be read as a message.
"""

from __future__ import annotations

import struct

import gevent
import pytest
from gevent import socket
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Pong,
    Request,
    TextMessage,
)

from engine.http import HttpTransport
from engine.http1 import ExchangeError
from engine.websocket import FrameError, PeerClosed, SocketEnded, WebSocket


def _raw(first: int, payload: bytes) -> bytes:
    """One unmasked server frame with ``first`` as its first byte (FIN, RSV, opcode)."""
    n = len(payload)
    if n < 126:
        return bytes((first, n)) + payload
    return bytes((first, 126)) + struct.pack("!H", n) + payload


# What the server sends after the handshake, by the path the client asks for.
RAW = {
    "reserved": _raw(0x81 | 0x40, b"x"),
    "opcode": _raw(0x83, b"x"),
    "continuation": _raw(0x80, b"x"),
    "not_utf8": _raw(0x81, b"\xff\xfe"),
    "close_1005": _raw(0x88, struct.pack("!H", 1005)),
    "ping_fragmented": _raw(0x09, b"x"),
    "interleaved": _raw(0x01, b"a") + _raw(0x81, b"b"),
}


class Peer:
    """wsproto's server on an ephemeral port: one connection at a time, each by its path."""

    def __init__(self, extra_headers: list[tuple[bytes, bytes]] | None = None):
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        self.read: list[object] = []  # what the server read from the client, after the handshake
        self._extra = extra_headers or []
        self._greenlet = gevent.spawn(self._serve)

    def close(self) -> None:
        self._greenlet.kill()
        self._listener.close()

    def _serve(self) -> None:
        while True:
            conn, _ = self._listener.accept()
            gevent.spawn(self._one, conn)

    def _one(self, conn: socket.socket) -> None:
        ws = WSConnection(ConnectionType.SERVER)
        with conn:
            path, parts = "", []
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                ws.receive_data(data)
                for event in ws.events():
                    if isinstance(event, Request):
                        path = event.target.rsplit("/", 1)[-1]
                        chosen = "chat" if "chat" in event.subprotocols else None
                        conn.sendall(
                            ws.send(AcceptConnection(subprotocol=chosen, extra_headers=self._extra))
                        )
                        self._after_handshake(conn, ws, path)
                    elif isinstance(event, TextMessage | BytesMessage):
                        parts.append(event.data)
                        if event.message_finished:
                            message = "".join(parts) if isinstance(event, TextMessage) else parts
                            parts.clear()
                            self.read.append(message)
                            reply = f"got {len(message)}"
                            conn.sendall(ws.send(TextMessage(data=reply)))
                    elif isinstance(event, Pong):
                        self.read.append(("pong", bytes(event.payload)))
                    elif isinstance(event, CloseConnection):
                        self.read.append(("close", event.code))
                        return

    @staticmethod
    def _after_handshake(conn: socket.socket, ws: WSConnection, path: str) -> None:
        if path in RAW:
            conn.sendall(RAW[path])
        elif path == "story":
            # A text message in three frames split inside a two-byte character, a ping
            # between them, then a binary message and the platform's close.
            conn.sendall(
                _raw(0x01, b"hel")
                + _raw(0x89, b"are you there")
                + _raw(0x00, "lo \u00e9".encode()[:-1])
                + _raw(0x80, "lo \u00e9".encode()[-1:])
                + _raw(0x82, bytes(range(200)))
                + _raw(0x88, struct.pack("!H", 1011) + b"model failed")
            )


@pytest.fixture
def peer():
    server = Peer()
    yield server
    server.close()


def _open(port: int, path: str, subprotocols: list[str] | None = None) -> WebSocket:
    http = HttpTransport(f"http://127.0.0.1:{port}", max_body=1 << 20)
    return WebSocket.open(http, f"ws://127.0.0.1:{port}/ws/{path}", subprotocols or ["chat"], 10.0)


def test_messages_both_ways_read_as_an_independent_peer_reads_them(peer):
    ws = _open(peer.port, "story")
    assert ws.receive() == "hello \u00e9"
    assert ws.receive() == bytes(range(200))
    with pytest.raises(PeerClosed) as closed:
        ws.receive()
    assert closed.value.code == 1011
    assert ws.received == len("hello \u00e9") + 200
    ws.close()
    ws = _open(peer.port, "echo")
    # Lengths in each of the three header forms: 7 bits, 16 bits, 64 bits.
    for text in ("short", "\u00fc" * 200, "x" * 70_000):
        ws.send_text(text)
        assert ws.receive() == f"got {len(text)}"
    ws.close()
    gevent.sleep(0.2)
    # The ping answered with its payload, the platform's close answered by the client's own,
    # then the echo connection's three messages and its close.
    assert peer.read == [
        ("pong", b"are you there"),
        ("close", 1000),
        "short",
        "\u00fc" * 200,
        "x" * 70_000,
        ("close", 1000),
    ]


@pytest.mark.parametrize("path", sorted(RAW))
def test_a_frame_the_protocol_forbids_fails_as_a_bad_frame(peer, path):
    ws = _open(peer.port, path)
    with pytest.raises(FrameError) as broken:
        ws.receive()
    assert str(broken.value).startswith("bad frame: "), broken.value
    ws.close()


def test_a_connection_that_ends_without_a_close_frame_is_told_apart(peer):
    ws = _open(peer.port, "echo")
    ws._sock.shutdown(socket.SHUT_RD)  # what a FIN from the platform looks like to the reader
    with pytest.raises(SocketEnded):
        ws.receive()
    ws.close()


@pytest.mark.parametrize(
    ("subprotocols", "extra", "said"),
    [
        (["other"], [(b"Sec-WebSocket-Protocol", b"chat")], "unrecognized subprotocol chat"),
        (["chat"], [(b"Sec-WebSocket-Extensions", b"permessage-deflate")], "unrequested extension"),
    ],
)
def test_a_101_the_client_did_not_ask_for_is_named(subprotocols, extra, said):
    server = Peer(extra_headers=extra)
    try:
        with pytest.raises(ExchangeError) as refused:
            _open(server.port, "echo", subprotocols)
        assert refused.value.detail.startswith(f"WebSocket handshake: {said}"), refused.value
    finally:
        server.close()
