"""Samples to per-phase statistics to verdict to Markdown/HTML; never talks to the network.

``build_report(run_dir)`` writes a run's report and returns its exit code (0 pass,
1 a check failed or was not measured or a workload did not recover, 2 invalid or
inconclusive); ``compare_runs(base, run)`` writes a side-by-side comparison and returns
0 or 1 (a regression) for two valid runs of one plan on one platform, else 2.
"""

from reports.build import build_report
from reports.compare import compare_runs

__all__ = ["build_report", "compare_runs"]
