"""The end of a run: build its report and return the verdict as the process exit code.

One function, so a headless run ends the same way wherever it is started from.
``reports`` is imported only here and only when a run ends: it pulls in pandas
and matplotlib, which the load processes never need.
"""

from __future__ import annotations

from pathlib import Path


def finish(run_dir: Path) -> int:
    """0 pass, 1 a threshold failed or was not measured, 2 the run is invalid."""
    from reports import build_report

    return build_report(run_dir)
