"""What was done about each fault window, and when: the run directory's ``faults/`` (issue 45).

The windows themselves are the scenario's (run.json's ``scenario.faults``, each in a phase
whose start run.json records); what happened is two files of JSON lines, one typed record a
line: ``faults/stub.jsonl``, the stub's note from every process of each window it applied
and undid (fetched by the master after the drain), and ``faults/guard.jsonl``, the guard's
note of each platform window (runner/fault_guard.py), written as it acts, so a master
killed mid-run leaves it whole. The output of a command window's commands is beside them,
``faults/<window>.at_start.log`` and ``.at_end.log``. Reports read these and nothing else.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import msgspec

from inputs.faults import Fault
from inputs.scenario import Scenario

FAULTS_DIR = "faults"
STUB_EVENTS = "stub.jsonl"
GUARD_EVENTS = "guard.jsonl"
# What a window's record says was done.
APPLIED = "applied"
UNDONE = "undone"
# Its run ended (or its master went) before the window began: nothing was done.
CANCELLED = "cancelled"
# The window could not be applied (a freeze's process was gone, a start command failed).
NOT_APPLIED = "not applied"
# The window could not be undone: a process left frozen, an end command that failed, a
# stub that could not listen again. The report's first line.
UNDO_FAILED = "undo failed"


class FaultEvent(msgspec.Struct, frozen=True):
    """One thing done about a window: which, by whom (a stub process, the guard), what, when
    it was planned and when it was done (epoch seconds), and why, for a failure."""

    fault: str
    kind: str
    by: str
    event: str
    planned: float
    at: float
    detail: str = ""


@dataclass(frozen=True)
class Window:
    """A scenario's window placed on the run's clock: seconds from the run's start."""

    fault: Fault
    start_s: float
    end_s: float


def placed(scenario: Scenario, phase_starts: dict[str, float]) -> tuple[Window, ...]:
    """Every window of ``scenario`` on the run's clock, its phase's start (first by that name)
    added to its own; windows of phases the run did not have are left out."""
    return tuple(
        Window(f, phase_starts[f.phase] + f.start_s, phase_starts[f.phase] + f.end_s)
        for f in scenario.faults
        if f.phase in phase_starts
    )


def append_event(path: Path, event: FaultEvent) -> None:
    """Add one line to a record file, in one write (a killed writer loses no earlier line)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, msgspec.json.encode(event) + b"\n")
    finally:
        os.close(fd)


class FaultRecordError(ValueError):
    """A record file that is not the record; the message names the file and the line."""


def read_events(run_dir: Path) -> tuple[FaultEvent, ...]:
    """Every note in the run's ``faults/`` record files, in time order (none: no window)."""
    events: list[FaultEvent] = []
    for name in (STUB_EVENTS, GUARD_EVENTS):
        path = run_dir / FAULTS_DIR / name
        if not path.exists():
            continue
        data = path.read_bytes()
        lines = data.split(b"\n")
        # A last line without its end is one a killed writer was writing: left out.
        whole = lines[:-1] if not data.endswith(b"\n") else lines
        for number, line in enumerate(whole, 1):
            if not line.strip():
                continue
            try:
                events.append(msgspec.json.decode(line, type=FaultEvent))
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise FaultRecordError(f"{path}: line {number}: {exc}") from None
    return tuple(sorted(events, key=lambda e: (e.at, e.fault, e.by)))
