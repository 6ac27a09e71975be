"""A TLS front for any loopback server, counting the handshakes it does: a proxy that ends TLS.

It is what stands before a production deployment (a load balancer, a CDN, nginx):
clients speak TLS to it, and it passes each connection's bytes, as they come,
to the plain server behind it, both ways, WebSocket upgrades included. Every
handshake is counted as ``full`` or ``resumed`` (the client offered a session
the front issued), with ``connections``; session tickets are on, as Python's and
OpenSSL's servers have them by default.

    python -m tests.support.tls_front UPSTREAM_PORT CERT KEY

prints ``PORT CONTROL_PORT`` once both listen on 127.0.0.1; CONTROL_PORT answers
the counts as JSON (tests/support/counting_server.py).
"""

from __future__ import annotations

import select
import socket
import ssl
import sys
import threading
from collections import Counter

from tests.support.counting_server import serve


class Counts:
    """Handshakes and connections, shared by the connection threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    def add(self, name: str) -> None:
        with self.lock:
            self.counts[name] += 1

    def snapshot(self) -> dict:
        with self.lock:
            return dict(self.counts)


def _pipe(front: ssl.SSLSocket, back: socket.socket) -> None:
    """Pass bytes both ways until either side ends (one thread: an SSL socket is not to be
    read and written from two at once)."""
    while True:
        ready = [front] if front.pending() else select.select([front, back], [], [])[0]
        for sock in ready:
            other = back if sock is front else front
            try:
                data = sock.recv(65536)
            except ssl.SSLWantReadError:
                continue
            if not data:
                return
            other.sendall(data)


def _serve(conn: socket.socket, context: ssl.SSLContext, upstream: int, counts: Counts) -> None:
    try:
        front = context.wrap_socket(conn, server_side=True)
    except (OSError, ssl.SSLError):
        # The client refused the certificate (as it should, where it is not trusted).
        counts.add("refused")
        conn.close()
        return
    counts.add("resumed" if front.session_reused else "full")
    counts.add("connections")
    try:
        with socket.create_connection(("127.0.0.1", upstream)) as back:
            _pipe(front, back)
    except OSError:
        pass
    finally:
        front.close()


def main() -> None:
    """Serve until killed; print both ports once listening."""
    upstream, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    counts = Counts()
    serve(lambda conn: _serve(conn, context, upstream, counts), counts.snapshot)


if __name__ == "__main__":
    sys.exit(main())
