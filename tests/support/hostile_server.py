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
every fault); ``/slow?ms=N`` answers 200 after N ms. Under ``/api/v1/`` it is an
AgenticOS for the real dialect's list reads: sign-in answers a token, and every
list read gets the next of ANSWERS, good pages among 2xx answers the contract
forbids (wrong types, an envelope one level down, a JSON array), answers of
50 MB (with Content-Length, chunked, read to close), one announcing 10 TB, and a
302 to a sign-in page. CONTROL_PORT answers any request with the counts as JSON,
and is never counted itself.
"""

from __future__ import annotations

import socket
import struct
import sys
import threading
import time
from collections import Counter

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
