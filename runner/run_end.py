"""The end of a run: build its report and return the verdict as the process exit code.

One function, so a headless run ends the same way wherever it is started from.
``reports`` is imported only here and only when a run ends: it pulls in pandas
and matplotlib, which the load processes never need.
"""

from __future__ import annotations

from pathlib import Path


def finish(run_dir: Path) -> int:
    """2 invalid, else 1 a check failed or was not measured, else 2 inconclusive, else 0."""
    from reports import build_report

    return build_report(run_dir)
