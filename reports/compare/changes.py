"""The changes between two runs of one plan that a gate may count, each checked the same way.

A change counts only with enough samples on both sides, past an absolute floor and a
relative tolerance, and with a 99% bootstrap interval of the difference clear of zero
and of what the environment alone explains. Two runs of one configuration on a shared
machine differ by far more than a naive percentage, so each condition is there to keep
jitter from failing a build; docs/internals.md has the measurements behind them.

Why a bootstrap interval on the p95 difference and not a rank test: the question is
whether the *p95* rose, and Mann-Whitney answers whether the whole distribution shifted.
The interval is 99% because one compare makes dozens of comparisons.

Latency is read without survivor bias: from due, each failure counted at its workload's
timeout, so a run whose failures left few, fast successes is not preferred; a failed
request is no faster than one that used its whole timeout. Accepted work nobody could
verify counts against the direction being proven (lost in BASE and done in RUN for a
rise, the other way round for a fall).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from engine.followups import LOST, NOT_VERIFIABLE
from reports import formatting as fmt
from reports.dataset import quoted
from reports.evidence import Interval, nearest_rank, percentile_change, rate_change
from reports.followups import AFTER
from reports.recovery import ERROR_OUTCOMES
from reports.rundir import Run
from reports.stats import Counts, RunStats, SliceStats, WorkloadStats
from reports.system import GENERATOR_PROBE, WHOLE_RUN, SystemStats
from reports.thresholds import Within
from reports.verdict import Verdict

# p95 latency or peak RSS more than this fraction above the base run is a regression.
DEFAULT_TOLERANCE = 0.2
# Samples each side needs before its p95 or error rate is compared: below ~30 a
# nearest-rank p95 is one of the two largest values, and one slow request moves it.
DEFAULT_MIN_SAMPLES = 30
# A p95 rise smaller than this is scheduling jitter on a shared machine, whatever its %.
DEFAULT_P95_FLOOR_MS = 25.0
# An error-rate rise smaller than this (1 point) is not a regression where errors are
# tolerated; where the limit is zero, any rise with evidence is.
ERROR_FLOOR = 0.01
# Two-sided confidence of the bootstrap interval that must exclude zero.
CONFIDENCE = 0.99
# A peak RSS rise smaller than this is allocator noise.
RSS_FLOOR_BYTES = 32 * 2**20
# An environment figure this many times the other run's (and this many ms apart) is stated on
# top: the kit's own processes waited that much longer (or shorter) for a CPU.
ENVIRONMENT_RATIO = 2.0
ENVIRONMENT_FLOOR_MS = 5.0
# The stub's and the generator's own lateness, as the probes record them.
STUB_LATENESS = (("stub", "lateness.loop.p99_ms"), ("stub", "lateness.first_token.p99_ms"))
GENERATOR_LAG = "loop_lag_ms"
MACHINE_LOAD = ("machine", "load_1m")
RSS = ("api", "rss_bytes")


class Outcome(Enum):
    """What one check found: RUN's figure rose or fell beyond noise; rose beyond noise on a
    machine too busy to tell whose the rise is (BUSY: no answer, not a pass); or moved past
    the floors without the evidence to say so."""

    ROSE = "rose"
    FELL = "fell"
    BUSY = "rose on a busy machine"
    UNPROVEN = "unproven"


@dataclass(frozen=True)
class Change:
    """A rise or a fall between the runs, in words: where, which workload, what changed."""

    where: str
    workload: str
    what: str
    outcome: Outcome


@dataclass(frozen=True)
class Rules:
    """What a change must exceed to count: samples, floor, relative change."""

    p95_tolerance: float = DEFAULT_TOLERANCE
    rss_tolerance: float = DEFAULT_TOLERANCE
    min_samples: int = DEFAULT_MIN_SAMPLES
    p95_floor_ms: float = DEFAULT_P95_FLOOR_MS


# The rules when none are given.
DEFAULT_RULES = Rules()


@dataclass(frozen=True)
class Side:
    """One run with what compare reads of it."""

    run: Run
    stats: RunStats
    system: SystemStats
    verdict: Verdict


@dataclass(frozen=True)
class Environment:
    """What the machine alone did to RUN's latencies: how much later (``rise_ms``) or earlier
    its responses can be through the generator's lag and the stub's lateness; and per phase
    (and the whole run) where the API process waited too long for a CPU for a latency rise
    (``no_rise``) or fall (``no_fall``) to be the release's, why in words. No figure says by
    how much a busy machine moved a latency, so such a change is not claimed at all."""

    rise_ms: float = 0.0
    fall_ms: float = 0.0
    no_rise: dict[str, str] = field(default_factory=dict)
    no_fall: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Latencies:
    """One workload's latencies from due as compared, each failure at its timeout; accepted
    work nobody could verify counted as done (``best``) and as lost (``worst``)."""

    best: np.ndarray
    worst: np.ndarray

    @property
    def count(self) -> int:
        return len(self.best)


@dataclass(frozen=True)
class Reading:
    """Both runs' figure as one direction judges it, with the change in words, each side's
    count (None for one reading a side, such as a peak) and the interval of the difference
    (None where there is no sample to draw it from)."""

    old: float
    new: float
    said: str
    counts: tuple[int, int] | None = None
    interval: Callable[[], Interval] | None = None


@dataclass(frozen=True)
class Measure:
    """How one figure is checked: its floors, how an interval reads in its unit, and what the
    environment explains of it (latency only)."""

    floor: float
    tolerance: float
    bounds: Callable[[Interval], str] = str
    environment: Environment = Environment()


def check(
    where: str,
    workload: str,
    rise: Reading | None,
    fall: Reading | None,
    measure: Measure,
    rules: Rules,
) -> Change | None:
    """The one check every figure goes through: a rise judged on ``rise``'s reading, a fall on
    ``fall``'s; None when neither is past the floors.

    Past the floors, a change is UNPROVEN with too few samples, an interval that includes
    zero, or an interval within what the environment explains; a rise beyond noise on a
    machine too busy for it is BUSY (a fall so, UNPROVEN); otherwise it ROSE or FELL.
    """
    for outcome, reading in ((Outcome.ROSE, rise), (Outcome.FELL, fall)):
        if reading is None:
            return None
        rising = outcome is Outcome.ROSE
        higher, lower = (reading.new, reading.old) if rising else (reading.old, reading.new)
        if higher - lower <= measure.floor or higher <= lower * (1 + measure.tolerance):
            continue

        def unproven(why: str, said: str = reading.said) -> Change:
            return Change(where, workload, f"{said}: {why}", Outcome.UNPROVEN)

        if reading.counts is not None and min(reading.counts) < rules.min_samples:
            return unproven(f"too few samples (< {rules.min_samples})")
        if reading.interval is None:
            return Change(where, workload, reading.said, outcome)
        interval = reading.interval()
        bounds = f"{CONFIDENCE:.0%} interval {measure.bounds(interval)}"
        margin = interval.low if rising else -interval.high
        if margin <= 0:
            return unproven(f"within noise ({bounds})")
        env = measure.environment
        machine = (env.no_rise if rising else env.no_fall).get(where)
        if machine:
            text = f"{reading.said}: the machine's or the release's, untold ({bounds}; {machine})"
            return Change(where, workload, text, Outcome.BUSY if rising else Outcome.UNPROVEN)
        explained = env.rise_ms if rising else env.fall_ms
        if margin <= explained:
            return unproven(
                f"within what the environment explains ({bounds}; the generator's lag and "
                f"the stub's lateness {'rose' if rising else 'fell'} by {fmt.ms(explained)} ms)"
            )
        return Change(where, workload, f"{reading.said}; {bounds}", outcome)
    return None


def changes(base: Side, run: Side, rules: Rules, machine: Environment) -> tuple[Change, ...]:
    """Every change per phase (and the whole run) and workload: p95 latency from due with
    failures at their timeout, p95 first token likewise where there is one, the error rate;
    then the API's peak RSS."""
    found = []
    strict = zero_tolerance_workloads(run.run)
    latency = Measure(rules.p95_floor_ms, rules.p95_tolerance, _ms_bounds, machine)
    base_slices, base_samples = slices(base), offered_samples(base)
    run_samples = offered_samples(run)
    for where, part in slices(run).items():
        for now in part.workloads:
            name = now.workload
            before = workload_stats(base_slices.get(where), name)
            if before is None or where not in base_samples:
                continue
            for ttft in (False, True):
                old = compared_latencies(base, base_samples[where], name, ttft)
                new = compared_latencies(run, run_samples[where], name, ttft)
                label = "p95 first token" if ttft else "p95"
                found.append(
                    check(
                        where,
                        name,
                        _latency_reading(label, old.worst, new.best),
                        _latency_reading(label, old.best, new.worst),
                        latency,
                        rules,
                    )
                )
            errors = Measure(0.0 if name in strict else ERROR_FLOOR, 0.0, _points_bounds)
            rise, fall = _error_readings(before.counts, now.counts, name in strict)
            found.append(check(where, name, rise, fall, errors, rules))
    old_rss, new_rss = base.system.peak(*RSS), run.system.peak(*RSS)
    if old_rss and new_rss is not None:
        said = (
            f"peak RSS {fmt.probe_value('rss_bytes', old_rss)} -> "
            f"{fmt.probe_value('rss_bytes', new_rss)} ({fmt.change(old_rss, new_rss)})"
        )
        reading = Reading(old_rss, new_rss, said)
        memory = Measure(RSS_FLOOR_BYTES, rules.rss_tolerance)
        found.append(check("system", "api", reading, reading, memory, rules))
    return tuple(c for c in found if c is not None)


def _latency_reading(label: str, old: np.ndarray, new: np.ndarray) -> Reading | None:
    old_p95, new_p95 = p95(old), p95(new)
    if old_p95 is None or new_p95 is None:
        return None
    said = (
        f"{label} from due, failures at timeout, {fmt.ms(old_p95)} -> {fmt.ms(new_p95)} ms "
        f"({fmt.change(old_p95, new_p95)}, n={len(old)} -> {len(new)})"
    )
    return Reading(
        old_p95,
        new_p95,
        said,
        (len(old), len(new)),
        lambda: percentile_change(old, new, CONFIDENCE),
    )


def _error_readings(
    old: Counts, new: Counts, strict: bool
) -> tuple[Reading | None, Reading | None]:
    """The error rate as a rise is judged (BASE's unverifiable work lost, RUN's done) and as
    a fall is (the other way round)."""
    if not old.calls or not new.calls:
        return None, None

    def reading(old_errors: int, new_errors: int) -> Reading:
        said = (
            f"error rate {error_text(old)} -> {error_text(new)} "
            f"({old_errors} of {old.calls} -> {new_errors} of {new.calls}"
            f"{', a zero-tolerance workload' if strict else ''})"
        )
        return Reading(
            old_errors / old.calls,
            new_errors / new.calls,
            said,
            (old.calls, new.calls),
            lambda: rate_change(old_errors, old.calls, new_errors, new.calls, CONFIDENCE),
        )

    return reading(worst_errors(old), new.errors), reading(old.errors, worst_errors(new))


def _ms_bounds(interval: Interval) -> str:
    return f"{fmt.ms(interval.low)} to {fmt.ms(interval.high)} ms"


def _points_bounds(interval: Interval) -> str:
    return f"{fmt.points(0, interval.low)} to {fmt.points(0, interval.high)}"


def contended_share(tolerance: float) -> float:
    """The share of its ready time a process can wait for a CPU before the machine alone
    stretches its CPU-bound work by ``tolerance``: waiting w, it runs 1 / (1 - w) as long."""
    return tolerance / (1 + tolerance)


def environment(base: Side, run: Side, tolerance: float) -> tuple[Environment, tuple[str, ...]]:
    """What the machine explains of RUN's latencies, and how the two runs' machines differed,
    each in a sentence.

    Per phase, a latency rise is the machine's as much as the release's where RUN's API
    process waited for a CPU past ``contended_share(tolerance)`` of its ready time, or where
    its waits alone stretch RUN's CPU-bound work by ``tolerance`` over BASE's ((1 - w_BASE) /
    (1 - w_RUN)); a fall likewise the other way round. Then the generator's peak loop lag,
    the stub's worst p99 lateness and the machine's load average where one is
    ENVIRONMENT_RATIO times the other.
    """
    said: list[str] = []
    no_rise: dict[str, str] = {}
    no_fall: dict[str, str] = {}
    most = contended_share(tolerance)
    old_wait, new_wait = base.system.api_cpu_wait, run.system.api_cpu_wait
    for where in old_wait.keys() & new_wait.keys():
        before, after = old_wait[where], new_wait[where]
        why = (
            f"the API process waited for a CPU {before:.0%} of its ready time in BASE and "
            f"{after:.0%} in RUN in {where}"
        )
        if after >= most or (1 - before) >= (1 + tolerance) * (1 - after):
            no_rise[where] = why
        if before >= most or (1 - after) >= (1 + tolerance) * (1 - before):
            no_fall[where] = why
    effects: dict[str, list[str]] = {}
    for where in [p.name for p in run.stats.phases] + [WHOLE_RUN]:
        if where in no_rise or where in no_fall:
            both = where in no_rise and where in no_fall
            which = "changes" if both else "rises" if where in no_rise else "falls"
            effects.setdefault(which, []).append(
                f"{where} {old_wait[where]:.0%} -> {new_wait[where]:.0%}"
            )
    for which, slices in effects.items():
        said.append(
            f"the API process waited for a CPU this share of its ready time, BASE -> RUN: "
            f"{', '.join(slices)}: latency {which} there may be the machine's, not claimed"
        )
    if not (old_wait and new_wait):
        missing = " and ".join(n for n, w in (("BASE", old_wait), ("RUN", new_wait)) if not w)
        said.append(
            f"the API process's wait for a CPU was not probed in {missing}: a latency change "
            "on a busier machine cannot be told from the release's"
        )
    figures = [
        (f"the stub's {metric}", base.system.peak(probe, metric), run.system.peak(probe, metric))
        for probe, metric in STUB_LATENESS
    ]
    figures.append(("the generator's peak loop lag", generator_lag(base), generator_lag(run)))
    for what, old, new in figures:
        if old is None or new is None:
            continue
        low, high = sorted((old, new))
        if high - low >= ENVIRONMENT_FLOOR_MS and high >= ENVIRONMENT_RATIO * max(low, 1e-9):
            said.append(
                f"{what} was {fmt.ms(old)} ms in BASE and {fmt.ms(new)} ms in RUN "
                f"({high / max(low, 1e-9):.1f}x): the kit's own processes waited "
                f"{'longer' if new > old else 'less'} for a CPU during RUN"
            )
    old_load, new_load = base.system.peak(*MACHINE_LOAD), run.system.peak(*MACHINE_LOAD)
    if old_load is not None and new_load is not None:
        low, high = sorted((old_load, new_load))
        if high - low >= 1 and high >= ENVIRONMENT_RATIO * max(low, 1e-9):
            said.append(
                f"the machine's 1-minute load average peaked at {old_load:.1f} in BASE and "
                f"{new_load:.1f} in RUN: it was {'busier' if new_load > old_load else 'quieter'}"
                " during RUN"
            )
    rise = fall = 0.0
    for old, new in (
        (_stub_lateness(base), _stub_lateness(run)),
        (generator_lag(base), generator_lag(run)),
    ):
        if old is not None and new is not None:
            rise += max(0.0, new - old)
            fall += max(0.0, old - new)
    return Environment(rise, fall, no_rise, no_fall), tuple(said)


def _stub_lateness(side: Side) -> float | None:
    peaks = [side.system.peak(probe, metric) for probe, metric in STUB_LATENESS]
    known = [p for p in peaks if p is not None]
    return max(known) if known else None


def generator_lag(side: Side) -> float | None:
    """The generator's worst loop lag over every load process, or None when not probed."""
    peaks = [
        s.peak
        for s in side.system.series
        if s.probe.split(".")[0] == GENERATOR_PROBE and s.metric == GENERATOR_LAG
    ]
    return max(peaks) if peaks else None


def slices(side: Side) -> dict[str, SliceStats]:
    """Requests offered in each phase, then the whole run, by name."""
    return {p.name: p.by_offer for p in side.stats.phases} | {WHOLE_RUN: side.stats.whole}


def completions(side: Side) -> dict[str, SliceStats]:
    """Requests completed inside each phase's window, then the whole run, by name."""
    return {p.name: p.by_completion for p in side.stats.phases} | {WHOLE_RUN: side.stats.whole}


def workload_stats(part: SliceStats | None, name: str) -> WorkloadStats | None:
    if part is None:
        return None
    return next((w for w in part.workloads if w.workload == name), None)


def offered_samples(side: Side) -> dict[str, Within]:
    """Samples offered in each phase, then the whole run, by name (as ``slices``)."""
    samples = side.run.samples
    parts = {p.name: Within(samples, f"phase = {quoted([p.name])}") for p in side.stats.phases}
    return parts | {WHOLE_RUN: Within(samples)}


def zero_tolerance_workloads(run: Run) -> set[str]:
    """Workloads whose error-rate threshold is zero: any proven rise in errors is a regression."""
    return {
        t.workload for t in run.scenario.thresholds if t.metric == "error_rate" and t.limit == 0
    }


def latencies_from_due(
    samples: Within,
    workload: str,
    timeout_s: float,
    shed_is_error: bool,
    first_token: bool = False,
) -> Latencies:
    """A workload's latencies as compared: from due, each failure at ``timeout_s``.

    Whole-turn latency is over timed successes (a turn cancelled on purpose is neither
    success nor failure); first token over every ``ok == 1`` with one. A 429 that is not
    an error is left out, as the error rate leaves it out.
    """
    outcomes = ERROR_OUTCOMES | ({"shed"} if shed_is_error else set())
    failed = f"(outcome IN ({quoted(sorted(outcomes))}) OR {AFTER} IN ({quoted(LOST)}))"
    unverified = f"{AFTER} = '{NOT_VERIFIABLE}'"
    if first_token:
        value = "ttft_ms + (sent_s - due_s) * CAST(1000 AS DOUBLE)"
        answered = f"ok = 1 AND ({value}) IS NOT NULL"
    else:
        value, answered = "latency_due_ms", "timed"
    within = f"({samples.where}) AND workload = ?"
    got = samples.samples.arrays(
        f"SELECT {value} AS v, {unverified} AS maybe FROM samples "
        f"WHERE {within} AND {answered} AND NOT {failed}",
        [workload],
    )
    (lost_count,) = samples.samples.one(
        f"SELECT count(*) FROM samples WHERE {within} AND {failed}", [workload]
    )
    values, maybe = got["v"].astype("float64"), got["maybe"].astype(bool)
    timeout_ms = timeout_s * 1000.0
    done, unsure = values[~maybe], values[maybe]
    lost = np.full(int(lost_count), timeout_ms)
    return Latencies(
        best=np.concatenate([done, lost, unsure]),
        worst=np.concatenate([done, lost, np.full(len(unsure), timeout_ms)]),
    )


def compared_latencies(side: Side, samples: Within, workload: str, ttft: bool) -> Latencies:
    """``latencies_from_due`` with the side's own timeout and shed rule."""
    scenario = side.run.scenario
    return latencies_from_due(
        samples,
        workload,
        scenario.timeouts.for_workload(workload),
        scenario.shed_counts_as_error,
        first_token=ttft,
    )


def p95(values: np.ndarray) -> float | None:
    return nearest_rank(values, 95) if len(values) else None


def worst_errors(counts: Counts) -> int:
    """Errors with the accepted work nobody could verify counted as lost."""
    return counts.errors + counts.after.unverified


def error_text(counts: Counts) -> str:
    """An error rate for the tables: known errors, and when accepted work could not be
    verified, the range it spans (never 0.00% for work nobody checked)."""
    if not counts.calls:
        return fmt.ABSENT
    known = fmt.rate(counts.error_rate)
    if not counts.after.unverified:
        return known
    worst = worst_errors(counts) / counts.calls
    return f"{known}–{fmt.rate(worst)} ({counts.after.unverified} not verifiable)"
