"""From statistics to a verdict: thresholds in every phase they name, validity, jumps, recovery.

A check fails when what is known already breaks its limit: failures counted
against all calls (accepted work that cannot be verified counted as done, missing
observations as successes), so "at least 51.4% failed; 12 more not verifiable" is
a failure, not a shrug; "not measured" is left for a check the known part passes
and the unknown part could still tip. A check whose plan offered fewer arrivals
than its minimum (scenario.yaml ``judging.min_counts``) is "inconclusive": not a
failure the platform committed and not a pass. A run whose driver fell behind or
lost samples is invalid rather than failed; a workload skipped at preflight is not
measured, not forgotten; a workload the scenario gives no share is not judged at
all; a workload whose failures jump in burst or recover is flagged even where no
threshold covers it, because a run once "passed" while 58% of one workload's
requests were refused; and a recover phase that stays broken fails the run
(unless the scenario calls recovery informational), because "did it come back"
is what the run is for. "Recovered" is said only of a workload whose sustain
passed every threshold of its own on what is known: there is no good band to
come back to otherwise.

The exit code orders what a CI job must tell apart: invalid (2) before fail (1)
before inconclusive (2) before pass (0). A definite failure of the platform is
reported as one even when other checks could not be judged; a run that could not
judge a check and found nothing wrong is no pass; an invalid run judges nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from engine.followups import LOST, NOT_VERIFIABLE
from engine.trust import INSECURE_WARNING
from inputs.phases import BASELINE_PHASE, RECOVERY_PHASE
from inputs.thresholds import Threshold
from reports import formatting as fmt
from reports.dataset import Samples, quoted
from reports.followups import AFTER
from reports.rundir import TOUCHED, Run
from reports.stats import (
    MEASURES,
    METRIC_MEASURES,
    Counts,
    PhaseStats,
    RunStats,
    WorkloadStats,
    measured_by,
)
from reports.system import SystemStats

if TYPE_CHECKING:
    from reports.faults import WindowReport

PASS = "pass"
FAIL = "FAIL"
NOT_MEASURED = "not measured"
INCONCLUSIVE = "inconclusive"
NOT_JUDGED = "not judged"


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
# A phase's thresholds, sustain's band and recover's arrivals leave out what a fault window
# touched (reports/rundir.py's in_fault, FALSE in a run without windows): its section judges it.
UNTOUCHED = f"AND NOT {TOUCHED}"

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
    f"{RECOVERY_PHASE} to the first arrival whose window is inside the band and from which "
    f"every window keeps its errors inside it and the p95 over all the rest of the phase "
    f"stays inside it (p95 compared only over {RECOVERY_WINDOW} successes or more: below that "
    f"a nearest-rank p95 is the maximum; a window's p95 is its 19th value, so two slow "
    f"requests at the phase's end are not a platform that stayed degraded), and 'never, "
    f"within the phase' when no arrival qualifies. Lost accepted work counts as an error; "
    f"accepted work that cannot be "
    f"verified must be inside the band counted either way, else recovery is not measured. "
    f"A workload that recovers within the phase recovered; one whose {BASELINE_PHASE} did not "
    f"pass every threshold of its own is not judged (there is no good band to come back to), "
    f"and one with fewer arrivals in either phase than the scenario's minimum is inconclusive"
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
    # The fewest observations the check is judged on, and what it read, in words with units:
    # the measured value, or why that value alone does not decide it.
    min_count: int = 1
    reading: str = ""
    # Accepted work in the slice whose fate is unknown (error rates only).
    unverified: int = 0


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
    # Why a workload was not judged, not measured or inconclusive; empty otherwise.
    why: str = ""


@dataclass(frozen=True)
class Recovery:
    """Whether recover came back to sustain's numbers, workload by workload."""

    checks: tuple[RecoveryCheck, ...]
    status: str
    required: bool = True


# How a warning about files a killed writer cut off begins (the console prints it too).
DAMAGED = "files cut off, read up to the cut: "

RECOVERED = "recovered"
NOT_RECOVERED = "not recovered"
NEVER = "never, within the phase"


# Words of the count line for each check status, in the order the line gives them: what
# fails the run first, then what leaves it undecided, then what held.
CHECK_WORDS = (
    (FAIL, "failed"),
    (NOT_MEASURED, NOT_MEASURED),
    (NOT_RECOVERED, NOT_RECOVERED),
    (INCONCLUSIVE, INCONCLUSIVE),
    (PASS, "passed"),
    (RECOVERED, RECOVERED),
    (NOT_JUDGED, "recovery not judged"),
)
FAILING = frozenset({FAIL, NOT_MEASURED, NOT_RECOVERED})
EXIT_WORDS = {0: "pass", 1: "fail", 2: "invalid"}


@dataclass(frozen=True)
class Verdict:
    """Everything the verdict rests on, and the exit code it implies."""

    invalid_reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    thresholds: tuple[ThresholdResult, ...]
    jumps: tuple[Jump, ...]
    recovery: Recovery | None
    skipped: dict[str, str]
    # Workloads the scenario gives no share: listed once, judged never.
    not_offered: tuple[str, ...] = ()
    # Each fault window and what the platform did about it (reports/faults.py).
    faults: tuple[WindowReport, ...] = ()

    @property
    def unrecovered(self) -> tuple[RecoveryCheck, ...]:
        """Workloads that did not come back to sustain's band within recover."""
        if self.recovery is None:
            return ()
        return tuple(c for c in self.recovery.checks if c.status == NOT_RECOVERED)

    @property
    def checks(self) -> tuple[str, ...]:
        """The status of every check the exit code rests on: each threshold in each phase,
        and each workload's recovery when the scenario requires it."""
        statuses = [t.status for t in self.thresholds]
        if self.recovery is not None and self.recovery.required:
            statuses += [c.status for c in self.recovery.checks]
        statuses += [c.status for w in self.faults for c in w.checks if c.judged]
        return tuple(statuses)

    @property
    def exit_code(self) -> int:
        """2 invalid; else 1 a check failed or was not measured, or a required recovery did
        not happen; else 2 a check could not be judged on so few arrivals; else 0."""
        if self.invalid_reasons:
            return 2
        checks = set(self.checks)
        if FAILING & checks:
            return 1
        return 2 if INCONCLUSIVE in checks else 0

    @property
    def word(self) -> str:
        """pass, fail, invalid or inconclusive: the exit code in words (2 is said two ways)."""
        if self.exit_code == 2 and not self.invalid_reasons:
            return INCONCLUSIVE
        return EXIT_WORDS[self.exit_code]

    def tally(self) -> tuple[tuple[str, int], ...]:
        """(words, count) for each check status present, in CHECK_WORDS order; the counts
        sum to ``len(self.checks)``, so a count line counts one thing on both sides."""
        statuses = self.checks
        return tuple(
            (words, statuses.count(status)) for status, words in CHECK_WORDS if status in statuses
        )


def judge(run: Run, stats: RunStats, system: SystemStats) -> Verdict:
    """The verdict of a run: validity first, then every threshold, jumps and recovery.

    A run the operator stopped is INVALID for that reason and blames the platform for
    nothing: no threshold, jump or recovery is held against it (its numbers stay in the
    report, and what the Stop cut off is no error: stats.Counts.stop_cut).
    """
    # Asks recovery's question of each window with this module's functions, so it imports
    # them: imported here, where both are loaded.
    from reports.faults import fault_windows, undo_failures

    if run.stopped_by_operator:
        windows = fault_windows(run)
        return Verdict(
            invalid_reasons=undo_failures(windows) + invalid_reasons(run, stats),
            warnings=warnings(run, system),
            thresholds=(),
            jumps=(),
            recovery=None,
            skipped=skipped(run),
            not_offered=run.not_offered,
        )
    thresholds = judge_thresholds(run, stats)
    windows = fault_windows(run)
    return Verdict(
        invalid_reasons=undo_failures(windows) + invalid_reasons(run, stats),
        warnings=warnings(run, system),
        thresholds=thresholds,
        jumps=jumps(stats),
        recovery=recovery(run, stats, thresholds),
        skipped=skipped(run),
        not_offered=run.not_offered,
        faults=windows,
    )


def skipped(run: Run) -> dict[str, str]:
    """Workloads preflight left out of the run, each with its reason (run.json's ``skipped``)."""
    return dict(run.record.skipped)


def unserved(run: Run) -> dict[str, str]:
    """Users mode: workloads of the mix that no user ran in the whole run, each with why.

    Locust gives whole users by weight, so a small share gets none below some user
    count; run.json records, per step, the workloads left out and the count that gives
    each one a user. Only a workload with no request in the whole run is listed.
    """
    at: dict[str, list[int]] = {}
    needs: dict[str, int] = {}
    for phase in run.phases:
        step = run.users_step(phase.name)
        if step is None:
            continue
        for name, count in step.unserved.items():
            at.setdefault(name, []).append(step.users)
            needs[name] = count
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
        reasons.append(
            f"recorded {fmt.plural(recorded, 'sample')} but run.json says {run.offered} {offered}"
        )
    reasons += [
        f"phase {p.name}: recorded {fmt.plural(p.recorded, 'sample')} of {p.offered} offered"
        for p in stats.phases
        if p.recorded != p.offered
    ]
    stopped = run.record.stopped
    if run.stopped_by_operator:
        when = f" at t = {run.record.duration_s:.1f} s"
        reasons.append(f"stopped by the operator{when}; a partial run is not a result")
    elif stopped != "completed":
        reasons.append(
            f"the run did not complete (stopped: {stopped}); a partial run is not a result"
        )
    if run.record.ended_at is None:
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
    busy = tuple(
        f"{g.probe} may have been the bottleneck: {g.why}" for g in system.generators if g.busy
    )
    # False only where the run was told --insecure (older runs did not record it).
    unverified = (INSECURE_WARNING,) if run.record.tls_verified is False else ()
    # What a killed writer (or a full disk) cut off: the report reads what was written before.
    damaged = (f"{DAMAGED}{run.damage}",) if run.damage else ()
    return damaged + unverified + busy


def judge_thresholds(run: Run, stats: RunStats) -> tuple[ThresholdResult, ...]:
    """Each threshold judged on requests offered in each of its phases, plus absent workloads.

    A workload the scenario gives no share is not judged at all; one preflight
    skipped gets one "not measured" row with the reason instead of its thresholds; a
    workload with a share and no sample in the whole run gets an "inconclusive" row of
    its own even when no threshold names it (its plan, or users mode's user count, gave
    it no arrival: absent is never a pass).
    """
    left_out = skipped(run)
    judged = set(run.workloads) - set(left_out)
    results = [
        _judge_in_phase(
            t, name, stats.phase(name), Within(run.samples, f"phase = {quoted([name])} {UNTOUCHED}")
        )
        for t in run.scenario.thresholds
        if t.workload in judged
        for name in t.phases
    ]
    results += [
        ThresholdResult(
            name, "samples", "preflight", None, reason, None, 0, NOT_MEASURED, reading="none"
        )
        for name, reason in left_out.items()
    ]
    no_user = unserved(run)
    for name, share in run.scenario.mix.items():
        if share > 0 and name in judged and stats.whole.workload(name).counts.calls == 0:
            why = no_user.get(
                name, f"the plan offered no arrival of its {share:.1%} share; a longer run does"
            )
            results.append(
                ThresholdResult(
                    name, "samples", "whole run", None, why, None, 0, INCONCLUSIVE, reading="none"
                )
            )
    return tuple(results)


@dataclass(frozen=True)
class Within:
    """The samples a check's statistics were computed from: the run's, where ``where`` (SQL)
    holds."""

    samples: Samples
    where: str = "TRUE"


def _judge_in_phase(
    threshold: Threshold, name: str, phase: PhaseStats | None, samples: Within
) -> ThresholdResult:
    workload = phase.judged.workload(threshold.workload) if phase else None
    return judge_threshold(threshold, workload, name, samples)


def judge_threshold(
    threshold: Threshold, stats: WorkloadStats | None, where: str, samples: Within
) -> ThresholdResult:
    """One threshold against one workload's statistics over ``samples``, the slice they were
    computed from (stats None: nothing was offered)."""
    if threshold.metric == "error_rate":
        return _judge_rate(threshold, stats.counts if stats else Counts(), where)
    return _judge_latency(threshold, stats, where, samples)


def _result(
    threshold: Threshold,
    where: str,
    measured: float | None,
    samples: int,
    status: str,
    reading: str,
    unverified: int = 0,
) -> ThresholdResult:
    return ThresholdResult(
        threshold.workload,
        threshold.metric,
        where,
        threshold.limit,
        threshold.why,
        measured,
        samples,
        status,
        threshold.min_count,
        reading,
        unverified,
    )


def _judge_rate(threshold: Threshold, counts: Counts, where: str) -> ThresholdResult:
    """An error rate judged on what is known. Known errors over the calls (over the minimum
    when fewer were offered, the rest counted as successes) above the limit fail it,
    whatever the unverifiable work did; it passes only if it would with all of that work
    lost; in between it is not measured, with both figures."""
    calls, errors, need = counts.calls, counts.errors, threshold.min_count
    unverified = counts.after.unverified
    measured = counts.error_rate
    said = fmt.rate(measured)
    if errors / max(calls, need) > threshold.limit:
        if unverified:
            said = f"at least {said} failed; {unverified:,} more not verifiable"
        elif calls < need:
            said = (
                f"{said} ({errors:,} of {calls:,}): above the limit even had {need - calls:,} "
                "more arrivals all succeeded"
            )
        return _result(threshold, where, measured, calls, FAIL, said, unverified)
    if calls < need:
        said = f"{fmt.plural(calls, 'arrival')} offered; the check needs {need:,}"
        return _result(threshold, where, measured, calls, INCONCLUSIVE, said, unverified)
    worst = (errors + unverified) / calls
    if worst <= threshold.limit:
        if unverified:
            said += f"; a pass even were the {unverified:,} not verifiable all lost"
        return _result(threshold, where, measured, calls, PASS, said, unverified)
    said = f"{said} known, up to {fmt.rate(worst)}: {unverified:,} not verifiable"
    return _result(threshold, where, measured, calls, NOT_MEASURED, said, unverified)


def _judge_latency(
    threshold: Threshold, stats: WorkloadStats | None, where: str, samples: Within
) -> ThresholdResult:
    """A latency percentile over the timed successes. Over fewer than the minimum it fails
    only if it would with every missing observation at 0 ms; otherwise it is inconclusive
    (the plan offered too few) or not measured (the platform answered too few)."""
    name, _, rest = threshold.metric.partition("_")
    any_success = MEASURES[METRIC_MEASURES[rest]][1] == "ok = 1"
    source, timeable = None, 0
    if stats is not None:
        name, source = measured_by(threshold.metric, stats)
        timeable = stats.counts.calls if any_success else stats.timeable
    measured = getattr(source, name) if source is not None else None
    count, need = (source.count if source is not None else 0), threshold.min_count
    said = fmt.metric(threshold.metric, measured)
    if count >= need and measured is not None:
        status = PASS if measured <= threshold.limit else FAIL
        return _result(threshold, where, measured, count, status, said)
    observed = _observed(samples, threshold.workload, rest)
    floor = _padded_percentile(observed, _PERCENT[name], need)
    if floor is not None and floor > threshold.limit:
        said += (
            f" over {count:,}: at least {fmt.ms(floor)} ms even had {need - count:,} more "
            "answered at once"
        )
        return _result(threshold, where, measured, count, FAIL, said)
    if timeable < need:
        said = f"{fmt.count(timeable)} timed arrivals offered; the check needs {need:,}"
        return _result(threshold, where, measured, count, INCONCLUSIVE, said)
    said = f"{count:,} of {timeable:,} timed arrivals succeeded; the check needs {need:,}"
    return _result(threshold, where, measured, count, NOT_MEASURED, said)


# The percentile each latency metric's first word names ("max" is the 100th).
_PERCENT = {"p50": 50, "p95": 95, "p99": 99, "max": 100}


def _observed(samples: Within, workload: str, measure: str) -> np.ndarray:
    """The values a latency threshold is taken over, as its measure's statistics are (first
    tokens of ok == 1, the platform's time per step, timed successes' whole latency or their
    inter-token latency...). Read only when fewer than the check's minimum were observed, so
    they are few."""
    value, which = MEASURES[METRIC_MEASURES[measure]]
    return samples.samples.arrays(
        f"SELECT {value} AS v FROM samples WHERE ({samples.where}) AND workload = ? "
        f"AND {which} AND {value} IS NOT NULL",
        [workload],
    )["v"].astype("float64")


def _padded_percentile(values: np.ndarray, percent: int, total: int) -> float | None:
    """The nearest-rank percentile of ``values`` padded to ``total`` with zeros: the least it
    could be over ``total`` observations. None when that rank falls on a zero."""
    rank = (percent * total + 99) // 100
    missing = total - len(values)
    if rank <= missing:
        return None
    return float(np.sort(values)[rank - missing - 1])


def jumps(stats: RunStats) -> tuple[Jump, ...]:
    """Failure and shed rates that rose after the baseline phase, per workload."""
    baseline = stats.phase(BASELINE_PHASE)
    if baseline is None:
        return ()
    later = stats.phases[stats.phases.index(baseline) + 1 :]
    found = []
    for phase in later:
        for now in phase.judged.workloads:
            before = baseline.judged.workload(now.workload).counts
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
        if old is not None and new is not None and new - old > JUMP_POINTS
    ]


def recovery(
    run: Run, stats: RunStats, thresholds: tuple[ThresholdResult, ...] = ()
) -> Recovery | None:
    """Whether each workload came back to the baseline's band in recover, and how fast.

    None without both phases. A workload whose baseline did not pass every threshold
    of its own is "not judged": coming back to a broken or unknown band proves
    nothing. One with fewer arrivals than ``judging.min_counts.recovery`` in either
    phase is inconclusive. A workload skipped at preflight has its own row already.
    """
    baseline, recover = stats.phase(BASELINE_PHASE), stats.phase(RECOVERY_PHASE)
    if baseline is None or recover is None:
        return None
    unpassed: dict[str, list[str]] = {}
    for t in thresholds:
        if t.phase == BASELINE_PHASE and t.status != PASS:
            unpassed.setdefault(t.workload, []).append(f"{fmt.metric_name(t.metric)} {t.status}")
    need = run.scenario.judging.min_counts.recovery
    left_out = skipped(run)
    checks = []
    for before, after in zip(baseline.judged.workloads, recover.judged.workloads, strict=True):
        name = before.workload
        if name in left_out:
            continue
        if min(before.counts.calls, after.counts.calls) < need:
            why = (
                f"{fmt.plural(before.counts.calls, 'arrival')} in {BASELINE_PHASE} and "
                f"{after.counts.calls:,} in {RECOVERY_PHASE}; recovery needs {need:,} in each"
            )
            checks.append(RecoveryCheck(name, before, after, INCONCLUSIVE, why=why))
        elif name in unpassed:
            why = f"{BASELINE_PHASE} did not pass: " + ", ".join(unpassed[name])
            checks.append(RecoveryCheck(name, before, after, NOT_JUDGED, why=why))
        else:
            checks.append(_recovery_check(run, (before, after), recover.window.start_s))
    return Recovery(tuple(checks), _overall(checks), run.scenario.judging.recovery_required)


@dataclass(frozen=True)
class RecoverArrivals:
    """One workload's arrivals offered in recover, in order of due time (then of the file),
    as recovery reads them: due, a known error (a failure, lost work), accepted work nobody
    could verify, and the latency of each timed success (NaN otherwise)."""

    due: np.ndarray
    errors: np.ndarray
    unverified: np.ndarray
    latency: np.ndarray

    @classmethod
    def read(
        cls,
        samples: Samples,
        workload: str,
        shed_is_error: bool,
        span: tuple[float, float] | None = None,
    ) -> RecoverArrivals:
        """Recover's arrivals no fault window touched, or (``span``) those due from its start
        to its end, as a window's time to recover reads them."""
        outcomes = ERROR_OUTCOMES | ({"shed"} if shed_is_error else set())
        where = f"phase = ? {UNTOUCHED}"
        params: list[object] = [RECOVERY_PHASE]
        if span is not None:
            where, params = f"due_s >= ? AND due_s < ? {UNTOUCHED}", [*span]
        got = samples.arrays(
            f"SELECT due_s, outcome IN ({quoted(sorted(outcomes))}) OR {AFTER} IN "
            f"({quoted(LOST)}) AS errors, {AFTER} = '{NOT_VERIFIABLE}' AS unverified, "
            "CASE WHEN timed THEN latency_ms END AS latency FROM samples "
            f"WHERE {where} AND workload = ? ORDER BY due_s, seq",
            [*params, workload],
        )
        return cls(
            got["due_s"].astype("float64"),
            got["errors"].astype(bool),
            got["unverified"].astype(bool),
            got["latency"].astype("float64"),
        )


def baseline_latencies(samples: Samples, workload: str) -> np.ndarray:
    """The timed successes' latencies of ``workload`` in the baseline phase that no fault
    window touched, sorted."""
    return samples.arrays(
        f"SELECT latency_ms FROM samples WHERE phase = ? AND workload = ? AND timed {UNTOUCHED} "
        "AND latency_ms IS NOT NULL ORDER BY latency_ms",
        [BASELINE_PHASE, workload],
    )["latency_ms"].astype("float64")


def _recovery_check(
    run: Run, stats: tuple[WorkloadStats, WorkloadStats], start_s: float
) -> RecoveryCheck:
    """Recovered if inside the band with its unverifiable accepted work counted as lost; not
    recovered if outside even with that work counted as done; else not measured."""
    before, after = stats
    name, shed = before.workload, run.scenario.shed_counts_as_error
    rate = before.counts.error_rate or 0.0
    arrivals = RecoverArrivals.read(run.samples, name, shed)
    sustain = baseline_latencies(run.samples, name)
    seconds, window = time_to_recover(arrivals, sustain, rate, start_s, unverified_lost=True)
    if seconds is not None:
        return RecoveryCheck(name, before, after, RECOVERED, seconds, window)
    unverified = after.counts.after.unverified
    if unverified and time_to_recover(arrivals, sustain, rate, start_s)[0] is not None:
        why = (
            f"back in the band only if its {unverified:,} not verifiable accepted arrivals in "
            f"{RECOVERY_PHASE} were processed"
        )
        return RecoveryCheck(name, before, after, NOT_MEASURED, None, window, why)
    return RecoveryCheck(name, before, after, NOT_RECOVERED, None, window)


def _overall(checks: list[RecoveryCheck]) -> str:
    """The worst status among the workloads: what the recovery section's conclusion leads with."""
    statuses = {c.status for c in checks}
    for status in (NOT_RECOVERED, NOT_MEASURED, INCONCLUSIVE, RECOVERED, NOT_JUDGED):
        if status in statuses:
            return status
    return INCONCLUSIVE


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


def _p95_limit(ordered: np.ndarray) -> float:
    """The highest in-band p95 of a window of RECOVERY_WINDOW timed successes, from the
    baseline's latencies in order.

    The larger of RECOVER_P95_RATIO x sustain's p95, sustain's p95 +
    RECOVER_P95_SLACK_MS, and the sustain latency that a window of sustain's own
    traffic keeps its p95 under with probability BAND_CONFIDENCE (a p95 over 20
    requests is their 19th: one in four such windows of a steady platform lies
    above the platform's own p95).
    """
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
    arrivals: RecoverArrivals,
    baseline_ms: np.ndarray,
    baseline_rate: float,
    start_s: float,
    unverified_lost: bool = False,
) -> tuple[float | None, int]:
    """Seconds from ``start_s`` to the first arrival from which the workload is back in the
    baseline's band and stays there: its window inside the band, every later window's
    errors inside it, and the p95 over the whole rest of the phase inside it.

    Returns (None, window) when no arrival qualifies: never, within the phase. Windows
    are RECOVERY_WINDOW consecutive arrivals by due time (all of them when there are
    fewer); an error is a failed sample or accepted work lost after it (and, with
    ``unverified_lost``, accepted work nobody could verify). Errors are held window by
    window, since a failure is never noise; latency is held as the p95 of the rest of the
    phase, since a window's p95 is its 19th value and two slow requests in the last
    seconds (a busy machine's pause) would otherwise read as a platform that never came
    back. A p95 is nearest-rank over timed successes and compared only over
    RECOVERY_WINDOW of them or more, when the baseline had some.
    """
    window = min(RECOVERY_WINDOW, len(arrivals.due))
    errors = arrivals.errors | (arrivals.unverified if unverified_lost else False)
    error_counts = sliding_window_view(errors.astype("int64"), window).sum(axis=1)
    errors_in_band = error_counts <= _error_limit(window, baseline_rate)
    # Back from an arrival on: every window from there holds its errors inside the band
    # (and, below, its own window its p95).
    back = np.flip(np.logical_and.accumulate(np.flip(errors_in_band)))
    latency = arrivals.latency
    limit = _p95_limit(baseline_ms) if len(baseline_ms) else np.inf
    if len(baseline_ms):
        # Below RECOVERY_WINDOW successes a nearest-rank p95 is the window's maximum:
        # such a window is judged by its errors alone.
        windows = sliding_window_view(latency, window)
        full = (~np.isnan(windows)).sum(axis=1) >= RECOVERY_WINDOW
        back &= ~full | (np.nan_to_num(_window_p95(windows), nan=np.inf) <= limit)
    # The nearest-rank p95 of the rest of the phase from each arrival on is inside the band
    # when at least its rank of those timed successes are: counted from the end, once.
    timed = ~np.isnan(latency)
    rest = np.cumsum(timed[::-1])[::-1]
    rest_in_band = np.cumsum((timed & (latency <= limit))[::-1])[::-1]
    p95_stays = (rest < RECOVERY_WINDOW) | (rest_in_band >= (95 * rest + 99) // 100)
    qualifies = np.flatnonzero(back & p95_stays[: len(back)])
    if len(qualifies) == 0:
        return None, window
    k = int(qualifies[0])
    return (0.0 if k == 0 else max(0.0, float(arrivals.due[k]) - start_s)), window


# Windows sorted at a time: each is RECOVERY_WINDOW values, so a block is a few MB.
WINDOW_BLOCK = 50_000


def _window_p95(windows: np.ndarray) -> np.ndarray:
    """Nearest-rank p95 of each row over its non-NaN values; NaN for a row with none (sorted a
    block of rows at a time: a sorted copy of every window of a long phase is twenty times
    the phase)."""
    out = np.empty(len(windows))
    for start in range(0, len(windows), WINDOW_BLOCK):
        block = windows[start : start + WINDOW_BLOCK]
        ordered = np.sort(block, axis=1)
        counts = (~np.isnan(block)).sum(axis=1)
        rank = np.maximum((95 * counts + 99) // 100 - 1, 0)
        values = ordered[np.arange(len(ordered)), rank]
        out[start : start + WINDOW_BLOCK] = np.where(counts > 0, values, np.nan)
    return out
