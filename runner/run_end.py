"""The end of a run: build its report and return the verdict as the process exit code.

One function, so a headless run ends the same way wherever it is started from.
``reports`` is imported only here and only when a run ends: it pulls in pandas
and matplotlib, which the load processes never need.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Exit code of a run whose files cannot be reported on (a file missing or malformed).
INVALID = 2


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
        return INVALID, ""
