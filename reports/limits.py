"""Each workload against its limits: pooled over the phases it is judged in, and phase by phase.

The verdict says which checks failed; a reader's next question is "by how much,
and where". The headline answers it in one row per workload, on the first screen:
the p95 its latency limit names and its error rate, each taken over the phases that
metric is judged in (nearest rank over the raw samples, the count beside each), next
to the limit. The grid answers "where": every threshold in every phase, judged or
not, so a burst that broke and a recover that did not come back read off one table.
"""

from __future__ import annotations

from dataclasses import dataclass

from inputs.thresholds import Threshold
from reports import formatting as fmt
from reports.dataset import quoted
from reports.followups import FollowUpCounts
from reports.rundir import Run
from reports.stats import (
    NO_SAMPLES,
    Counts,
    RunStats,
    Slicing,
    WorkloadStats,
    measured_by,
    sliced,
)
from reports.thresholds import ThresholdResult, unserved
from reports.verdict import CHECK_WORDS, Verdict

# The percentile the headline gives when a workload has no latency limit of its own.
HEADLINE_METRIC = "p95_ms"
# Said in a grid cell for a phase a threshold is not judged in: the value is context.
NOT_JUDGED_HERE = "not judged"


@dataclass(frozen=True)
class Measured:
    """One number of a headline: its value in words (unit included), its count, its limit."""

    value: str
    samples: int
    limit: str
    phases: tuple[str, ...]


@dataclass(frozen=True)
class Headline:
    """A workload's p95 and error rate over the phases each is judged in, and its checks."""

    workload: str
    latency_name: str
    latency: Measured
    errors: Measured
    checks: str


def headlines(run: Run, stats: RunStats, verdict: Verdict) -> tuple[Headline, ...]:
    """One headline per workload the verdict judges (skipped and not offered ones have none).

    A users-mode workload no user ran is not offered either: its mix row says why, and a
    headline of "– (n=0)" beside the others would read as a measurement.
    """
    left_out = {*verdict.skipped, *unserved(run)}
    judged = [w for w in run.workloads if w not in left_out]
    plans = {name: _plan(run, name) for name in judged}
    # Counts add up over phases, so a pool of phases is the sum of theirs, and a percentile
    # pooled over one phase is that phase's; the phases' statistics hold both. A percentile
    # over several phases is counted here, each workload a slice of one pass. (A run the
    # operator stopped is pooled here too: its headline counts the arrivals the Stop cut
    # off as the phases' own statistics do not.)
    stopped = run.stopped_by_operator
    pooled = [n for n in judged if stopped or len(set(plans[n].latency_phases)) > 1]
    latency_pools = _pools(run, pooled, {n: plans[n].latency_phases for n in pooled})
    (latency,) = sliced(run, [latency_pools], tuple(pooled), measures=("latency", "ttft"))
    counted = [n for n in judged if stopped]
    error_pools = _pools(run, counted, {n: plans[n].error_phases for n in counted})
    (errors,) = sliced(run, [error_pools], tuple(counted), measures=())
    out = []
    for name in judged:
        plan = plans[name]
        if name in pooled:
            workload = latency[pooled.index(name)].workload(name)
        else:
            found = _in_phases(stats, name, plan.latency_phases)
            workload = found[0] if found else _none(name)
        if name in counted:
            counts = errors[counted.index(name)].workload(name).counts
        else:
            counts = _summed_counts(c.counts for c in _in_phases(stats, name, plan.error_phases))
        out.append(_headline(verdict, plan, workload, counts))
    return tuple(out)


def _none(workload: str) -> WorkloadStats:
    """A workload with nothing in the phases pooled (a phase the run does not have)."""
    return WorkloadStats(workload, Counts(), NO_SAMPLES, NO_SAMPLES, NO_SAMPLES)


def _in_phases(stats: RunStats, workload: str, phases: tuple[str, ...]) -> list[WorkloadStats]:
    """The workload's statistics offered in each of ``phases`` the run has, each phase once."""
    found = (stats.phase(name) for name in dict.fromkeys(phases))
    return [p.by_offer.workload(workload) for p in found if p is not None]


def _summed_counts(parts) -> Counts:
    """Counts of several phases as one: every field adds up."""
    parts = list(parts)
    after = FollowUpCounts(
        **{n: sum(getattr(c.after, n) for c in parts) for n in FollowUpCounts.__dataclass_fields__}
    )
    fields = [n for n in Counts.__dataclass_fields__ if n != "after"]
    return Counts(after=after, **{n: sum(getattr(c, n) for c in parts) for n in fields})


@dataclass(frozen=True)
class _Plan:
    """What a workload's headline reads: its latency limit and its error-rate limit, and the
    phases each is pooled over."""

    workload: str
    latency_limit: Threshold | None
    error_limit: Threshold | None
    metric: str
    latency_phases: tuple[str, ...]
    error_phases: tuple[str, ...]


def _plan(run: Run, workload: str) -> _Plan:
    mine = [t for t in run.scenario.thresholds if t.workload == workload]
    latencies = [t for t in mine if t.metric != "error_rate"]
    # The headline's column is a p95: a workload's p95 limit if it has one, else its first.
    latency_limit = next((t for t in latencies if t.metric.startswith("p95")), None) or next(
        iter(latencies), None
    )
    error_limit = next((t for t in mine if t.metric == "error_rate"), None)
    judging = run.scenario.judging
    # A run with none of the judged phases (users mode's steps) still has its figures: the
    # headline then pools every phase it ran, and says which.
    every = tuple(p.name for p in run.phases)
    return _Plan(
        workload,
        latency_limit,
        error_limit,
        latency_limit.metric if latency_limit else HEADLINE_METRIC,
        (latency_limit.phases if latency_limit else judging.latency_phases) or every,
        (error_limit.phases if error_limit else judging.error_rate_phases) or every,
    )


def _pools(run: Run, judged: list[str], phases: dict[str, tuple[str, ...]]) -> Slicing:
    """Slice i: the i-th judged workload's samples offered in its ``phases``, pooled."""
    cases = " ".join(
        f"WHEN workload = {quoted([name])} AND phase IN ({quoted(phases[name])}) THEN {i}"
        for i, name in enumerate(judged)
    )
    windows = {
        i: sum(p.duration_s for p in run.phases if p.name in phases[name]) or 1.0
        for i, name in enumerate(judged)
    }
    return Slicing(f"CASE {cases} END" if cases else "NULL", windows)


def _headline(verdict: Verdict, plan: _Plan, stats: WorkloadStats, counts: Counts) -> Headline:
    percentile = _percentile(plan.metric, stats)
    latency = Measured(
        fmt.metric(plan.metric, percentile.value),
        percentile.count,
        _limit(plan.latency_limit),
        plan.latency_phases,
    )
    errors = Measured(
        _error_rate(counts), counts.calls, _limit(plan.error_limit), plan.error_phases
    )
    statuses = [t.status for t in verdict.thresholds if t.workload == plan.workload]
    return Headline(plan.workload, fmt.metric_name(plan.metric), latency, errors, _tally(statuses))


@dataclass(frozen=True)
class _Value:
    value: float | None
    count: int


def _percentile(metric: str, stats: WorkloadStats) -> _Value:
    """The percentile ``metric`` names (p95_ttft_ms: p95 of first tokens) from pooled stats."""
    name, source = measured_by(metric, stats)
    return _Value(getattr(source, name), source.count)


def _error_rate(counts: Counts) -> str:
    """Known errors over calls; with accepted work nobody could verify, a floor and the rest."""
    if not counts.calls:
        return fmt.ABSENT
    return fmt.known_rate(counts.error_rate, counts.after.unverified)


def _limit(threshold: Threshold | None) -> str:
    return (
        "no limit"
        if threshold is None
        else f"≤\u00a0{fmt.metric(threshold.metric, threshold.limit)}"
    )


def _tally(statuses: list[str]) -> str:
    """'2 failed, 3 passed': the workload's checks counted by status, in the verdict's order."""
    said = [
        f"{statuses.count(status)} {words}" for status, words in CHECK_WORDS if status in statuses
    ]
    return ", ".join(said) or "no checks"


def measured_text(measured: Measured) -> str:
    """'412.0 ms (n=192); ≤ 300.0 ms': a headline number as its cell says it."""
    return f"{measured.value} (n={measured.samples:,}); {measured.limit}"


@dataclass(frozen=True)
class GridRow:
    """One threshold across every phase: per phase, its reading and status (or not judged)."""

    check: str
    limit: str
    cells: tuple[str, ...]


def phase_grid(run: Run, stats: RunStats, verdict: Verdict) -> tuple[GridRow, ...]:
    """Every threshold of a judged workload in every phase of the run: the verdict's reading
    where it is judged, the same measurement marked "not judged" elsewhere."""
    judged = {(t.workload, t.metric, t.phase): t for t in verdict.thresholds}
    workloads = [w for w in run.workloads if w not in verdict.skipped]
    rows = []
    for threshold in run.scenario.thresholds:
        if threshold.workload not in workloads:
            continue
        cells = tuple(
            _grid_cell(
                threshold, judged.get((threshold.workload, threshold.metric, p.name)), p.name, stats
            )
            for p in run.phases
        )
        rows.append(
            GridRow(
                f"{threshold.workload} {fmt.metric_name(threshold.metric)}",
                _limit(threshold),
                cells,
            )
        )
    return tuple(rows)


def _grid_cell(
    threshold: Threshold, result: ThresholdResult | None, phase: str, stats: RunStats
) -> str:
    if result is not None:
        reading = result.reading or fmt.metric(result.metric, result.measured)
        return f"{result.status}: {reading} (n={result.samples:,})"
    part = stats.phase(phase)
    if part is None:
        return fmt.ABSENT
    workload = part.by_offer.workload(threshold.workload)
    if threshold.metric == "error_rate":
        value = _Value(workload.counts.error_rate, workload.counts.calls)
    else:
        value = _percentile(threshold.metric, workload)
    said = fmt.metric(threshold.metric, value.value) if value.count else fmt.ABSENT
    return f"{said} (n={value.count:,}), {NOT_JUDGED_HERE}"
