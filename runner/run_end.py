"""The end of a run: build its report and return the verdict as the process exit code.

One function, so a headless run ends the same way wherever it is started from,
and one reader of that verdict for the wrappers that started the run (``loadkit
run``, ``make demo``), which must exit with it rather than with Locust's own status.
``reports`` is imported only here and only when a run ends: its build pulls in pandas,
DuckDB and matplotlib, which the load processes never need; reading the verdict back
(reports/summary.py) pulls in none of them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reports.summary import Summary

# What a run that left no verdict exits with: it was refused, ended before its report, or
# its files cannot be reported on (one missing or malformed).
NO_VERDICT = 2


def finish(run_dir: Path) -> tuple[int, str]:
    """The exit code (2 invalid, else 1 a check failed or was not measured, else 2
    inconclusive, else 0) and the console text that says it: each workload's figures,
    then the verdict. Files that cannot be reported on get one line on stderr at once,
    and no console text."""
    from reports.build import write_report
    from reports.rundir import RunDirError

    try:
        return write_report(run_dir)
    except RunDirError as exc:
        print(f"reports: {exc}", file=sys.stderr)
        return NO_VERDICT, ""


def summary_of(run_dir: Path) -> Summary | None:
    """The run's summary.json, through its type (None when there is none to read: no report
    was built)."""
    from reports.summary import read_summary

    try:
        return read_summary(run_dir)
    except (OSError, ValueError):  # msgspec's DecodeError is a ValueError
        return None


def verdict_exit_code(run_dir: Path, since: float) -> int | None:
    """The exit code in ``run_dir``'s summary.json if it was written at or after ``since`` (an
    epoch: this run's, not an earlier one's), else None."""
    from reports.summary import SUMMARY_FILE

    try:
        if (run_dir / SUMMARY_FILE).stat().st_mtime < since:
            return None
    except OSError:
        return None
    summary = summary_of(run_dir)
    return None if summary is None else summary.exit_code
