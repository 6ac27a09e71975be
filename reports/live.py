"""The verdict so far, for the web UI while a run is going: same numbers as the report.

An operator exploring by hand wants to see which thresholds hold at the rate they
chose, before the run ends. This reads the run directory as the final report does
(nearest-rank over successes, counts beside every percentile, no samples = not
measured) and judges each threshold over every sample recorded so far, since an
exploratory run has no sustain phase to judge in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reports.rundir import load_run
from reports.stats import run_stats
from reports.verdict import ThresholdResult, judge_threshold

# Where a live threshold was judged: over the whole run so far.
SO_FAR = "so far"


@dataclass(frozen=True)
class LiveRow:
    """One workload's numbers so far, as the web UI's table shows them."""

    workload: str
    recorded: int
    ok: int
    failed: int
    shed: int
    error_rate: float | None
    p50_ms: float | None
    p95_ms: float | None
    timed: int
    p95_ttft_ms: float | None
    thresholds: str


@dataclass(frozen=True)
class LiveVerdict:
    offered: int
    recorded: int
    rows: tuple[LiveRow, ...]
    thresholds: tuple[ThresholdResult, ...]


def live_verdict(run_dir: str | Path, offered: int) -> LiveVerdict:
    """Per-workload statistics and each threshold judged over the samples recorded so far.

    ``offered`` is how many arrivals were due by now (the master knows the schedule;
    the samples only hold those that finished).
    """
    run = load_run(run_dir)
    whole = run_stats(run).whole
    unique = {(t.workload, t.metric, t.limit): t for t in run.scenario.thresholds}.values()
    results = tuple(judge_threshold(t, whole.workload(t.workload), SO_FAR) for t in unique)
    rows = []
    for stats in whole.workloads:
        mine = [r for r in results if r.workload == stats.workload]
        counts = stats.counts
        rows.append(
            LiveRow(
                workload=stats.workload,
                recorded=counts.calls,
                ok=counts.successes,
                failed=counts.failures,
                shed=counts.shed,
                error_rate=counts.error_rate,
                p50_ms=stats.latency.p50,
                p95_ms=stats.latency.p95,
                timed=stats.latency.count,
                p95_ttft_ms=stats.ttft.p95,
                thresholds=", ".join(f"{r.metric} {r.status}" for r in mine),
            )
        )
    return LiveVerdict(offered, whole.total.calls, tuple(rows), results)
