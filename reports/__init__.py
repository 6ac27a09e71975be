"""Samples to per-phase statistics to verdict to Markdown/HTML; never talks to the network.

``reports.build.build_report(run_dir)`` writes a run's report and returns its exit code (0
pass, 1 a check failed or was not measured or a workload did not recover, 2 invalid or
inconclusive); ``reports.compare.compare_runs(base, run)`` writes a side-by-side comparison
and returns 0 or 1 (a regression) for two valid runs of one plan on one platform, else 2.
The package imports neither: reading a run's summary.json (reports/summary.py) must not
pull in what builds a report (pandas, DuckDB, matplotlib).
"""
