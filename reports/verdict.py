"""From statistics to a verdict: thresholds in every phase they name, validity, jumps, recovery.

A threshold with no samples is "not measured", never a pass; a run whose driver
fell behind or lost samples is invalid rather than failed; a workload skipped at
preflight is not measured, not forgotten; a workload whose failures jump in burst
or recover is flagged even where no threshold covers it, because a run once
"passed" while 58% of one workload's requests were refused; and a recover phase
that stays broken fails the run (unless the scenario calls recovery
informational), because "did it come back" is what the run is for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from reports.rundir import Run
from reports.stats import Counts, PhaseStats, RunStats, WorkloadStats, timed_successes
from reports.system import SystemStats
from scenario import Threshold

PASS = "pass"
FAIL = "FAIL"
NOT_MEASURED = "not measured"
NOT_JUDGED = "not judged"

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
# Arrivals in the sliding window time to recover is judged over: enough that one slow
# request is not a p95 (nearest rank 19 of 20), few enough to resolve seconds at 12/s.
RECOVERY_WINDOW = 20
# A window of the baseline's own traffic falls outside its band by chance at most this
# rarely, so a steady platform (or steady injected faults) is not called "never".
BAND_CONFIDENCE = 0.99
# Outcomes that count as errors whatever the shed rule says (stats.Counts.failures).
ERROR_OUTCOMES = frozenset({"failed", "timeout", "abandoned"})

JUMP_RULE = (
    f"a workload is flagged when its failure rate (failed, timeout, abandoned) or its shed "
    f"rate in a phase after {BASELINE_PHASE} is more than {JUMP_POINTS * 100:g} percentage "
    f"point above its {BASELINE_PHASE} rate"
)
RECOVERY_RULE = (
    f"{BASELINE_PHASE}'s band for a workload is an error rate at most "
    f"{RECOVER_ERROR_POINTS * 100:g} percentage point above {BASELINE_PHASE}'s and a p95 latency "
    f"at most {RECOVER_P95_RATIO:g} x {BASELINE_PHASE}'s or at most {RECOVER_P95_SLACK_MS:g} ms "
    f"above it, each widened to what a window of {BASELINE_PHASE}'s own traffic stays within "
    f"{BAND_CONFIDENCE:.0%} of the time, so chance in a small window is not a finding. Over "
    f"the arrivals offered "
    f"in {RECOVERY_PHASE}, in order of their due time, a window of {RECOVERY_WINDOW} consecutive "
    f"arrivals slides one at a time; time to recover is the seconds from the start of "
    f"{RECOVERY_PHASE} to the first arrival from which every window is inside the band (p95 "
    f"compared only over windows of {RECOVERY_WINDOW} successes: below that a nearest-rank p95 "
    f"is the window's maximum), and 'never, within the phase' when the last window is still "
    f"outside it. A workload that "
    f"recovers within the phase recovered; one whose {BASELINE_PHASE} failed its own thresholds "
    f"is not judged (there is no good band to come back to)"
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
    """One workload's recover numbers against its sustain band, and when it came back.

    ``time_to_recover_s`` is None unless the status is "recovered"; ``window`` is how
    many arrivals each sliding window held (fewer than RECOVERY_WINDOW when the phase
    had fewer).
    """

    workload: str
    baseline: WorkloadStats
    recover: WorkloadStats
    status: str
    time_to_recover_s: float | None = None
    window: int = 0


@dataclass(frozen=True)
class Recovery:
    """Whether recover came back to sustain's numbers, workload by workload."""

    checks: tuple[RecoveryCheck, ...]
    status: str
    required: bool = True


RECOVERED = "recovered"
NOT_RECOVERED = "not recovered"
NEVER = "never, within the phase"


@dataclass(frozen=True)
class Verdict:
    """Everything the verdict rests on, and the exit code it implies."""

    invalid_reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    thresholds: tuple[ThresholdResult, ...]
    jumps: tuple[Jump, ...]
    recovery: Recovery | None
    skipped: dict[str, str]

    @property
    def unrecovered(self) -> tuple[RecoveryCheck, ...]:
        """Workloads that did not come back to sustain's band within recover."""
        if self.recovery is None:
            return ()
        return tuple(c for c in self.recovery.checks if c.status == NOT_RECOVERED)

    @property
    def exit_code(self) -> int:
        """0 pass; 1 a threshold failed or was not measured, or a required recovery did not
        happen; 2 the run is invalid."""
        if self.invalid_reasons:
            return 2
        if any(t.status != PASS for t in self.thresholds):
            return 1
        recovery_fails = self.recovery is not None and self.recovery.required
        return 1 if recovery_fails and self.unrecovered else 0

    @property
    def word(self) -> str:
        return {0: "pass", 1: "fail", 2: "invalid"}[self.exit_code]


def judge(run: Run, stats: RunStats, system: SystemStats) -> Verdict:
    """The verdict of a run: validity first, then every threshold, jumps and recovery.

    A run the operator stopped is INVALID for that reason and blames the platform for
    nothing: no threshold, jump or recovery is held against it (its numbers stay in the
    report, and what the Stop cut off is no error: stats.Counts.stop_cut).
    """
    if run.stopped_by_operator:
        return Verdict(
            invalid_reasons=invalid_reasons(run, stats),
            warnings=warnings(run, system),
            thresholds=(),
            jumps=(),
            recovery=None,
            skipped=skipped(run),
        )
    thresholds = judge_thresholds(run, stats)
    return Verdict(
        invalid_reasons=invalid_reasons(run, stats),
        warnings=warnings(run, system),
        thresholds=thresholds,
        jumps=jumps(stats),
        recovery=recovery(run, stats, thresholds),
        skipped=skipped(run),
    )


def skipped(run: Run) -> dict[str, str]:
    """Workloads preflight left out of the run, each with its reason (run.json's ``skipped``)."""
    raw = run.meta.get("skipped") or {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def unserved(run: Run) -> dict[str, str]:
    """Users mode: workloads of the mix that no user ran in the whole run, each with why.

    Locust gives whole users by weight, so a small share gets none below some user
    count; run.json records, per step, the workloads left out and the count that gives
    each one a user. Only a workload with no request in the whole run is listed.
    """
    at: dict[str, list[int]] = {}
    needs: dict[str, int] = {}
    for phase in run.phases:
        step = run.users_step(phase.name) or {}
        for name, count in (step.get("unserved") or {}).items():
            at.setdefault(str(name), []).append(int(step.get("users", 0)))
            needs[str(name)] = int(count)
    sent = {name: sum(p.offered.get(name, 0) for p in run.phases) for name in at}
    mix = run.scenario.mix
    return {
        name: (
            f"no user: Locust gives whole users by weight, and {_counts(at[name])} users give "
            f"this {mix.get(name, 0.0):.1%} share none; {needs[name]} users give it one"
        )
        for name in sorted(at, key=lambda n: (needs[n], n))
        if sent[name] == 0 and name not in skipped(run)
    }


def _counts(users: list[int]) -> str:
    return ", ".join(str(n) for n in sorted(set(users)))


def invalid_reasons(run: Run, stats: RunStats) -> tuple[str, ...]:
    """Why the run cannot be used as a result; empty when it can."""
    reasons = []
    recorded = stats.lateness.recorded
    if recorded != run.offered:
        offered = "requests its users sent" if run.closed_loop else "arrivals were offered"
        reasons.append(f"recorded {recorded} samples but run.json says {run.offered} {offered}")
    reasons += [
        f"phase {p.name}: recorded {p.recorded} samples of {p.offered} offered"
        for p in stats.phases
        if p.recorded != p.offered
    ]
    stopped = run.meta.get("stopped", "completed")
    if run.stopped_by_operator:
        at = run.meta.get("duration_s")
        when = f" at t = {at:.1f} s" if isinstance(at, int | float) else ""
        reasons.append(f"stopped by the operator{when}; a partial run is not a result")
    elif stopped != "completed":
        reasons.append(
            f"the run did not complete (stopped: {stopped}); a partial run is not a result"
        )
    if run.meta.get("ended_at", "") is None:
        reasons.append("run.json has no ended_at: the run was killed before it ended")
    lateness = run.scenario.lateness
    fraction = stats.lateness.fraction
    # A closed loop has no schedule to fall behind: a request is due when its user sends it.
    if run.closed_loop:
        return tuple(reasons)
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
    """Each threshold judged on requests offered in each of its phases, plus absent workloads.

    A workload in the mix that produced no sample in the whole run gets its own
    "not measured" row even when no threshold names it (with why, when users mode
    gave it no user), and so does one preflight skipped: absent is never a pass.
    """
    results = [
        _judge_in_phase(t, name, stats.phase(name))
        for t in run.scenario.thresholds
        for name in t.phases
    ]
    results += [
        ThresholdResult(name, "samples", "preflight", None, reason, None, 0, NOT_MEASURED)
        for name, reason in skipped(run).items()
    ]
    no_user = unserved(run)
    for name, share in run.scenario.mix.items():
        if share > 0 and stats.whole.workload(name).counts.calls == 0:
            why = no_user.get(name, "in the mix")
            results.append(
                ThresholdResult(name, "samples", "whole run", None, why, None, 0, NOT_MEASURED)
            )
    return tuple(results)


def _judge_in_phase(threshold: Threshold, name: str, phase: PhaseStats | None) -> ThresholdResult:
    workload = phase.by_offer.workload(threshold.workload) if phase else None
    return judge_threshold(threshold, workload, name)


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


def recovery(
    run: Run, stats: RunStats, thresholds: tuple[ThresholdResult, ...] = ()
) -> Recovery | None:
    """Whether each workload came back to the baseline's band in recover, and how fast.

    None without both phases. A workload whose baseline failed one of its own
    thresholds is "not judged": coming back to a broken band proves nothing.
    """
    baseline, recover = stats.phase(BASELINE_PHASE), stats.phase(RECOVERY_PHASE)
    if baseline is None or recover is None:
        return None
    failed_baseline = {
        t.workload for t in thresholds if t.phase == BASELINE_PHASE and t.status == FAIL
    }
    samples = run.samples[run.samples["phase"] == RECOVERY_PHASE]
    sustain = run.samples[run.samples["phase"] == BASELINE_PHASE]
    checks = []
    for before, after in zip(baseline.by_offer.workloads, recover.by_offer.workloads, strict=True):
        if not before.counts.calls or not after.counts.calls:
            checks.append(RecoveryCheck(before.workload, before, after, NOT_MEASURED))
        elif before.workload in failed_baseline:
            checks.append(RecoveryCheck(before.workload, before, after, NOT_JUDGED))
        else:
            seconds, window = time_to_recover(
                samples[samples["workload"] == before.workload],
                sustain[sustain["workload"] == before.workload],
                before.counts.error_rate or 0.0,
                recover.window.start_s,
                run.scenario.shed_counts_as_error,
            )
            status = NOT_RECOVERED if seconds is None else RECOVERED
            checks.append(RecoveryCheck(before.workload, before, after, status, seconds, window))
    return Recovery(tuple(checks), _overall(checks), run.scenario.judging.recovery_required)


def _overall(checks: list[RecoveryCheck]) -> str:
    statuses = {c.status for c in checks}
    for status in (NOT_RECOVERED, RECOVERED, NOT_JUDGED):
        if status in statuses:
            return status
    return NOT_MEASURED


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) <= k)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def _error_limit(window: int, rate: float) -> int:
    """Most errors a window may hold: sustain's rate + the points, or chance at sustain's rate.

    The chance part is the count a window of sustain's own traffic stays under with
    probability BAND_CONFIDENCE, so injected faults at a steady rate are not "never".
    """
    by_points = math.floor((rate + RECOVER_ERROR_POINTS) * window + 1e-9)
    by_chance = next(
        k for k in range(window + 1) if _binomial_cdf(k, window, rate) >= BAND_CONFIDENCE
    )
    return max(by_points, by_chance)


def _p95_limit(baseline_ms: np.ndarray) -> float:
    """The highest in-band p95 of a window of RECOVERY_WINDOW timed successes.

    The larger of RECOVER_P95_RATIO x sustain's p95, sustain's p95 +
    RECOVER_P95_SLACK_MS, and the sustain latency that a window of sustain's own
    traffic keeps its p95 under with probability BAND_CONFIDENCE (a p95 over 20
    requests is their 19th: one in four such windows of a steady platform lies
    above the platform's own p95).
    """
    ordered = np.sort(baseline_ms)
    n = len(ordered)
    p95 = ordered[(95 * n + 99) // 100 - 1]
    rank = (95 * RECOVERY_WINDOW + 99) // 100
    # Smallest order statistic j with P(window p95 <= x_j) >= confidence; monotone in j.
    low, high = 1, n
    while low < high:
        j = (low + high) // 2
        if 1 - _binomial_cdf(rank - 1, RECOVERY_WINDOW, j / n) >= BAND_CONFIDENCE:
            high = j
        else:
            low = j + 1
    return float(max(RECOVER_P95_RATIO * p95, p95 + RECOVER_P95_SLACK_MS, ordered[low - 1]))


def time_to_recover(
    samples: pd.DataFrame,
    baseline: pd.DataFrame,
    baseline_rate: float,
    start_s: float,
    shed_is_error: bool,
) -> tuple[float | None, int]:
    """Seconds from ``start_s`` until every sliding window is inside the baseline's band.

    Returns (None, window) when the last window is still outside it: never, within
    the phase. Windows are RECOVERY_WINDOW consecutive arrivals by due time (all of
    them when there are fewer); p95 is nearest-rank over each window's timed
    successes and is compared only when the window has RECOVERY_WINDOW of them
    and the baseline had some.
    """
    samples = samples.sort_values("due_s", kind="stable")
    window = min(RECOVERY_WINDOW, len(samples))
    errors = samples["outcome"].isin(ERROR_OUTCOMES | ({"shed"} if shed_is_error else set()))
    error_counts = sliding_window_view(errors.to_numpy(dtype="int64"), window).sum(axis=1)
    good = error_counts <= _error_limit(window, baseline_rate)
    baseline_ms = baseline.loc[timed_successes(baseline), "latency_ms"].to_numpy(dtype="float64")
    if len(baseline_ms):
        # Below RECOVERY_WINDOW successes a nearest-rank p95 is the window's maximum:
        # such a window is judged by its errors alone.
        latency = samples["latency_ms"].where(timed_successes(samples)).to_numpy(dtype="float64")
        windows = sliding_window_view(latency, window)
        full = (~np.isnan(windows)).sum(axis=1) >= RECOVERY_WINDOW
        good &= ~full | (np.nan_to_num(_window_p95(windows), nan=np.inf) <= _p95_limit(baseline_ms))
    if not good[-1]:
        return None, window
    bad = np.flatnonzero(~good)
    if len(bad) == 0:
        return 0.0, window
    due = samples["due_s"].to_numpy(dtype="float64")
    return max(0.0, float(due[int(bad[-1]) + 1]) - start_s), window


def _window_p95(windows: np.ndarray) -> np.ndarray:
    """Nearest-rank p95 of each row over its non-NaN values; NaN for a row with none."""
    ordered = np.sort(windows, axis=1)
    counts = (~np.isnan(windows)).sum(axis=1)
    rank = np.maximum((95 * counts + 99) // 100 - 1, 0)
    values = ordered[np.arange(len(ordered)), rank]
    return np.where(counts > 0, values, np.nan)
