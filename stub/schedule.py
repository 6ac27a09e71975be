"""Fault windows on the run's clock, shared by every stub process on the port (issue 45).

The kit posts each run's windows ahead of time, each with its start and end as epoch
times (``POST /faults``), and every stub process applies and undoes them by itself: a
request is answered by the window its arrival falls in, so a window changes answers at its
stated time to the precision of the clock, however late a message would have come, and a
master that dies leaves nothing that needs it. A POST lands on one process, so the windows
go where the processes already share their per-call records (stub/calls.py): a file per
POST (and per cancellation) in a directory the parent made before forking, written under a
temporary name and renamed, and a counter in memory the processes share, raised after each
file, which every process reads on every model request and every tick of its loop and, when
it moved, reads the files again.

Each process notes what it did in a file of its own (``GET /faults?run=RUN`` answers every
process's, JSON lines): each window applied and undone, at the time it planned and the time
it did it, so a run's record shows every process kept the schedule. A window's answers are
decided per request; only refusing connections is an act at a moment (the process stops
listening and resets what is open, then listens again), and a process that cannot listen
again notes it and tries again every tick until it can.

``POST /faults/cancel`` (``{"run": RUN}``) ends a run's windows now: those under way are
undone, later ones dropped. The master sends it when a run ends early; a window of a run
whose master died without it still ends at its own end.
"""

from __future__ import annotations

import mmap
import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

# The kinds of windows the stub applies (inputs/faults.py MODEL_KINDS, the scenario's names).
OUTAGE = "outage"
RATE_LIMIT = "rate_limit"
SLOWDOWN = "slowdown"
STALL = "stall"
HANG = "hang"
KINDS = (OUTAGE, RATE_LIMIT, SLOWDOWN, STALL, HANG)
# What a process notes of a window.
APPLIED = "applied"
UNDONE = "undone"
CANCELLED = "cancelled"
UNDO_FAILED = "undo failed"
_SCHEDULE = "schedule-"
_CANCEL = "cancel-"
_LOG = "faults-"


class Window(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One window as posted: the run's key, its name, kind, start and end (epoch seconds)
    and its kind's settings."""

    name: str
    kind: str
    start: float
    end: float
    refuse: bool = False
    share: float = 1.0
    retry_after_s: float = 1.0
    factor: float = 1.0
    after_tokens: int = 0
    stall_s: float = 0.0


class Posted(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A POST /faults body: a run's windows."""

    run: str
    windows: list[Window]


class Cancel(msgspec.Struct, frozen=True):
    """A POST /faults/cancel body, and the file it leaves: the run, and when it was asked."""

    run: str
    at: float = 0.0


class Change(msgspec.Struct, frozen=True):
    """One line of a process's record: what it did to which window, planned and done at
    (epoch seconds), and why, for a failure."""

    run: str
    window: str
    kind: str
    process: int
    pid: int
    event: str
    planned: float
    at: float
    detail: str = ""


class ScheduleError(ValueError):
    """A posted body the stub refuses; the message is the one line it answers."""


def problem(posted: Posted) -> str | None:
    """Why a run's windows cannot be applied (None when they can)."""
    for w in posted.windows:
        if w.kind not in KINDS:
            return f"window {w.name!r}: kind {w.kind!r} is not one of {KINDS}"
        if not w.end > w.start:
            return f"window {w.name!r}: its end must come after its start"
        if not 0 < w.share <= 1 or not w.factor >= 1 or w.stall_s < 0 or w.after_tokens < 0:
            return f"window {w.name!r}: share in (0, 1], factor >= 1, stall_s and after_tokens >= 0"
    return None


class Board:
    """The directory and the counter the processes share; made by the parent before forking."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._memory = memoryview(mmap.mmap(-1, 8)).cast("q")

    @property
    def generation(self) -> int:
        return self._memory[0]

    def post(self, body: bytes) -> Posted:
        """Keep a run's windows for every process; ScheduleError for a body the stub refuses."""
        try:
            posted = msgspec.json.decode(body, type=Posted)
        except msgspec.DecodeError as exc:
            raise ScheduleError(f"the body is not a run's windows: {exc}") from None
        if (why := problem(posted)) is not None:
            raise ScheduleError(why)
        self._write(_SCHEDULE, msgspec.json.encode(posted))
        return posted

    def cancel(self, body: bytes) -> Cancel:
        """End a run's windows now, in every process."""
        try:
            asked = msgspec.json.decode(body, type=Cancel)
        except msgspec.DecodeError as exc:
            raise ScheduleError(f"the body is not {{run}}: {exc}") from None
        cancel = Cancel(asked.run, time.time())
        self._write(_CANCEL, msgspec.json.encode(cancel))
        return cancel

    def _write(self, prefix: str, data: bytes) -> None:
        name = f"{prefix}{time.time_ns():020d}-{os.getpid()}.json"
        partial = self.directory / f".{name}.partial"
        partial.write_bytes(data)
        os.replace(partial, self.directory / name)
        # Raised after the file is in place: a process that sees the count finds the file.
        self._memory[0] += 1

    def changes(self, run: str | None) -> Iterator[bytes]:
        """Every process's record (of one run, if named) as JSON lines, in no stated order."""
        wanted = None if run is None else msgspec.json.encode(run)
        for path in sorted(self.directory.glob(f"{_LOG}*.jsonl")):
            with path.open("rb") as lines:
                for line in lines:
                    if line.endswith(b"\n") and (wanted is None or _run_of(line) == wanted):
                        yield line


def _run_of(line: bytes) -> bytes:
    """The run field of a record line, as JSON (the line starts ``{"run":``)."""
    return line[len(b'{"run":') : line.index(b',"window"')]


class _Booked:
    """A window as one process holds it: its current end (a cancellation moves it) and
    whether this process noted it applied and undone."""

    __slots__ = ("applied", "end", "rng", "run", "undone", "window")

    def __init__(self, run: str, window: Window, stream: int) -> None:
        self.run, self.window, self.end = run, window, window.end
        self.applied = self.undone = False
        # Which requests a partial outage or storm answers so: seeded per window and process.
        self.rng = random.Random(f"window:{run}:{window.name}:{stream}")


# What a process does at a window's start and end beyond answering by it: refuse
# connections (True) or listen again (False); it raises OSError when it cannot.
Refusal = Callable[[bool], None]


class Schedule:
    """One process's view of the board: the windows, which one a request falls in, and the
    record of what this process did and when."""

    def __init__(self, board: Board, index: int, book: Callable[[float, Callable], None]):
        self.board = board
        self.index = index
        self._book = book
        self._seen = -1
        self._windows: dict[tuple[str, str], _Booked] = {}
        self._order: list[_Booked] = []
        self._cancelled: dict[str, float] = {}
        self._log = os.open(
            board.directory / f"{_LOG}{index}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600
        )
        self.refusal: Refusal | None = None
        self._refusing: _Booked | None = None
        self._retry_listen = False

    def keep_up(self) -> None:
        """Read the board again if another process (or this one) changed it since."""
        if self.board.generation != self._seen:
            self.refresh()

    def at(self, now: float) -> _Booked | None:
        """The window ``now`` (epoch seconds) falls in, the first posted if several do."""
        self.keep_up()
        for booked in self._order:
            if booked.window.start <= now < booked.end:
                return booked
        return None

    def refresh(self) -> None:
        """Read the board's files again (the counter moved): new windows booked, cancellations
        applied."""
        self._seen = self.board.generation
        for path in sorted(self.board.directory.glob(f"{_SCHEDULE}*.json")):
            posted = msgspec.json.decode(path.read_bytes(), type=Posted)
            for window in posted.windows:
                key = (posted.run, window.name)
                if key not in self._windows:
                    booked = _Booked(posted.run, window, self.index)
                    self._windows[key] = booked
                    self._order.append(booked)
                    self._arm(booked)
        for path in sorted(self.board.directory.glob(f"{_CANCEL}*.json")):
            cancel = msgspec.json.decode(path.read_bytes(), type=Cancel)
            if cancel.run in self._cancelled:
                continue
            self._cancelled[cancel.run] = cancel.at
            for booked in self._order:
                if booked.run == cancel.run and booked.end > cancel.at:
                    self._cut(booked, cancel.at)

    def _arm(self, booked: _Booked) -> None:
        """Book the window's start and end in this process's timer (a start already past is
        noted at once: posted late)."""
        self._book(booked.window.start, lambda: self._start(booked))
        self._book(booked.end, lambda: self._end(booked, booked.end))

    def _cut(self, booked: _Booked, at: float) -> None:
        """A cancellation: a window not begun is dropped, one under way ends at ``at``."""
        if at <= booked.window.start:
            booked.end = booked.window.start
            booked.undone = True
            self._order.remove(booked)
            self._note(booked, CANCELLED, booked.window.start, "its run ended before it began")
            return
        booked.end = at
        self._book(at, lambda: self._end(booked, at))

    def _start(self, booked: _Booked) -> None:
        if booked.applied or booked.undone or time.time() >= booked.end:
            return
        booked.applied = True
        detail = ""
        if booked.window.kind == OUTAGE and booked.window.refuse and self.refusal is not None:
            self._refusing = booked
            try:
                self.refusal(True)
            except OSError as exc:
                detail = f"could not stop listening: {exc}"
        self._note(booked, APPLIED, booked.window.start, detail)

    def _end(self, booked: _Booked, planned: float) -> None:
        """The window's end as planned (a cancellation's earlier end books its own call)."""
        if booked.undone or planned != booked.end:
            return
        booked.undone = True
        self._order.remove(booked)
        if not booked.applied:
            # Posted after its end, or its start and end fell in one tick: noted all the same.
            booked.applied = True
            self._note(booked, APPLIED, booked.window.start, "posted or seen after its start")
        if self._refusing is booked:
            self._refusing = None
            if not self._listen(booked, planned):
                return
        self._note(booked, UNDONE, planned)

    def _listen(self, booked: _Booked, planned: float) -> bool:
        """Listen again after a refusal; on failure note it and try each tick until it works."""
        assert self.refusal is not None
        try:
            self.refusal(False)
        except OSError as exc:
            if not self._retry_listen:
                self._note(booked, UNDO_FAILED, planned, f"could not listen again: {exc}")
            self._retry_listen = True
            self._book(time.time() + 0.1, lambda: self._listen(booked, planned))
            return False
        if self._retry_listen:
            self._retry_listen = False
            self._note(booked, UNDONE, planned, "listening again after a failed try")
        return True

    def _note(self, booked: _Booked, event: str, planned: float, detail: str = "") -> None:
        change = Change(
            booked.run,
            booked.window.name,
            booked.window.kind,
            self.index,
            os.getpid(),
            event,
            planned,
            time.time(),
            detail,
        )
        os.write(self._log, msgspec.json.encode(change) + b"\n")
