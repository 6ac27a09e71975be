"""What every hostile test server shares: loopback, a thread per connection, and its own account.

A hostile server decides which faults to inject and counts them; the test then
compares the failures the client recorded with those counts, one for one. Both
sides of that are here: ``serve`` runs a server's connection handler on a
loopback port and answers the counts as JSON on a second, control port (printing
``PORT CONTROL_PORT`` once both listen); ``started`` runs such a server as a
child process for a test, and stops it by PID.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator

from stack.processes import ROOT, stop

# How long a test waits for the server to have done something (a busy machine is slow).
WAIT_S = 20.0


def _listen() -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    return sock


def _accept(sock: socket.socket, handle: Callable[[socket.socket], None]) -> None:
    while True:
        conn, _ = sock.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def _answer_counts(
    conn: socket.socket, snapshot: Callable[[], dict], act: Callable[[str], None] | None
) -> None:
    with conn:
        buf = b""
        while b"\r\n\r\n" not in buf and (chunk := conn.recv(65536)):
            buf += chunk
        if act is not None:
            act(buf.split(b" ", 2)[1].decode() if buf.count(b" ") >= 2 else "/")
        body = json.dumps(snapshot()).encode()
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
        )


def serve(
    handle: Callable[[socket.socket], None],
    snapshot: Callable[[], dict],
    act: Callable[[str], None] | None = None,
) -> None:
    """Serve ``handle`` (one thread per connection) until killed, and the counts ``snapshot``
    gives on the control port, after ``act`` (if any) is given the control request's path (a
    server that misbehaves on cue); print both ports once listening."""
    service, control = _listen(), _listen()
    threading.Thread(
        target=_accept, args=(control, lambda c: _answer_counts(c, snapshot, act)), daemon=True
    ).start()
    print(service.getsockname()[1], control.getsockname()[1], flush=True)
    _accept(service, handle)


class CountingServer:
    """A started hostile server, as a test sees it: where it listens and what it says it did."""

    def __init__(self, proc: subprocess.Popen, port: int, control: int):
        self.proc, self.url, self._control = proc, f"http://127.0.0.1:{port}", control

    def counts(self, path: str = "/") -> Counter:
        """Everything the server counted so far, once it has acted on ``path`` (a server that
        misbehaves on cue does what the path names first)."""
        url = f"http://127.0.0.1:{self._control}{path}"
        with urllib.request.urlopen(url, timeout=5) as answer:
            return Counter(json.loads(answer.read()))

    def wait_for(self, name: str, at_least: int) -> Counter:
        """The counts, once ``name`` has reached ``at_least`` (a readiness check, not a sleep)."""
        deadline = time.monotonic() + WAIT_S
        while (counts := self.counts())[name] < at_least:
            assert time.monotonic() < deadline, counts
            time.sleep(0.05)
        return counts


@contextlib.contextmanager
def started(module: str, *args: str) -> Iterator[CountingServer]:
    """The hostile server ``module`` (``python -m``, with ``args``) on loopback, stopped by
    PID at the end."""
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *args], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        port, control = map(int, proc.stdout.readline().split())
        yield CountingServer(proc, port, control)
    finally:
        stop(proc)
