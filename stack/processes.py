"""Start our real servers as child processes on 127.0.0.1, and stop them by PID.

The demo, the web-UI session and the tests all run the same processes the same
way: readiness is a health check answering, never a sleep, and only processes
started here are ever signalled. Nothing started here may outlive its starter:
each child asks the kernel for SIGTERM when its parent dies (``PR_SET_PDEATHSIG``,
which a SIGKILL of the parent cannot skip), and leads its own process group, so
a stop reaches whatever it started in turn and a terminal's Ctrl-C reaches only
the wrapper, which stops its children in order (the load first).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Long enough for a cold interpreter to import aiohttp/FastAPI on a busy 2-core machine.
READY_TIMEOUT_S = 30.0
# How long a stopped server may take to close before it is killed: uvicorn finishing the
# requests it holds, with the load already stopped. Short, so a signalled wrapper and
# everything it started are gone within seconds.
STOP_GRACE_S = 2.0
# How long the load (Locust) may take to end its run interrupted once its wrapper is signalled:
# it stops offering at once and records run.json first; its report may take longer, and is
# cut off rather than keep the wrapper's promise waiting (``loadkit report`` builds it).
LOAD_GRACE_S = 3.0
# The signals that ask a wrapper to stop: a CI timeout (TERM), Ctrl-C (INT), a closed terminal.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# prctl(2)'s option for "send me this signal when the thread that started me dies".
PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


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


def dies_with_parent() -> Callable[[], None]:
    """A ``preexec_fn``: the child gets SIGTERM when this process dies, however it dies; a
    parent that died between fork and this call is noticed by the PID it left."""
    parent = os.getpid()

    def setup() -> None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)

    return setup


def child_options() -> dict:
    """Popen's options for every process the kit starts: it dies with its parent, and leads
    its own process group (its id is its PID), so ``stop`` reaches its children too. Out of
    the terminal's foreground group a child must not read the terminal (it would be stopped
    by SIGTTIN: Locust reads keys from a terminal), so its input is empty."""
    return {"preexec_fn": dies_with_parent(), "process_group": 0, "stdin": subprocess.DEVNULL}


class Interrupted(BaseException):
    """A stop signal reached the wrapper; what it started is stopped as this unwinds (a
    BaseException, as KeyboardInterrupt is, so no ``except Exception`` on the way swallows it)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[None]:
    """While the block runs, the first of STOP_SIGNALS raises Interrupted in the main thread;
    later ones are ignored, so stopping what was started is not itself interrupted."""
    received: list[int] = []

    def on_signal(signum, frame) -> None:
        if not received:
            received.append(signum)
            raise Interrupted(signum)

    previous = {signum: signal.signal(signum, on_signal) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def run_load(command: list[str], env: dict[str, str]) -> int:
    """Run the load (Locust) from the repository root until it exits; its exit code. If the
    wrapper is interrupted meanwhile, SIGTERM ends the run (interrupted, recorded in run.json)
    and whatever is left after LOAD_GRACE_S is killed."""
    proc = subprocess.Popen(command, cwd=ROOT, env=env, **child_options())
    try:
        return proc.wait()
    except BaseException:
        stop(proc, LOAD_GRACE_S)
        raise


def run_captured(
    command: list[str], env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess:
    """``subprocess.run`` with output captured, for a step of the stack (seeding, building an
    environment): its whole process group is stopped however this ends, so an interrupted
    wrapper leaves no pip or seed behind."""
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **child_options(),
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        stop(proc, STOP_GRACE_S)
        raise
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(
    url: str,
    proc: subprocess.Popen,
    timeout: float = READY_TIMEOUT_S,
    headers: dict[str, str] | None = None,
) -> None:
    """Return once GET url (with ``headers``: a server whose every route wants its password)
    answers 2xx; raise if the process dies or time runs out."""
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(url, headers=headers or {})
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode} before it was ready")
        with (
            contextlib.suppress(OSError, urllib.error.URLError),
            urllib.request.urlopen(request, timeout=1) as resp,
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
    ready_headers: dict[str, str] | None = None,
) -> Iterator[Server]:
    """Run ``python -m ...`` args from the repository root until the block ends.

    ``python`` is another interpreter for a platform that lives in its own environment (agno);
    ``ready_headers`` go with the health check (opencode wants its password on every route).
    """
    full_env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [python, *args],
            cwd=ROOT,
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            **child_options(),
        )
    server = Server(proc, f"http://127.0.0.1:{port}", log)
    try:
        wait_ready(server.url + health_path, proc, ready_timeout, ready_headers)
        yield server
    finally:
        stop(proc, STOP_GRACE_S)


def stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the process we started (its whole group, if it leads one), then SIGKILL it if
    it lingers."""
    if proc.poll() is None:
        _signal(proc, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            _signal(proc, signal.SIGKILL)
            proc.wait()


def _signal(proc: subprocess.Popen, signum: int) -> None:
    """Signal the process, and the group it leads (``child_options``) so nothing of it stays."""
    with contextlib.suppress(ProcessLookupError):
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
