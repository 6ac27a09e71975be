"""Binding the port and running one or several stub processes on it.

Several processes share one port through SO_REUSEPORT (the kernel spreads
connections across their sockets) when one core is not enough. The parent
binds every socket before forking, so a port in use is one line and a non-zero
exit before anything serves, and the shared stats memory exists before the
children do, and so does the directory their per-call records and fault windows share
(stub/calls.py, stub/schedule.py), removed when the stub stops. A window that refuses
connections closes each process's listening socket and binds a new one on the same port
when it ends (``_Listener``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import os
import shutil
import signal
import socket
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from stub.app import build_app
from stub.calls import CallLog
from stub.config import ConfigError, StubConfig, describe
from stub.schedule import Board
from stub.stats import Stats

# A whole benchmark's worth of connections may arrive at once; the kernel caps this at somaxconn.
BACKLOG = 4096
# Held (timeout-fault) requests would otherwise keep a stopping stub alive for a minute.
SHUTDOWN_TIMEOUT_S = 2.0
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop where it is installed (Linux, macOS), else None: asyncio's own, the
    stub still runs, just slower."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def bind_sockets(config: StubConfig) -> list[socket.socket]:
    """One listening socket per process, all on the same port; ConfigError if it is taken."""
    probe = _reusable_socket()
    try:
        probe.bind((config.host, config.port))
    except OSError as exc:
        probe.close()
        raise ConfigError(_bind_problem(config, exc)) from None
    if config.processes == 1:
        probe.listen(BACKLOG)
        return [probe]
    port = probe.getsockname()[1]
    probe.close()
    sockets: list[socket.socket] = []
    for _ in range(config.processes):
        sock = _reusable_socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            sock.bind((config.host, port))
        except OSError as exc:
            sock.close()
            for opened in sockets:
                opened.close()
            raise ConfigError(_bind_problem(config, exc)) from None
        sock.listen(BACKLOG)
        sockets.append(sock)
    return sockets


def _reusable_socket() -> socket.socket:
    """A TCP socket that may bind a port whose old connections linger in TIME_WAIT, so a
    restarted stub gets its port back; a port another process listens on is still refused.
    IPPROTO_TCP, so accepted connections get TCP_NODELAY without uvloop too (tokens are small
    writes that Nagle would hold for the client's delayed ACK)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return sock


def _bind_problem(config: StubConfig, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (
            f"--port {config.port} is in use on {config.host}; "
            "stop what listens there or pick another port"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"--host {config.host} is not an address of this machine; use 127.0.0.1 or 0.0.0.0"
    return f"--host {config.host} --port {config.port} cannot be bound: {exc.strerror}"


def serve(config: StubConfig) -> int:
    """Run the stub until SIGTERM or SIGINT; the exit status of the whole set of processes."""
    sockets = bind_sockets(config)
    memory, lock = Stats.shared(config.processes)
    port = sockets[0].getsockname()[1]
    # Everything alive now lives as long as the process; keeping it out of garbage collection
    # makes full collections cheap. Measured: without this, collections under 1000 streams
    # stalled the loop for 30-70 ms (first-token error p99), with it p99 stays near 3 ms.
    gc.collect()
    gc.freeze()
    print(
        f"stub: serving http://{config.host}:{port} ({describe(config)}, "
        f"uvloop={'yes' if loop_factory() else 'no'})",
        flush=True,
    )
    calls = Path(tempfile.mkdtemp(prefix="stub-calls-"))
    board = Board(calls)
    try:
        if config.processes == 1:
            _run_process(config, sockets[0], Stats(memory, lock, 0), board, 0)
            return 0
        return _fork(config, sockets, memory, lock, board)
    finally:
        shutil.rmtree(calls, ignore_errors=True)


def _fork(
    config: StubConfig, sockets: list[socket.socket], memory: memoryview, lock, board: Board
) -> int:
    """One child per socket; the parent supervises them and answers for all."""
    # Stop signals wait until each process has its handlers, so none dies half set up.
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    children = set()
    for index, sock in enumerate(sockets):
        pid = os.fork()
        if pid == 0:
            # A socket held open by a process that never accepts on it would swallow connections.
            for other in sockets:
                if other is not sock:
                    other.close()
            try:
                _run_process(config, sock, Stats(memory, lock, index), board, index)
            except BaseException:
                traceback.print_exc()
                os._exit(1)
            os._exit(0)
        children.add(pid)
    for sock in sockets:
        sock.close()
    return _supervise(children)


def _supervise(children: set[int]) -> int:
    """Forward stop signals to the children; if one dies, stop the rest and report it."""

    def forward(signum: int, _frame: object) -> None:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    for signum in _STOP_SIGNALS:
        signal.signal(signum, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    status = 0
    while children:
        pid, code = os.wait()
        children.discard(pid)
        exit_code = os.waitstatus_to_exitcode(code)
        if exit_code != 0 and status == 0:
            status = 1
            print(
                f"stub: process {pid} exited with {exit_code}; stopping the others", file=sys.stderr
            )
            forward(signal.SIGTERM, None)
    return status


def _run_process(
    config: StubConfig, sock: socket.socket, stats: Stats, board: Board, index: int
) -> None:
    """Serve on sock in this process until SIGTERM or SIGINT."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        runner.run(_serve_socket(config, sock, stats, board, index))


async def _serve_socket(
    config: StubConfig, sock: socket.socket, stats: Stats, board: Board, index: int
) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in _STOP_SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    app, schedule = build_app(config, stats, CallLog(board.directory, index), board, index)
    runner = web.AppRunner(
        app, access_log=None, handler_cancellation=True, shutdown_timeout=SHUTDOWN_TIMEOUT_S
    )
    await runner.setup()
    listener = _Listener(runner, sock, config.processes > 1)
    await listener.site.start()
    schedule.refusal = listener.refuse
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


class _Listener:
    """A process's listening socket, which a fault window may close (connections refused, and
    the open ones reset, as a provider that is down) and open again on the same port."""

    def __init__(self, runner: web.AppRunner, sock: socket.socket, shared: bool) -> None:
        self.runner = runner
        self.address = sock.getsockname()[:2]
        self.shared = shared
        self.site = self._site(sock)
        # The stop or start under way (a task is held until it is done).
        self._pending: set[asyncio.Task] = set()

    def _site(self, sock: socket.socket) -> web.SockSite:
        return web.SockSite(self.runner, sock, backlog=BACKLOG, shutdown_timeout=SHUTDOWN_TIMEOUT_S)

    def refuse(self, refusing: bool) -> None:
        """Stop listening and reset every open connection (True), or listen again (False:
        OSError when the port cannot be bound again)."""
        if refusing:
            self._run(self.site.stop())
            server = self.runner.server
            for handler in list(server.connections) if server is not None else ():
                if handler.transport is not None:
                    handler.transport.abort()
            return
        sock = _reusable_socket()
        try:
            if self.shared:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind(self.address)
            sock.listen(BACKLOG)
        except OSError:
            sock.close()
            raise
        self.site = self._site(sock)
        self._run(self.site.start())

    def _run(self, step) -> None:
        task = asyncio.get_running_loop().create_task(step)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
