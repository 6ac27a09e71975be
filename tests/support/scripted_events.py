"""``python -m tests.support.scripted_events``: an opencode-like ``/event`` stream that sends a
fixed script of hostile frames when told.

Each request is answered 200, chunked ``text/event-stream``, with ``server.connected`` at
once, as opencode does; then nothing until a control request to ``/go``, when every stream
open is sent SCRIPT (events of sessions ``ses_a``, ``ses_b`` and ``ses_c`` interleaved, one
of them naming another session in its text, events split across two chunks, a heartbeat
event and comment, frames that are not events and name a session only in their bytes, an
event whose ``sessionID`` is not a string) and ended in good order (its last chunk). A
test holds a reader's routing of those frames to what each session should get
(``EXPECTED``). Counts: ``streams`` opened, ``sent``.

Prints ``PORT CONTROL_PORT`` once both listen on 127.0.0.1.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections import Counter

from tests.support.counting_server import serve


def _event(kind: str, **properties: object) -> bytes:
    return json.dumps({"type": kind, "properties": properties}).encode()


def _frame(data: bytes) -> bytes:
    return b"data: " + data + b"\n\n"


CONNECTED = _event("server.connected")
A1 = _event("message.part.delta", sessionID="ses_a", field="text", delta=" one")
B1 = _event("message.part.delta", sessionID="ses_b", field="text", delta=" two")
# Another session's event that names ses_a in its text: routed by sessionID, not by bytes.
C_NAMING_A = _event("message.part.delta", sessionID="ses_c", field="text", delta="ses_a")
# Not an event: not JSON, and JSON whose properties is not an object; each names a session.
A_NOT_JSON = b"not json about ses_a"
B_NOT_OBJECT = b'{"type": "x", "properties": ["ses_b"]}'
# sessionID of the wrong type, the bytes naming ses_a: the turn reads past it.
A_BAD_ID = b'{"type": "x", "properties": {"sessionID": 7, "note": "ses_a"}}'
A_IDLE = _event("session.idle", sessionID="ses_a")
B_IDLE = _event("session.idle", sessionID="ses_b")
# Sent in order after /go, each as (the frame's bytes, whether it goes in two chunks).
SCRIPT = (
    (_frame(A1), False),
    (_frame(B1), True),
    (_frame(C_NAMING_A), False),
    (_frame(A_NOT_JSON), False),
    (_frame(B_NOT_OBJECT), False),
    (b": heartbeat\n\n", False),
    (_frame(A_BAD_ID), False),
    (_frame(_event("server.heartbeat")), False),
    (_frame(A_IDLE), False),
    (_frame(B_IDLE), True),
)
# What the reader hands each waiting session, in order.
EXPECTED = {
    "ses_a": [A1, A_NOT_JSON, A_BAD_ID, A_IDLE],
    "ses_b": [B1, B_NOT_OBJECT, B_IDLE],
}
HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class Script:
    """The streams waiting for ``/go``, and the counts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.waiting: list[socket.socket] = []

    def snapshot(self) -> dict:
        with self.lock:
            return dict(self.counts)

    def act(self, path: str) -> None:
        if path != "/go":
            return
        with self.lock:
            streams, self.waiting = self.waiting, []
        for conn in streams:
            with conn:
                for frame, split in SCRIPT:
                    cut = len(frame) // 2 if split else len(frame)
                    conn.sendall(_chunk(frame[:cut]))
                    if split:
                        conn.sendall(_chunk(frame[cut:]))
                conn.sendall(b"0\r\n\r\n")
            with self.lock:
                self.counts["sent"] += 1

    def handle(self, conn: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head and (more := conn.recv(65536)):
            head += more
        conn.sendall(HEAD + _chunk(b"data: " + CONNECTED + b"\n\n"))
        with self.lock:
            self.counts["streams"] += 1
            self.waiting.append(conn)


def main() -> int:
    script = Script()
    serve(script.handle, script.snapshot, script.act)
    return 0


if __name__ == "__main__":
    sys.exit(main())
