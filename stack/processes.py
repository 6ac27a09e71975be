"""Start our real servers as child processes on 127.0.0.1, and stop them by PID.

The demo, the web-UI session and the tests all run the same processes the same
way: readiness is a health check answering, never a sleep, and only processes
started here are ever signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Long enough for a cold interpreter to import aiohttp/FastAPI on a busy 2-core machine.
READY_TIMEOUT_S = 30.0


@dataclass
class Server:
    """A started server: its process, where it listens, and its captured output."""

    proc: subprocess.Popen
    url: str
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, timeout: float = READY_TIMEOUT_S) -> None:
    """Return once GET url answers 2xx; raise if the process dies or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode} before it was ready")
        with (
            contextlib.suppress(OSError, urllib.error.URLError),
            urllib.request.urlopen(url, timeout=1) as resp,
        ):
            if 200 <= resp.status < 300:
                return
        time.sleep(0.05)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


@contextlib.contextmanager
def running(
    args: list[str],
    health_path: str,
    port: int,
    log: Path,
    env: dict[str, str] | None = None,
    python: str = sys.executable,
    ready_timeout: float = READY_TIMEOUT_S,
) -> Iterator[Server]:
    """Run ``python -m ...`` args from the repository root until the block ends.

    ``python`` is another interpreter for a platform that lives in its own environment (agno).
    """
    full_env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [python, *args],
            cwd=ROOT,
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = Server(proc, f"http://127.0.0.1:{port}", log)
    try:
        wait_ready(server.url + health_path, proc, ready_timeout)
        yield server
    finally:
        stop(proc)


def stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the process we started, then SIGKILL it if it lingers."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
