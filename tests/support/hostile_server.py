"""A misbehaving HTTP/1.1 server for the transport's tests, counting every fault it injects.

It resets connections mid-request, closes them before the status line, answers a
bad status line, answers 500 and then resets the next request on that keep-alive
connection (as uvicorn closes one after an unhandled 500 without announcing
``Connection: close``), and closes keep-alive connections idle for IDLE_CLOSE_S, which
is not a fault: a client must replace such a socket before writing to it. The
server decides, so the test can compare the failures the client recorded with
the faults the server says it injected, one for one.

    python -m tests.support.hostile_server

prints ``PORT CONTROL_PORT`` once both listen on 127.0.0.1. Paths on PORT:
``/ok`` answers 200; ``/mixed`` cycles through MIXED (answers of every framing and
every fault); ``/slow?ms=N`` answers 200 after N ms; ``/case/NAME`` answers the
bytes CASES names (framing a client must read, or must name as broken: lengths
negative or twice, heads over the bound, interim 1xx, chunks that lie, a head that
dribbles in) or CODED names (bodies under every Content-Encoding, bombs among them),
and ``/ws/NAME`` answers a WebSocket upgrade as WS_CASES says. Under
``/api/v1/`` it is an AgenticOS for the real dialect's list reads: sign-in answers a
token, and every list read gets the next of ANSWERS, good pages among 2xx answers
the contract forbids (wrong types, an envelope one level down, a JSON array),
answers of 50 MB (with Content-Length, chunked, read to close), one announcing
10 TB, and a 302 to a sign-in page. CONTROL_PORT answers any request with the counts as JSON,
and is never counted itself.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import socket
import struct
import sys
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable

import brotli

from tests.support.counting_server import serve

# Keep-alive connections idle this long are closed by the server (gracefully, with FIN).
IDLE_CLOSE_S = 1.0
BODY = b'{"items": [], "total": 0}'
# /mixed answers in this order, round and round: three faults among good answers
# of each framing the client must read (length, chunked, Connection: close).
MIXED = (
    "length",
    "reset",
    "chunked",
    "length",
    "close_before_status",
    "length",
    "close_after",
    "bad_status",
    "length",
    "error_500",
    "chunked",
)
# "reset_after_500" is the request that next arrives on a connection answered "error_500".
FAULTS = ("reset", "close_before_status", "bad_status", "error_500", "reset_after_500")

# List reads under /api/v1/ get these, round and round: good pages among answers to refuse.
ANSWERS = (
    "page",
    "wrong_types",
    "page",
    "oversized_length",
    "nested",
    "page",
    "oversized_chunked",
    "array",
    "page",
    "huge_length",
    "total_text",
    "page",
    "oversized_close",
    "redirect",
)
# The 2xx bodies the contract forbids, by kind.
MISSHAPEN = {
    "wrong_types": b'{"items": "none", "total": "many"}',
    "nested": b'{"data": {"items": [], "total": 0}}',
    "array": b'[{"items": [], "total": 0}]',
    "total_text": b'{"items": [], "total": "3"}',
}
# How big an oversized answer is, and the Content-Length the huge one announces.
OVERSIZED = 50_000_000
HUGE = 10_000_000_000_000
SIGN_IN = "https://sso.example/login?next=/api/v1/agents"
ANSWER_FAULTS = (*MISSHAPEN, "oversized_length", "oversized_chunked", "oversized_close")
ANSWER_FAULTS += ("huge_length", "redirect")


class Counts:
    """What the server did, shared by its connection threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.mixed = 0
        self.answers = 0

    def add(self, name: str) -> None:
        with self.lock:
            self.counts[name] += 1

    def next_mixed(self) -> str:
        with self.lock:
            kind = MIXED[self.mixed % len(MIXED)]
            self.mixed += 1
            return kind

    def next_answer(self) -> str:
        with self.lock:
            kind = ANSWERS[self.answers % len(ANSWERS)]
            self.answers += 1
            return kind

    def snapshot(self) -> dict:
        with self.lock:
            counts = dict(self.counts)
        counts["faults"] = sum(counts.get(f, 0) for f in FAULTS)
        counts["answer_faults"] = sum(counts.get(f, 0) for f in ANSWER_FAULTS)
        return counts


def _read_request(conn: socket.socket, buf: bytes) -> tuple[bytes | None, bytes]:
    """One request's head (body skipped by Content-Length), and what followed it."""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return None, buf
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        rest += chunk
    return head, rest[length:]


def _pending(conn: socket.socket) -> bool:
    conn.setblocking(False)
    try:
        return bool(conn.recv(1, socket.MSG_PEEK))
    except BlockingIOError:
        return False
    finally:
        conn.setblocking(True)


def _answer(kind: str) -> bytes:
    if kind == "chunked":
        head, tail = BODY[:10], BODY[10:]
        chunks = b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(head), head, len(tail), tail)
        return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks
    close = b"Connection: close\r\n" if kind == "close_after" else b""
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(BODY), close, BODY)


# /case/NAME: what the server sends, as parts (a float between them: a pause in seconds);
# the connection stays open for the next request unless the name is in CLOSES.
_CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
_LONG_HEADER = b"X-Filler: " + b"f" * 70_000 + b"\r\n"
CASES: dict[str, tuple] = {
    "length_negative": (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",),
    "length_not_a_number": (b"HTTP/1.1 200 OK\r\nContent-Length: 2_5\r\n\r\n" + BODY,),
    "length_twice": (
        b"HTTP/1.1 200 OK\r\nContent-Length: 25\r\nContent-Length: 30\r\n\r\n" + BODY,
    ),
    "length_twice_alike": (
        b"HTTP/1.1 200 OK\r\nContent-Length: 25\r\nContent-Length: 25, 25\r\n\r\n" + BODY,
    ),
    "head_over_bound": (b"HTTP/1.1 200 OK\r\n" + _LONG_HEADER + b"Content-Length: 0\r\n\r\n",),
    "interim_100": (b"HTTP/1.1 100 Continue\r\n\r\n", _answer("length")),
    "interim_103_twice": (
        b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
        b"HTTP/1.1 103 Early Hints\r\nLink: </b.js>; rel=preload\r\n\r\n" + _answer("length"),
    ),
    "unasked_101": (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",),
    "chunk_cut_short": (_CHUNKED + b"\r\n20\r\n" + BODY,),
    "chunk_longer_than_said": (_CHUNKED + b"\r\n5\r\n" + BODY + b"\r\n0\r\n\r\n",),
    "chunk_size_signed": (_CHUNKED + b"\r\n+19\r\n" + BODY + b"\r\n0\r\n\r\n",),
    "chunk_extensions_trailers": (
        _CHUNKED + b"\r\n"
        b'a;name=value;quoted="x;y"\r\n' + BODY[:10] + b"\r\n"
        b"f ; last\r\n" + BODY[10:] + b"\r\n"
        b"0\r\nX-Checksum: 1234\r\nX-Other: 5\r\n\r\n",
    ),
    "chunked_and_length": (
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"19\r\n" + BODY + b"\r\n0\r\n\r\n",
    ),
    "transfer_gzip": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",),
    # An answer, then, once the client has read it, bytes no request asked for: an idle
    # connection with something unread on it.
    "stray_after_answer": (_answer("length"), 0.2, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
    # The head a byte at a time, 2 ms apart (well within any timeout), then the body.
    "dribbled_head": (
        *(part for byte in _answer("length")[: -len(BODY)] for part in (bytes([byte]), 0.002)),
        BODY,
    ),
}
CLOSES = frozenset({"chunk_cut_short", "unasked_101", "head_over_bound"})
MiB = 1 << 20
# The decoded size of the gzip bomb (about 1 MB sent), and of the br one.
GZIP_BOMB = 1 << 30
BR_BOMB = 64 * MiB


def _coded(coding: bytes, body: bytes, chunked: bool = False) -> bytes:
    """A 200 whose body, as sent, is ``body`` under Content-Encoding ``coding``."""
    if chunked:
        framing = b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    else:
        framing = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    return b"HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\n%s" % (coding, framing)


@functools.cache
def gzip_bomb() -> bytes:
    """gzip of GZIP_BOMB zero bytes, about 1 MB, built in a fraction of a second: the same
    full-flushed deflate block of 1 MiB of zeros, again and again, then gzip's trailer."""
    zeros, blocks = bytes(MiB), GZIP_BOMB // MiB
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(blocks):
        crc = zlib.crc32(zeros, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = struct.pack("<II", crc, GZIP_BOMB & 0xFFFFFFFF)
    return header + block * blocks + deflate.flush() + trailer


# Coded answers (built when first asked for): each must decode to BODY, or be named.
CODED: dict[str, Callable[[], bytes]] = {
    "gzip": lambda: _coded(b"gzip", gzip.compress(BODY)),
    "gzip_chunked": lambda: _coded(b"gzip", gzip.compress(BODY), chunked=True),
    "x_gzip": lambda: _coded(b"x-gzip", gzip.compress(BODY)),
    "gzip_members": lambda: _coded(b"gzip", gzip.compress(BODY[:9]) + gzip.compress(BODY[9:])),
    "gzip_twice": lambda: _coded(b"gzip, gzip", gzip.compress(gzip.compress(BODY))),
    "gzip_two_lines": lambda: _coded(
        b"gzip\r\nContent-Encoding: gzip", gzip.compress(gzip.compress(BODY))
    ),
    "deflate": lambda: _coded(b"deflate", zlib.compress(BODY)),
    "deflate_raw": lambda: _coded(b"deflate", zlib.compress(BODY, wbits=-15)),
    "br": lambda: _coded(b"br", brotli.compress(BODY)),
    "gzip_bomb": lambda: _coded(b"gzip", gzip_bomb()),
    "gzip_bomb_two_layers": lambda: _coded(b"gzip, gzip", gzip.compress(gzip_bomb())),
    "br_bomb": lambda: _coded(b"br", brotli.compress(bytes(BR_BOMB), quality=5)),
    "unknown_coding": lambda: _coded(b"compress", BODY),
    "gzip_cut_short": lambda: _coded(b"gzip", gzip.compress(BODY)[:-9]),
    "gzip_not_gzip": lambda: _coded(b"gzip", BODY),
}
# An event stream gzip-encoded as a proxy sends it, flushed after each event: the first
# event's bytes, then nothing until the client goes (it must not wait for the stream's end).
_FLUSHED = zlib.compressobj(6, zlib.DEFLATED, 31)
_FIRST_EVENT = _FLUSHED.compress(b"event: token\ndata: one\n\n") + _FLUSHED.flush(zlib.Z_SYNC_FLUSH)
CASES["gzip_events_held"] = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(_FIRST_EVENT), _FIRST_EVENT),
    None,
)
# /ws/NAME: a WebSocket upgrade answered with interim answers first, a 20 MB frame, a frame
# masked (which only a client may send), a close with 1011, or a refusal no body can frame.
WS_CASES = ("interim", "big_frame", "masked", "close_1011", "refused_negative")
WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
BIG_FRAME = 20_000_000


def _ws_frame(opcode: int, payload: bytes, mask: bytes = b"") -> bytes:
    """One final server frame (RFC 6455 5.2), masked with ``mask`` when one is given."""
    size = len(payload)
    if size < 126:
        length = bytes([size])
    elif size < 1 << 16:
        length = b"\x7e" + struct.pack("!H", size)
    else:
        length = b"\x7f" + struct.pack("!Q", size)
    if mask:
        length = bytes([length[0] | 0x80]) + length[1:]
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes([0x80 | opcode]) + length + mask + payload


def _serve_ws(conn: socket.socket, kind: str, head: bytes) -> None:
    """Answer one upgrade as WS_CASES says, then wait for the client to go."""
    if kind == "refused_negative":
        conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: -7\r\n\r\n")
        _until_client_goes(conn)
        return
    key = next(
        line.split(b":", 1)[1].strip()
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"sec-websocket-key:")
    )
    accept = base64.b64encode(hashlib.sha1(key + WS_GUID).digest())
    if kind == "interim":
        conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\n\r\n")
    conn.sendall(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
    )
    try:
        if kind == "big_frame":
            conn.sendall(_ws_frame(0x1, b"x" * BIG_FRAME))
        elif kind == "masked":
            conn.sendall(_ws_frame(0x1, b"masked", mask=b"\x01\x02\x03\x04"))
        else:
            conn.sendall(_ws_frame(0x1, b"hello"))
            if kind == "close_1011":
                conn.sendall(_ws_frame(0x8, struct.pack("!H", 1011) + b"model failed"))
            else:
                conn.sendall(_ws_frame(0x8, struct.pack("!H", 1000)))
    except OSError:
        return  # the client dropped it, as it should
    _until_client_goes(conn)


def _asked_coding(head: bytes) -> str:
    """The request's Accept-Encoding as sent, or "nothing"."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"accept-encoding":
            return value.strip().decode("latin-1")
    return "nothing"


def _serve_case(conn: socket.socket, name: str, counts: Counts) -> bool:
    """Send CASES[name], counted as ``sent NAME`` once all of it is sent; False when the
    connection must not be reused."""
    for part in (CODED[name](),) if name in CODED else CASES[name]:
        if isinstance(part, float):
            time.sleep(part)
        elif part is None:
            _until_client_goes(conn)
            return False
        else:
            conn.sendall(part)
    counts.add(f"sent {name}")
    return name not in CLOSES


def _reset(conn: socket.socket) -> None:
    """Close with a reset (RST), not a FIN."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _serve_list_read(conn: socket.socket, kind: str) -> bool:
    """Answer a list read as ANSWERS says; False when the connection must not be reused."""
    if kind == "page":
        conn.sendall(_answer("length"))
    elif kind in MISSHAPEN:
        body = MISSHAPEN[kind]
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    elif kind == "redirect":
        head = f"HTTP/1.1 302 Found\r\nLocation: {SIGN_IN}\r\nContent-Length: 0\r\n\r\n"
        conn.sendall(head.encode())
    elif kind == "huge_length":
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n{" % HUGE)
        _until_client_goes(conn)
        return False
    else:
        _send_oversized(conn, kind)
        return False
    return True


def _send_oversized(conn: socket.socket, kind: str) -> None:
    """50 MB of a JSON list page, framed as ``kind`` says, for as long as the client reads."""
    piece = b" " * (1 << 20)
    if kind == "oversized_length":
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % OVERSIZED)
    elif kind == "oversized_chunked":
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        piece = b"%x\r\n%s\r\n" % (len(piece), piece)
    else:
        conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
    try:
        for _ in range(OVERSIZED >> 20):
            conn.sendall(piece)
        if kind == "oversized_chunked":
            conn.sendall(b"0\r\n\r\n")
    except OSError:
        return  # the client dropped it, as it should


def _until_client_goes(conn: socket.socket) -> None:
    try:
        while conn.recv(65536):
            pass
    except OSError:
        return


def _serve(conn: socket.socket, counts: Counts) -> None:
    buf = b""
    after_500 = False
    try:
        while True:
            conn.settimeout(IDLE_CLOSE_S if not buf else None)
            try:
                head, buf = _read_request(conn, buf)
            except TimeoutError:
                if _pending(conn):
                    continue  # a request arrived as the idle time ran out: serve it
                counts.add("idle_closed")
                conn.shutdown(socket.SHUT_RDWR)
                return
            if head is None:
                return
            if after_500:
                counts.add("reset_after_500")
                _reset(conn)
                return
            target = head.split(b" ", 2)[1]
            if target.startswith(b"/case/"):
                name = target[len(b"/case/") :].decode()
                counts.add(name)
                counts.add(f"asked {_asked_coding(head)}")
                if _serve_case(conn, name, counts):
                    continue
                return
            if target.startswith(b"/ws/"):
                _serve_ws(conn, target[len(b"/ws/") :].decode(), head)
                return
            if target == b"/api/v1/auth/login":
                conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 21\r\n\r\n{"access_token": "t"}')
                continue
            if target.startswith(b"/api/v1/"):
                kind = counts.next_answer()
                counts.add(kind)
                if _serve_list_read(conn, kind):
                    continue
                return
            kind = counts.next_mixed() if target.startswith(b"/mixed") else "length"
            if target.startswith(b"/slow"):
                time.sleep(int(target.split(b"ms=")[1]) / 1000)
            counts.add(kind)
            if kind == "reset":
                _reset(conn)
                return
            if kind == "error_500":
                conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
                after_500 = True
                continue
            if kind == "close_before_status":
                conn.shutdown(socket.SHUT_RDWR)
                return
            if kind == "bad_status":
                conn.sendall(b"HTTP/1.1 OK maybe\r\nContent-Length: 0\r\n\r\n")
                return
            conn.sendall(_answer(kind))
            if kind == "close_after":
                return
    except OSError:
        counts.add("server_error")
    finally:
        conn.close()


def main() -> None:
    """Serve until killed; print both ports once listening."""
    counts = Counts()
    serve(lambda conn: _serve(conn, counts), counts.snapshot)


if __name__ == "__main__":
    sys.exit(main())
