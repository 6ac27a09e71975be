"""The stub's record of each model call the kit planned: one row per marked request.

The kit needs, per arrival, how many model calls its turn made and how long the
stub itself took for each, so that the platform's own time per step is the
turn's time minus the stub's. Only requests that carry the kit's marker are
recorded (any other has no arrival to be joined to).

Each stub process appends its rows to a file of its own in one directory the
parent made before forking (one ``write`` per call, no lock, nothing held in
memory), and ``GET /calls?run=RUN`` reads every process's file and answers one
CSV of that run's rows, so a request landing on any process sees all of them.
The directory goes when the stub stops. A row is about 90 bytes: a long-lived
stub keeps every run's rows until it stops (a million calls, about 90 MB).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

# The columns, in order, of the CSV GET /calls answers (docs/platforms.md "Agents that act").
COLUMNS = (
    "run",
    "arrival",
    "step",
    "steps",
    "reply",
    "tool_calls",
    "turns",
    "prompt_tokens",
    "started_at",
    "first_ms",
    "total_ms",
    "outcome",
)
HEADER = ",".join(COLUMNS) + "\n"
# How a call ended, from the stub's side.
ANSWERED = "ok"
LEFT = "abandoned"
_PREFIX = "calls-"


class CallLog:
    """One process's rows, appended to its own file under the shared directory."""

    def __init__(self, directory: Path, index: int) -> None:
        self.path = directory / f"{_PREFIX}{index}.csv"
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.directory = directory

    def write(
        self,
        run: str,
        arrival: int,
        step: int,
        steps: int,
        reply: str,
        tool_calls: int,
        turns: int,
        prompt_tokens: int,
        started_at: float,
        first_s: float | None,
        total_s: float,
        outcome: str,
    ) -> None:
        """Append one call's row (times in ms from the call's arrival at the stub)."""
        first = "" if first_s is None else f"{first_s * 1000.0:.3f}"
        os.write(
            self._fd,
            f"{_field(run)},{arrival},{step},{steps},{reply},{tool_calls},{turns},"
            f"{prompt_tokens},{started_at:.6f},{first},{total_s * 1000.0:.3f},{outcome}\n".encode(),
        )

    def rows(self, run: str | None) -> Iterator[bytes]:
        """Every process's rows (of one run, if named) as CSV lines, in no stated order."""
        wanted = None if run is None else _field(run).encode() + b","
        for path in sorted(self.directory.glob(f"{_PREFIX}*.csv")):
            with path.open("rb") as rows:
                for line in rows:
                    # A line without its end is one a process is writing now (a /calls
                    # asked mid-run); the kit asks after the drain, when none is.
                    if line.endswith(b"\n") and (wanted is None or line.startswith(wanted)):
                        yield line


def _field(run: str) -> str:
    """A run id as one CSV field: the kit's are plain, anything else loses its commas."""
    return run.replace(",", "_").replace("\n", "_").replace('"', "_")
