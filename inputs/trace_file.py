"""A trace of real arrivals for a phase to replay: offsets in seconds, optionally each one's
workload, read from a CSV file and spread over the phase.

One arrival a line, ``offset_s`` or ``offset_s,workload`` (a first line naming those
columns is a header). Offsets are seconds from the trace's start, in any order (a merged
log need not be sorted); they are replayed sorted. Either every line names a workload or
none does: a trace that names some would leave the others to the mix by accident.

The trace is scaled to the phase's length, so a production hour can be replayed in a
three-minute sustain with its shape intact. A trace's length is its last offset plus its
mean gap, ``L = last + (last - first) / (n - 1)``, and offset ``o`` is due ``o x D / L``
into a phase of ``D`` seconds. With that length a trace of evenly spaced offsets replays
exactly as a uniform phase of ``n / D`` per second, and the last arrival lands one mean
gap before the phase ends rather than on the next phase's first instant (the trace's
last request was not the end of its traffic). The phase's rate is the trace's mean,
``n / D``. Scaling a run (``--scale``) shortens the phase, never its rate: the trace keeps
its spacing and the phase replays its beginning.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

# The header a trace may start with; columns are always in this order.
HEADER = ("offset_s", "workload")
# Bad lines named one by one before the rest are counted: enough to see the pattern.
SHOWN_LINES = 5


@dataclass(frozen=True)
class Trace:
    """A trace as read: its offsets in seconds, sorted, and each one's workload (empty when
    the file names none)."""

    offsets: tuple[float, ...]
    workloads: tuple[str, ...]

    def spread_over(self, duration_s: float) -> tuple[float, ...]:
        """The due offsets in a phase of ``duration_s``: each offset x duration / length."""
        first, last, n = self.offsets[0], self.offsets[-1], len(self.offsets)
        length = last + (last - first) / (n - 1)
        return tuple(o * duration_s / length for o in self.offsets)


def read_trace(
    path: Path, where: str, workloads: set[str] | None
) -> tuple[Trace | None, list[str]]:
    """The trace in ``path``, or None and one line per problem, each starting with ``where``
    (the scenario field that named the file); workloads are checked against ``workloads``
    unless it is None (the mix itself was refused)."""
    try:
        with path.open(newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        return None, [
            f"{where}: cannot read {path} ({why}); give a CSV of offsets in seconds, one a "
            "line, relative to the scenario file"
        ]
    lines, problems = _lines(rows, path, workloads)
    if problems:
        return None, [f"{where}: {p}" for p in problems]
    if len(lines) < 2 or lines[-1][0] == lines[0][0]:
        return None, [
            f"{where}: {path} needs two different offsets to have a length to scale to the "
            "phase; give the trace's arrivals, one offset a line"
        ]
    named = {bool(w) for _, w in lines}
    if len(named) > 1:
        first = next(n for n, (_, w) in enumerate(lines) if not w)
        return None, [
            f"{where}: {path} names a workload on some lines, not all (sorted arrival "
            f"{first + 1} has none); name one on every line or on none"
        ]
    offsets = tuple(o for o, _ in lines)
    return Trace(offsets, tuple(w for _, w in lines) if named == {True} else ()), []


def _lines(
    rows: list[list[str]], path: Path, workloads: set[str] | None
) -> tuple[list[tuple[float, str]], list[str]]:
    """(offset, workload) per arrival, sorted by offset, and the bad lines' problems."""
    lines, bad = [], []
    for number, row in enumerate(rows, start=1):
        cells = [c.strip() for c in row]
        if not any(cells):
            continue
        if number == 1 and tuple(cells) == HEADER[: len(cells)]:
            continue
        problem = _problem(cells, workloads)
        if problem:
            bad.append(f"{path} line {number}: {problem}")
        else:
            lines.append((float(cells[0]), cells[1] if len(cells) > 1 else ""))
    if not lines and not bad:
        bad.append(f"{path} holds no offsets; give the trace's arrivals, one offset a line")
    problems = bad[:SHOWN_LINES]
    if len(bad) > SHOWN_LINES:
        problems.append(f"{path}: {len(bad) - SHOWN_LINES} more bad lines like these")
    lines.sort(key=lambda line: line[0])
    return lines, problems


def _problem(cells: list[str], workloads: set[str] | None) -> str:
    """What is wrong with one line's cells, or "" when it is an arrival."""
    if len(cells) > len(HEADER):
        return f"{len(cells)} columns; give offset_s and optionally a workload"
    try:
        offset = float(cells[0])
    except ValueError:
        return f"{cells[0][:40]!r} is not an offset in seconds"
    if not math.isfinite(offset) or offset < 0:
        return f"{cells[0]} is not a finite offset of 0 s or more"
    if len(cells) > 1 and cells[1] and workloads is not None and cells[1] not in workloads:
        return f"workload {cells[1][:40]!r} is not in the mix; use one of {sorted(workloads)}"
    return ""
