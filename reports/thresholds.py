"""Each threshold judged in every phase it names, on what is known.

A check fails when what is known already breaks its limit: failures counted
against all calls (accepted work that cannot be verified counted as done, missing
observations as successes), so "at least 51.4% failed; 12 more not verifiable" is
a failure, not a shrug; "not measured" is left for a check the known part passes
and the unknown part could still tip. A check whose plan offered fewer arrivals
than its minimum (scenario.yaml ``judging.min_counts``) is "inconclusive": not a
failure the platform committed and not a pass. A workload skipped at preflight is
not measured, not forgotten; a workload the scenario gives no share is not judged
at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inputs.scenario import Threshold
from reports import formatting as fmt
from reports.dataset import Samples, quoted
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

PASS = "pass"
FAIL = "FAIL"
NOT_MEASURED = "not measured"
INCONCLUSIVE = "inconclusive"

# A phase's thresholds, sustain's band and recover's arrivals leave out what a fault window
# touched (reports/rundir.py's in_fault, FALSE in a run without windows): its section judges it.
UNTOUCHED = f"AND NOT {TOUCHED}"


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
