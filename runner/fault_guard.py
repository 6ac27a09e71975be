"""The guard: the platform's fault windows, applied and undone by a process that outlives the
master (``python -m runner.fault_guard RUN_DIR``, started by runner/faults.py).

A frozen process must not stay frozen because the run that froze it was killed, so the
master does not freeze anything itself: it hands the guard every platform window ahead of
time, with its start and end on the run's clock (one JSON line on the guard's standard
input), and keeps that pipe open for as long as it runs. The guard, in a session of its
own (a terminal's Ctrl-C and a stop of the master's process group do not reach it), waits
for each window's start, applies it (SIGSTOP of the named process; the window's start
command) and undoes it at its end (SIGCONT; the end command). When the pipe ends (the
master wrote ``end`` as its run ended, or died: SIGKILL included, since the kernel closes
a dead process's pipes) or the guard itself is signalled, every window under way is
undone at once and none begins; a run whose master died also has its stub windows
cancelled, which would otherwise end on their own.

It only ever signals the PID each window names, and thaws only the process it froze: the
process's start time (from /proc) is taken when it is frozen and checked before SIGCONT,
so a PID reused meanwhile is never signalled. Commands run with their window's time limit,
in a session of their own (killed whole when they overrun), their output in the run
directory. Each thing done is one line of ``faults/guard.jsonl`` as it happens
(engine/fault_record.py), so the record survives whatever ends the run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import msgspec

from engine.fault_record import (
    APPLIED,
    CANCELLED,
    FAULTS_DIR,
    GUARD_EVENTS,
    NOT_APPLIED,
    UNDO_FAILED,
    UNDONE,
    FaultEvent,
    append_event,
)

# What the master writes when its run ended on purpose (EOF without it: the master died).
END = b"end"
# How long the guard gives the stub to take a cancellation when the master died.
CANCEL_TIMEOUT_S = 5.0
# The guard's name in the record.
BY = "guard"


class GuardWindow(msgspec.Struct, frozen=True):
    """A platform window as the guard is given it: epoch start and end, and what to do."""

    name: str
    kind: str
    start: float
    end: float
    pid: int | None = None
    pid_file: str = ""
    at_start: list[str] = []
    at_end: list[str] = []
    timeout_s: float = 60.0


class GuardPlan(msgspec.Struct, frozen=True):
    """Everything the guard is handed: the windows, and the stub and run key to cancel the
    model's windows with if the master dies."""

    windows: list[GuardWindow]
    stub_url: str | None = None
    run_key: str = ""


class _Stop(Exception):
    """A signal reached the guard: undo now."""


class Guard:
    """The windows' threads, the record, and the event that ends them all."""

    def __init__(self, run_dir: Path, plan: GuardPlan) -> None:
        self.dir = run_dir / FAULTS_DIR
        self.plan = plan
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._window, args=(w,), daemon=True) for w in plan.windows
        ]

    def note(self, w: GuardWindow, event: str, planned: float, detail: str = "") -> None:
        append_event(
            self.dir / GUARD_EVENTS,
            FaultEvent(w.name, w.kind, BY, event, planned, time.time(), detail),
        )

    def _window(self, w: GuardWindow) -> None:
        """Wait for the window's start, apply it, wait for its end (or the stop), undo it."""
        if self.stop.wait(max(0.0, w.start - time.time())):
            self.note(w, CANCELLED, w.start, "the run ended before the window began")
            return
        if w.kind == "freeze":
            frozen = self._freeze(w)
            self.stop.wait(max(0.0, w.end - time.time()))
            if frozen is not None:
                self._thaw(w, *frozen)
            return
        if w.at_start:
            ok, said = self._command(w, w.at_start, "at_start")
            self.note(w, APPLIED if ok else NOT_APPLIED, w.start, said)
        else:
            self.note(w, APPLIED, w.start, "no command at its start")
        self.stop.wait(max(0.0, w.end - time.time()))
        if w.at_end:
            ok, said = self._command(w, w.at_end, "at_end")
            self.note(w, UNDONE if ok else UNDO_FAILED, self._planned_end(w), said)
        else:
            self.note(w, UNDONE, self._planned_end(w), "no command at its end")

    def _planned_end(self, w: GuardWindow) -> float:
        return w.end if time.time() >= w.end - 0.001 else time.time()

    def _freeze(self, w: GuardWindow) -> tuple[int, str] | None:
        """SIGSTOP of the window's process; its PID and start time, or None (noted) when it
        could not be frozen."""
        try:
            pid = w.pid if w.pid is not None else int(Path(w.pid_file).read_text().split()[0])
        except (OSError, ValueError, IndexError) as exc:
            self.note(w, NOT_APPLIED, w.start, f"no PID in {w.pid_file}: {exc}")
            return None
        began = _started(pid)
        if began is None:
            self.note(w, NOT_APPLIED, w.start, f"PID {pid} is not running")
            return None
        try:
            os.kill(pid, signal.SIGSTOP)
        except OSError as exc:
            self.note(w, NOT_APPLIED, w.start, f"SIGSTOP of PID {pid}: {exc.strerror}")
            return None
        self.note(w, APPLIED, w.start, f"SIGSTOP of PID {pid}")
        return pid, began

    def _thaw(self, w: GuardWindow, pid: int, began: str) -> None:
        """SIGCONT of the process it froze, if it is still that process."""
        planned = self._planned_end(w)
        if _started(pid) != began:
            self.note(w, UNDONE, planned, f"PID {pid} is gone: nothing is left frozen")
            return
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            self.note(w, UNDONE, planned, f"PID {pid} is gone: nothing is left frozen")
            return
        except OSError as exc:
            self.note(w, UNDO_FAILED, planned, f"SIGCONT of PID {pid}: {exc.strerror}")
            return
        self.note(w, UNDONE, planned, f"SIGCONT of PID {pid}")

    def _command(self, w: GuardWindow, argv: list[str], which: str) -> tuple[bool, str]:
        """Run one of a window's commands within its time limit, its output in the run
        directory; whether it succeeded, and what it did in words."""
        log = self.dir / f"{_file_name(w.name)}.{which}.log"
        try:
            with log.open("wb") as out:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        except OSError as exc:
            return False, f"{which} could not start: {exc.strerror}"
        try:
            code = proc.wait(w.timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return (
                False,
                f"{which} ran past its {w.timeout_s:g} s and was killed (output in {log.name})",
            )
        if code != 0:
            return False, f"{which} exited {code} (output in {log.name})"
        return True, f"{which} exited 0 (output in {log.name})"

    def run(self) -> int:
        """Until the master's pipe ends (or a signal): then undo, and wait for the undoing."""
        for thread in self.threads:
            thread.start()
        ended = _wait_for_master()
        self.stop.set()
        if not ended and self.plan.stub_url and self.plan.run_key:
            _cancel_stub(self.plan.stub_url, self.plan.run_key)
        for thread in self.threads:
            thread.join()
        return 0


def _wait_for_master() -> bool:
    """Block until the master's pipe says ``end`` (True) or closes without it, or a signal
    reaches the guard (False: the master died or the guard was stopped)."""

    def stop(signum: int, frame: object) -> None:
        raise _Stop

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)
    try:
        return sys.stdin.buffer.readline().strip() == END
    except _Stop:
        return False


def _cancel_stub(stub_url: str, run_key: str) -> None:
    """End the run's model windows on the stub now (they would end on their own)."""
    body = msgspec.json.encode({"run": run_key})
    request = urllib.request.Request(
        stub_url.rstrip("/") + "/faults/cancel",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    with contextlib.suppress(OSError), urllib.request.urlopen(request, timeout=CANCEL_TIMEOUT_S):
        pass


def _started(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat's 22nd field): with
    its PID, what tells it from a later process given the same PID. None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Fields after the command name, which may hold spaces and parentheses.
    return stat.rpartition(")")[2].split()[19]


def _file_name(name: str) -> str:
    """A window's name as part of a file's: its letters, digits, - and _ kept."""
    return "".join(c if c.isalnum() or c in "-_@" else "_" for c in name)


def main(argv: list[str]) -> int:
    run_dir = Path(argv[0])
    plan = msgspec.json.decode(sys.stdin.buffer.readline(), type=GuardPlan)
    return Guard(run_dir, plan).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
