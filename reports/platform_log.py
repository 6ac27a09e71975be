"""What the platform logged while the run ran: its ERROR and CRITICAL lines, counted.

A run can pass every threshold while the platform writes a traceback per request
(issue 25: 1,431 during a PASS), and latency and error rates never show it. When the
kit started the platform it knows where its log is, and run.json's ``platform_log``
names the file and the stretch of it the run wrote (bytes ``from_byte`` to
``to_byte``), so startup, seeding and shutdown are left out. The run counts that
stretch as it ends and records the counts beside it (``counted``), so a report
rebuilt where the log is not (a committed run, another machine) says the same. A
line counts when ERROR or CRITICAL is its level: among its first words, as Python's
logging and uvicorn write it (``... target ERROR msg``, ``ERROR:    msg``); a
traceback's own lines are not counted again.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import msgspec
from msgspec import UNSET

from reports.rundir import Run

LEVELS = ("ERROR", "CRITICAL")
# The level as one of the first four words (after a date, a time and a logger name at
# most), bracketed or followed by a colon as some formats write it.
_LEVEL = re.compile(r"^(?:\S+\s+){0,3}?\[?(ERROR|CRITICAL)\]?(?::|\s|$)\s*(.*)$")


@dataclass(frozen=True)
class PlatformLog:
    """The counted stretch of the platform's log; ``missing`` says why it could not be read."""

    path: str
    bytes_read: int
    by_level: dict[str, int]
    most_frequent: str | None
    most_frequent_count: int
    missing: str | None = None

    @property
    def errors(self) -> int:
        """ERROR and CRITICAL lines together."""
        return sum(self.by_level.values())

    def summary_line(self) -> str:
        """The count and the most frequent message in one line, for the first screen."""
        if self.missing:
            return f"the platform's log was not read: {self.missing}"
        if not self.errors:
            return f"the platform logged no ERROR or CRITICAL line during the run ({self.path})"
        levels = " and ".join(f"{n:,} {level}" for level, n in self.by_level.items() if n)
        return (
            f"the platform logged {levels} lines during the run ({self.path}); most frequent, "
            f"{self.most_frequent_count:,} times: {self.most_frequent}"
        )


def platform_log(run: Run) -> PlatformLog | None:
    """The run's stretch of the platform's log, counted; None when the run names no log."""
    named = run.record.platform_log
    if named is UNSET:
        return None
    if named.counted is not UNSET:
        return PlatformLog(named.path, **msgspec.structs.asdict(named.counted))
    return read_stretch(run.path / named.path, named.from_byte, named.to_byte, named.path)


def read_stretch(file: Path, start: int, end: int, path: str) -> PlatformLog:
    """Bytes ``start`` to ``end`` of ``file`` counted, named ``path``; ``missing`` says why
    they could not be read."""
    try:
        with file.open("rb") as f:
            f.seek(start)
            text = f.read(end - start).decode(errors="replace")
    except OSError as exc:
        reason = f"{path} ({exc.strerror or type(exc).__name__})"
        return PlatformLog(path, 0, dict.fromkeys(LEVELS, 0), None, 0, missing=reason)
    return count_errors(path, text, end - start)


def count_errors(path: str, text: str, bytes_read: int) -> PlatformLog:
    """ERROR and CRITICAL lines of ``text`` by level, and the message logged most often."""
    by_level = dict.fromkeys(LEVELS, 0)
    messages: Counter[str] = Counter()
    for line in text.splitlines():
        found = _LEVEL.match(line)
        if found:
            by_level[found.group(1)] += 1
            messages[found.group(2).strip() or "(no message)"] += 1
    top = messages.most_common(1)
    return PlatformLog(
        path, bytes_read, by_level, top[0][0] if top else None, top[0][1] if top else 0
    )
