"""The end of a run: build its report and return the verdict as the process exit code.

One function, so a headless run ends the same way wherever it is started from.
``reports`` is imported only here and only when a run ends: it pulls in pandas
and matplotlib, which the load processes never need.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

# The run could not be judged (reports/ README: 2 means invalid).
UNJUDGED = 2


def finish(run_dir: Path) -> int:
    """0 pass, 1 a threshold failed or was not measured, 2 the run is invalid."""
    try:
        from reports import build_report
    except ImportError as exc:
        log.error("no report for %s: reports cannot be imported (%s)", run_dir, exc)
        return UNJUDGED
    return build_report(run_dir)
