"""``python -m tests.support.event_relay HOST:PORT``: a relay in front of opencode that breaks
its event streams on cue.

Every connection is relayed byte for byte to the real server at HOST:PORT. One whose first
request is ``GET /event`` is an event subscription: counted (``subscriptions``) and kept
while open (``open``), so that a request to the control port can break every one then open:
``/reset`` ends each with an RST to the client (``reset``), ``/close`` with a FIN in the
middle of its chunked body (``closed``); ``/hold`` has the next subscription held unanswered
(``held``) until ``/refuse`` answers it 503 in opencode's error shape (``refused``), so a
test can have many turns wait on one subscription that is then refused. Any control
request answers the counts after acting on its path. The real server serves everything
else, so a test sees opencode's own turns go on while the stream they were read on breaks.

Prints ``PORT CONTROL_PORT`` once both listen on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import struct
import sys
import threading
from collections import Counter

from tests.support.counting_server import serve

CHUNK = 65536
# What the relay answers a refused subscription with: opencode's error shape.
REFUSED_BODY = json.dumps({"name": "UnknownError", "data": {"message": "relay refused"}}).encode()
REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(REFUSED_BODY), REFUSED_BODY)
)


class Relay:
    """The open subscriptions, what to do with the next, and the counts."""

    def __init__(self, upstream: tuple[str, int]):
        self.upstream = upstream
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.streams: dict[socket.socket, socket.socket] = {}
        self.hold_next = False
        self.held: list[socket.socket] = []

    def snapshot(self) -> dict:
        with self.lock:
            return {**self.counts, "open": len(self.streams)}

    def act(self, path: str) -> None:
        """Break every open subscription (``/reset``, ``/close``), hold the next (``/hold``)
        or refuse the one held (``/refuse``)."""
        with self.lock:
            if path == "/hold":
                self.hold_next = True
                return
            if path == "/refuse":
                held, self.held = self.held, []
                self.counts["refused"] += len(held)
                for client in held:
                    with client:
                        client.sendall(REFUSED)
                return
            if path not in ("/reset", "/close"):
                return
            streams, self.streams = self.streams, {}
            self.counts["reset" if path == "/reset" else "closed"] += len(streams)
        for client, upstream in streams.items():
            if path == "/reset":
                # Linger 0: close sends an RST instead of a FIN.
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                client.shutdown(socket.SHUT_RDWR)
            client.close()
            # Wakes the thread relaying it (unless the client's end already has: it then closed
            # this socket), and opencode drops the subscriber.
            with contextlib.suppress(OSError):
                upstream.shutdown(socket.SHUT_RDWR)

    def handle(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n" not in head and (more := client.recv(CHUNK)):
            head += more
        if head.startswith((b"GET /event ", b"GET /event?")):
            self._subscription(client, head)
        else:
            self._relay(client, head)

    def _subscription(self, client: socket.socket, head: bytes) -> None:
        with self.lock:
            self.counts["subscriptions"] += 1
            if self.hold_next:
                self.hold_next = False
                self.counts["held"] += 1
                self.held.append(client)
                return
        upstream = socket.create_connection(self.upstream)
        with self.lock:
            self.streams[client] = upstream
        upstream.sendall(head)
        with upstream:
            _stream(upstream, client)
        with self.lock:
            if self.streams.pop(client, None) is not None:
                client.close()

    def _relay(self, client: socket.socket, head: bytes) -> None:
        with client, socket.create_connection(self.upstream) as upstream:
            upstream.sendall(head)
            back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
            back.start()
            _pump(client, upstream)
            back.join()


def _stream(upstream: socket.socket, client: socket.socket) -> None:
    """Copy a subscription's events to its client until either side ends it or breaks (the
    client sends nothing after its request but its close, which ends it here too)."""
    with contextlib.suppress(OSError):
        while True:
            readable, _, _ = select.select([upstream, client], [], [])
            if client in readable and not client.recv(CHUNK):
                return
            if upstream in readable:
                if not (data := upstream.recv(CHUNK)):
                    return
                client.sendall(data)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy until the source ends or either side breaks; then end the sink's writing."""
    with contextlib.suppress(OSError):
        while data := source.recv(CHUNK):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def main(argv: list[str]) -> int:
    host, _, port = argv[0].rpartition(":")
    relay = Relay((host, int(port)))
    serve(relay.handle, relay.snapshot, relay.act)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
