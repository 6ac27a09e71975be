"""From statistics to a verdict: thresholds, run validity, jumps after sustain, recovery.

A threshold with no samples is "not measured", never a pass; a run whose driver
fell behind or lost samples is invalid rather than failed; and a workload whose
failures jump in burst or recover is flagged even where no threshold covers it,
because a run once "passed" while 58% of one workload's requests were refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from reports.rundir import Run
from reports.stats import Counts, PhaseStats, RunStats, WorkloadStats
from reports.system import SystemStats
from scenario import Threshold

PASS = "pass"
FAIL = "FAIL"
NOT_MEASURED = "not measured"

# The phase every other phase is held against: the seed judges thresholds there.
BASELINE_PHASE = "sustain"
# The phase whose numbers must come back to the baseline's.
RECOVERY_PHASE = "recover"

# A failure or shed rate this far above sustain's (in absolute terms) is a jump.
JUMP_POINTS = 0.01
# Recovered: error rate within this of sustain's, and p95 within this ratio of it...
RECOVER_ERROR_POINTS = 0.01
RECOVER_P95_RATIO = 1.2
# ...or within this many ms of it: +6 ms on a 20 ms read is jitter, not a deployment
# that stayed degraded.
RECOVER_P95_SLACK_MS = 50.0

JUMP_RULE = (
    f"a workload is flagged when its failure rate (failed, timeout, abandoned) or its shed "
    f"rate in a phase after {BASELINE_PHASE} is more than {JUMP_POINTS * 100:g} percentage "
    f"point above its {BASELINE_PHASE} rate"
)
RECOVERY_RULE = (
    f"a workload recovered when, for requests offered in {RECOVERY_PHASE}, its error rate is at "
    f"most {RECOVER_ERROR_POINTS * 100:g} percentage point above {BASELINE_PHASE}'s and its p95 "
    f"latency is at most {RECOVER_P95_RATIO:g} x {BASELINE_PHASE}'s or at most "
    f"{RECOVER_P95_SLACK_MS:g} ms above it (p95 compared only when "
    f"{BASELINE_PHASE} had successes); the run recovered when every workload measured in both did"
)


@dataclass(frozen=True)
class ThresholdResult:
    """One threshold (or one workload that produced nothing) and what the run measured."""

    workload: str
    metric: str
    phase: str
    limit: float | None
    why: str
    measured: float | None
    samples: int
    status: str


@dataclass(frozen=True)
class Jump:
    """A workload whose failure or shed rate rose in a phase after the baseline."""

    workload: str
    phase: str
    kind: str
    baseline_rate: float
    rate: float
    count: int
    calls: int


@dataclass(frozen=True)
class RecoveryCheck:
    """One workload's recover numbers against its sustain numbers."""

    workload: str
    baseline: WorkloadStats
    recover: WorkloadStats
    status: str


@dataclass(frozen=True)
class Recovery:
    """Whether recover came back to sustain's numbers, workload by workload."""

    checks: tuple[RecoveryCheck, ...]
    status: str


RECOVERED = "recovered"
NOT_RECOVERED = "not recovered"


@dataclass(frozen=True)
class Verdict:
    """Everything the verdict rests on, and the exit code it implies."""

    invalid_reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    thresholds: tuple[ThresholdResult, ...]
    jumps: tuple[Jump, ...]
    recovery: Recovery | None

    @property
    def exit_code(self) -> int:
        """0 pass, 1 a threshold failed or was not measured, 2 the run is invalid."""
        if self.invalid_reasons:
            return 2
        return 0 if all(t.status == PASS for t in self.thresholds) else 1

    @property
    def word(self) -> str:
        return {0: "pass", 1: "fail", 2: "invalid"}[self.exit_code]


def judge(run: Run, stats: RunStats, system: SystemStats) -> Verdict:
    """The verdict of a run: validity first, then every threshold, jumps and recovery."""
    return Verdict(
        invalid_reasons=invalid_reasons(run, stats),
        warnings=warnings(run, system),
        thresholds=judge_thresholds(run, stats),
        jumps=jumps(stats),
        recovery=recovery(stats),
    )


def invalid_reasons(run: Run, stats: RunStats) -> tuple[str, ...]:
    """Why the run cannot be used as a result; empty when it can."""
    reasons = []
    recorded = stats.lateness.recorded
    if recorded != run.offered:
        reasons.append(
            f"recorded {recorded} samples but run.json says {run.offered} arrivals were offered"
        )
    reasons += [
        f"phase {p.name}: recorded {p.recorded} samples of {p.offered} offered"
        for p in stats.phases
        if p.recorded != p.offered
    ]
    stopped = run.meta.get("stopped", "completed")
    if stopped != "completed":
        reasons.append(
            f"the run did not complete (stopped: {stopped}); a partial run is not a result"
        )
    if run.meta.get("ended_at", "") is None:
        reasons.append("run.json has no ended_at: the run was killed before it ended")
    lateness = run.scenario.lateness
    fraction = stats.lateness.fraction
    if fraction is not None and fraction > lateness.max_late_fraction:
        reasons.append(
            f"{stats.lateness.late} of {recorded} dispatches were late (sent more than "
            f"{lateness.late_after_ms:g} ms after due, or never sent): {fraction:.2%}, above the "
            f"scenario's tolerance of {lateness.max_late_fraction:.2%}"
        )
    return tuple(reasons)


def warnings(run: Run, system: SystemStats) -> tuple[str, ...]:
    """Things a reader must know that do not by themselves invalidate the run."""
    return tuple(
        f"{g.probe} may have been the bottleneck: {g.why}" for g in system.generators if g.busy
    )


def judge_thresholds(run: Run, stats: RunStats) -> tuple[ThresholdResult, ...]:
    """Each threshold judged on requests offered in its phase, plus workloads with no samples.

    A workload in the mix that produced no sample in the whole run gets its own
    "not measured" row even when no threshold names it: absent is never a pass.
    """
    results = [_judge_in_phase(t, stats.phase(t.phase)) for t in run.scenario.thresholds]
    for name, share in run.scenario.mix.items():
        if share > 0 and stats.whole.workload(name).counts.calls == 0:
            results.append(
                ThresholdResult(
                    name, "samples", "whole run", None, "in the mix", None, 0, NOT_MEASURED
                )
            )
    return tuple(results)


def _judge_in_phase(threshold: Threshold, phase: PhaseStats | None) -> ThresholdResult:
    workload = phase.by_offer.workload(threshold.workload) if phase else None
    return judge_threshold(threshold, workload, threshold.phase)


def judge_threshold(
    threshold: Threshold, stats: WorkloadStats | None, where: str
) -> ThresholdResult:
    """One threshold against one workload's statistics (None: nothing was measured)."""
    measured, samples = metric_value(stats, threshold.metric) if stats else (None, 0)
    status = NOT_MEASURED if measured is None else PASS if measured <= threshold.limit else FAIL
    return ThresholdResult(
        threshold.workload,
        threshold.metric,
        where,
        threshold.limit,
        threshold.why,
        measured,
        samples,
        status,
    )


def metric_value(stats: WorkloadStats, metric: str) -> tuple[float | None, int]:
    """A threshold metric's value for one workload, and the sample count it rests on."""
    if metric == "error_rate":
        # Accepted work nobody can verify is never a pass: the rate is not measured.
        if stats.counts.after.unverified:
            return None, stats.counts.calls
        return stats.counts.error_rate, stats.counts.calls
    name, _, rest = metric.partition("_")
    source = stats.ttft if rest == "ttft_ms" else stats.latency
    return getattr(source, name), source.count


def jumps(stats: RunStats) -> tuple[Jump, ...]:
    """Failure and shed rates that rose after the baseline phase, per workload."""
    baseline = stats.phase(BASELINE_PHASE)
    if baseline is None:
        return ()
    later = stats.phases[stats.phases.index(baseline) + 1 :]
    found = []
    for phase in later:
        for now in phase.by_offer.workloads:
            before = baseline.by_offer.workload(now.workload).counts
            if not before.calls or not now.counts.calls:
                continue
            found += _rate_jumps(now.workload, phase.name, before, now.counts)
    return tuple(found)


def _rate_jumps(workload: str, phase: str, before: Counts, now: Counts) -> list[Jump]:
    pairs = (
        ("failure", before.failure_rate, now.failure_rate, now.failures),
        ("shed", before.shed_rate, now.shed_rate, now.shed),
    )
    return [
        Jump(workload, phase, kind, old, new, count, now.calls)
        for kind, old, new, count in pairs
        if new - old > JUMP_POINTS
    ]


def recovery(stats: RunStats) -> Recovery | None:
    """Whether the recovery phase came back to the baseline's numbers; None without both."""
    baseline, recover = stats.phase(BASELINE_PHASE), stats.phase(RECOVERY_PHASE)
    if baseline is None or recover is None:
        return None
    checks = tuple(
        RecoveryCheck(before.workload, before, after, _recovered(before, after))
        for before, after in zip(
            baseline.by_offer.workloads, recover.by_offer.workloads, strict=True
        )
    )
    measured = [c.status for c in checks if c.status != NOT_MEASURED]
    if not measured:
        status = NOT_MEASURED
    else:
        status = RECOVERED if all(s == RECOVERED for s in measured) else NOT_RECOVERED
    return Recovery(checks, status)


def _recovered(before: WorkloadStats, after: WorkloadStats) -> str:
    if not before.counts.calls or not after.counts.calls:
        return NOT_MEASURED
    errors_back = after.counts.error_rate <= before.counts.error_rate + RECOVER_ERROR_POINTS
    p95_back = before.latency.p95 is None or (
        after.latency.p95 is not None
        and after.latency.p95
        <= max(RECOVER_P95_RATIO * before.latency.p95, before.latency.p95 + RECOVER_P95_SLACK_MS)
    )
    return RECOVERED if errors_back and p95_back else NOT_RECOVERED
