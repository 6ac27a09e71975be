"""Samples to per-phase statistics to verdict to Markdown/HTML; never talks to the network.

``build_report(run_dir)`` writes a run's report and returns its exit code (0 pass,
1 a threshold failed or was not measured, 2 invalid); ``compare_runs(base, run)``
writes a side-by-side comparison and returns 1 when it finds a regression.
"""

from reports.build import build_report
from reports.compare import compare_runs

__all__ = ["build_report", "compare_runs"]
