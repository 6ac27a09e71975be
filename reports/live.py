"""The verdict so far, for the web UI while a run is going: the same truth as the report.

An operator exploring by hand wants to see which thresholds hold at the rate they
chose, before the run ends. This reads the run directory as the final report does
(nearest-rank over successes, counts beside every percentile, no samples = not
measured) and judges each threshold over every sample recorded so far, since an
exploratory run has no sustain phase to judge in. It also says whether the run is
still valid (the driver's lateness so far against the scenario's tolerance), and
once the run has ended, the report's own verdict line instead of a guess; a run the
operator stopped judges no threshold at all, as its report judges none.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine import samples
from engine.run_record import RunRecord
from engine.samples import OPERATOR_STOP
from reports.rundir import Run, load_run
from reports.stats import run_stats
from reports.summary import SUMMARY_FILE, read_summary
from reports.thresholds import ThresholdResult, Within, judge_threshold

# Where a live threshold was judged: over the whole run so far.
SO_FAR = "so far"
# What the tab says for a run stopped before its report exists.
INTERRUPTED = "interrupted: invalid (a partial run is not a result)"
STOPPED = "stopped by the operator: invalid (a partial run is not a result)"


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
    thresholds: tuple[ThresholdResult, ...]
    # Accepted work nobody could verify: its error rate is a floor, never a plain 0.00%.
    unverified: int = 0


@dataclass(frozen=True)
class Validity:
    """The driver's lateness so far against the scenario's tolerance."""

    recorded: int
    late: int
    fraction: float | None
    tolerance: float
    late_after_ms: float
    closed_loop: bool = False

    @property
    def valid(self) -> bool:
        """A closed loop has no schedule to fall behind; open arrival is valid within tolerance."""
        return self.closed_loop or self.fraction is None or self.fraction <= self.tolerance


@dataclass(frozen=True)
class LiveVerdict:
    """The tab's content: counts, validity, rows, and the final verdict once there is one."""

    offered: int
    recorded: int
    rows: tuple[LiveRow, ...]
    thresholds: tuple[ThresholdResult, ...]
    validity: Validity
    final: str | None
    # The operator stopped the run: what it cut off says nothing of the platform, so no
    # threshold is judged (the report judges none either).
    stopped: bool = False


def final_verdict(run_dir: Path, record: RunRecord) -> str | None:
    """The report's verdict line once the run has ended; "interrupted" before its report."""
    if (run_dir / SUMMARY_FILE).exists():
        try:
            return read_summary(run_dir).headline
        except (OSError, ValueError):  # msgspec's DecodeError is a ValueError
            return None
    if record.stopped == OPERATOR_STOP:
        return STOPPED
    if record.stopped == samples.INTERRUPTED:
        return INTERRUPTED
    return None


def live_verdict(run_dir: str | Path, offered: int | None) -> LiveVerdict:
    """Per-workload statistics and each threshold judged over the samples recorded so far.

    ``offered`` is how many arrivals were due by now (the master knows the schedule;
    the samples only hold those that finished); None once the run has ended, when
    run.json's own count is final.
    """
    with load_run(run_dir) as run:
        return _live(run, offered)


def _live(run: Run, offered: int | None) -> LiveVerdict:
    stats = run_stats(run)
    whole = stats.whole
    ended = offered is None
    stopped = ended and run.stopped_by_operator
    unique = {(t.workload, t.metric, t.limit): t for t in run.scenario.thresholds}.values()
    results = tuple(
        judge_threshold(t, whole.workload(t.workload), SO_FAR, Within(run.samples))
        for t in unique
        if t.workload in run.workloads and not stopped
    )
    rows = []
    for workload in whole.workloads:
        counts = workload.counts
        rows.append(
            LiveRow(
                workload=workload.workload,
                recorded=counts.calls,
                ok=counts.successes,
                failed=counts.failures,
                shed=counts.shed,
                error_rate=counts.error_rate,
                p50_ms=workload.latency.p50,
                p95_ms=workload.latency.p95,
                timed=workload.latency.count,
                p95_ttft_ms=workload.ttft.p95,
                thresholds=tuple(r for r in results if r.workload == workload.workload),
                unverified=counts.after.unverified,
            )
        )
    lateness = run.scenario.lateness
    validity = Validity(
        recorded=stats.lateness.recorded,
        late=stats.lateness.late,
        fraction=stats.lateness.fraction,
        tolerance=lateness.max_late_fraction,
        late_after_ms=lateness.late_after_ms,
        closed_loop=run.closed_loop,
    )
    return LiveVerdict(
        offered=run.offered if offered is None else offered,
        recorded=whole.total.calls,
        rows=tuple(rows),
        thresholds=results,
        validity=validity,
        final=final_verdict(run.path, run.record) if ended else None,
        stopped=stopped,
    )
