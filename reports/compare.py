"""`compare`: two runs of the same scenario side by side, and the regressions a CI can gate on.

"Did this release make it worse" is a question about the same experiment run
twice, so runs of different scenarios are refused unless forced. Per phase and
workload the change in p95, error rate and throughput is shown. A change is a
regression only when all three of these hold, because two runs of one
configuration on a shared machine differ by far more than a naive percentage
(measured: "11 regressions" between two identical demos, some on n = 2):

- enough samples on both sides (``--min-samples``): a p95 over a handful of
  requests is its largest value or close to it;
- a change above an absolute floor as well as a relative one: +6 ms on a 20 ms
  read is +30% and still jitter;
- evidence beyond noise: the bootstrap interval of the change excludes zero,
  and, for latency, excludes what the environment's own slowdown explains (the
  rise in the generator's peak loop lag plus the rise in the stub's own
  lateness: a response read by a lagging generator, or answered by a lagging
  stub, is late by that much whatever the release did). Measured: two runs of
  one configuration on this shared machine differed by +36 ms in api_read's p95
  while the generator's peak loop lag rose by 46 ms.

Why a bootstrap interval on the p95 difference rather than a rank test: the
question is whether the *p95* rose, and a rank test (Mann-Whitney) answers
another one, whether the whole distribution shifted. It calls a faster median
with a fatter tail "no worse" and flags a shifted median whose p95 is unchanged.
The bootstrap judges the statistic the report and the thresholds use
(nearest-rank p95) and gives an interval a reader can check against the floor;
reports/evidence.py draws it exactly, so it is cheap at any sample count and
deterministic. The interval is 99%, not 95%: one compare makes dozens of
comparisons (phases x workloads x metrics), and a gate that fails builds at
random is worse than none. Error rates get the same treatment (binomial
bootstrap), with a floor of zero on workloads whose error-rate limit is zero.

When the two runs did not run in the same environment (machine, topology, the
stub's own lateness, the generator's loop lag: run.json and probes.csv), the
comparison says so on top: a slower second run on a busier machine is not a
slower release.

Latency is compared without survivor bias: from due, with each failure (failed,
timed out, abandoned, shed where that is an error, accepted and then lost) counted
at its workload's timeout, never as a p95 over whichever requests happened to
succeed. A run whose pool refused 64% of chat turns had few, selected successes;
their p95 (51 s) beat the fixed run's (70 s), and "regression" was the opposite of
what happened. Why this rather than refusing a latency verdict when the error
rates differ beyond their floor: the comparisons that matter most are the ones
where errors changed (a release that fixes them, or one that brings them), and
this one figure still orders the runs as a user lives them (a failed request is
no faster than one that used its whole timeout); it needs no second noise floor;
and when both runs fail more than 5% the p95 is the timeout on both sides and the
error rate alone carries the finding, which is true. The same holds for the time
to first token. Accepted work nobody could verify is never a success nor a 0%
error: a regression must hold with BASE's such work counted as lost and RUN's as
done, an improvement the other way round, and tables show both ends. Proven
falls are listed as improvements; only proven rises change the exit code.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np
import pandas as pd

from engine import nofollow
from engine.followups import LOST, NOT_VERIFIABLE
from inputs.scenario import ArrivalKind, Scenario
from reports import formatting as fmt
from reports import render
from reports.document import Banner, Block, Bullets, Document, Heading, Paragraph, Section, Table
from reports.evidence import nearest_rank, percentile_change, rate_change
from reports.followups import AFTER
from reports.rundir import Run, RunDirError, load_run
from reports.stats import Counts, RunStats, SliceStats, WorkloadStats, run_stats, timed_successes
from reports.system import GENERATOR_PROBE, SystemStats, system_stats
from reports.verdict import ERROR_OUTCOMES, Verdict, judge

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
# Two-sided confidence of the bootstrap interval that must exclude zero (see docstring).
CONFIDENCE = 0.99
# A peak RSS rise smaller than this is allocator noise.
RSS_FLOOR_BYTES = 32 * 2**20
# Environment figures differing by this factor (and the floor below) are stated on top.
ENVIRONMENT_RATIO = 2.0
ENVIRONMENT_FLOOR_MS = 5.0
# The stub's and the generator's own lateness, as the probes record them.
STUB_LATENESS = (("stub", "lateness.loop.p99_ms"), ("stub", "lateness.first_token.p99_ms"))
GENERATOR_LAG = "loop_lag_ms"
RSS = ("api", "rss_bytes")
CPU = ("api", "cpu_percent")
INVALID = 2
WHOLE_RUN = "whole run"


class CompareRefused(ValueError):
    """The two runs cannot be compared as given; the message says why and what to pass."""


@dataclass(frozen=True)
class Side:
    """One run with everything computed from it."""

    run: Run
    stats: RunStats
    system: SystemStats
    verdict: Verdict


@dataclass(frozen=True)
class Change:
    """A rise or a fall between the runs, in words: where, which workload, what changed."""

    where: str
    workload: str
    what: str


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
class Shift:
    """How much the environment alone moves RUN's latencies: the rise in the generator's peak
    loop lag plus the rise in the stub's worst lateness (``rise_ms``), and the same falls."""

    rise_ms: float = 0.0
    fall_ms: float = 0.0


@dataclass(frozen=True)
class Rules:
    """What a change must exceed to be a regression: count, floor, relative change, evidence."""

    p95_tolerance: float = DEFAULT_TOLERANCE
    rss_tolerance: float = DEFAULT_TOLERANCE
    min_samples: int = DEFAULT_MIN_SAMPLES
    p95_floor_ms: float = DEFAULT_P95_FLOOR_MS


@dataclass(frozen=True)
class Comparison:
    base: Side
    run: Side
    scenario_difference: str | None
    rules: Rules
    regressions: tuple[Change, ...]
    environment: tuple[str, ...] = ()
    # Milliseconds of a latency change the environment's own slowdown (or relief) explains.
    shift: Shift = Shift()
    # Changes beyond the floors that lacked samples or evidence: shown, not counted.
    unproven: tuple[Change, ...] = ()
    # Proven falls in latency or errors: shown, never an exit code.
    improvements: tuple[Change, ...] = ()

    @property
    def p95_tolerance(self) -> float:
        return self.rules.p95_tolerance

    @property
    def rss_tolerance(self) -> float:
        return self.rules.rss_tolerance

    @property
    def exit_code(self) -> int:
        """2 when either run is invalid, 1 when a regression was found, else 0."""
        if self.base.verdict.invalid_reasons or self.run.verdict.invalid_reasons:
            return INVALID
        return 1 if self.regressions else 0


def scenario_difference(base: Scenario, run: Scenario) -> str | None:
    """The first way two scenarios differ as experiments, or None when they are the same.

    Phase lengths may differ (``--scale`` shortens a run without changing it), and so
    may a Poisson phase's seed (another draw of the same process); names, mix, rates,
    arrival kinds (and a trace's file), cancel share, timeouts and the shed rule may not.
    """
    facts = (
        ("name", base.name, run.name),
        ("mix", _rounded(base.mix), _rounded(run.mix)),
        ("phases", [p.name for p in base.phases], [p.name for p in run.phases]),
        ("phase rates", [p.rate for p in base.phases], [p.rate for p in run.phases]),
        ("phase arrivals", _arrival_kinds(base), _arrival_kinds(run)),
        ("chat_cancel_share", base.chat_cancel_share, run.chat_cancel_share),
        ("timeouts", base.timeouts, run.timeouts),
        ("shed_counts_as_error", base.shed_counts_as_error, run.shed_counts_as_error),
    )
    for what, a, b in facts:
        if a != b:
            return f"{what}: {a} in BASE, {b} in RUN"
    return None


def _arrival_kinds(scenario: Scenario) -> list[str]:
    """Each phase's arrival kind, a trace with its file."""
    return [
        f"trace {p.arrivals.trace}" if p.arrivals.kind == ArrivalKind.TRACE else p.arrivals.kind
        for p in scenario.phases
    ]


def _rounded(mix: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 9) for k, v in mix.items()}


def compare(
    base: Run,
    run: Run,
    force: bool = False,
    p95_tolerance: float = DEFAULT_TOLERANCE,
    rss_tolerance: float = DEFAULT_TOLERANCE,
    min_samples: int = DEFAULT_MIN_SAMPLES,
    p95_floor_ms: float = DEFAULT_P95_FLOOR_MS,
) -> Comparison:
    """The comparison of ``run`` against ``base``; CompareRefused for different scenarios."""
    difference = scenario_difference(base.scenario, run.scenario)
    if difference and not force:
        raise CompareRefused(
            f"compare: {base.path} and {run.path} ran different scenarios ({difference}); "
            "pass --force to compare them anyway"
        )
    sides = [_side(r) for r in (base, run)]
    rules = Rules(p95_tolerance, rss_tolerance, min_samples, p95_floor_ms)
    shift = environment_shift(*sides)
    found, unproven, improvements = changes(*sides, rules, shift)
    return Comparison(
        *sides,
        scenario_difference=difference,
        rules=rules,
        regressions=found,
        environment=environment_differences(*sides),
        shift=shift,
        unproven=unproven,
        improvements=improvements,
    )


def environment_shift(base: Side, run: Side) -> Shift:
    """How much later (or earlier) RUN's responses can be through the machine alone: the
    changes in the generator's peak loop lag and in the stub's worst p99 lateness (0 if not
    probed)."""
    rise = fall = 0.0
    for figure in (_generator_lag, _stub_lateness):
        old, new = figure(base), figure(run)
        if old is not None and new is not None:
            rise += max(0.0, new - old)
            fall += max(0.0, old - new)
    return Shift(rise, fall)


def _stub_lateness(side: Side) -> float | None:
    peaks = [side.system.peak(probe, metric) for probe, metric in STUB_LATENESS]
    known = [p for p in peaks if p is not None]
    return max(known) if known else None


def environment_differences(base: Side, run: Side) -> tuple[str, ...]:
    """How the two runs' environments differed, each as one sentence; empty when alike."""
    found = []
    old_record, new_record = base.run.record, run.run.record
    for key, old, new in (
        (
            "machine",
            msgspec.to_builtins(old_record.machine),
            msgspec.to_builtins(new_record.machine),
        ),
        ("topology", old_record.topology, new_record.topology),
        ("workers", old_record.workers, new_record.workers),
    ):
        if old != new:
            found.append(f"{key} differs: {_said(old)} in BASE, {_said(new)} in RUN")
    figures = [
        (f"the stub's {metric}", base.system.peak(probe, metric), run.system.peak(probe, metric))
        for probe, metric in STUB_LATENESS
    ]
    figures.append(("the generator's peak loop lag", _generator_lag(base), _generator_lag(run)))
    for what, old, new in figures:
        if old is None or new is None:
            continue
        low, high = sorted((old, new))
        if high - low >= ENVIRONMENT_FLOOR_MS and high >= ENVIRONMENT_RATIO * max(low, 1e-9):
            found.append(
                f"{what} was {fmt.ms(old)} ms in BASE and {fmt.ms(new)} ms in RUN "
                f"({high / max(low, 1e-9):.1f}x): the machine was "
                f"{'busier' if new > old else 'quieter'} during RUN"
            )
    return tuple(found)


def _said(value: object) -> str:
    return "not recorded" if value in (None, "") else str(value)


def _generator_lag(side: Side) -> float | None:
    peaks = [
        s.peak
        for s in side.system.series
        if s.probe.split(".")[0] == GENERATOR_PROBE and s.metric == GENERATOR_LAG
    ]
    return max(peaks) if peaks else None


def _side(run: Run) -> Side:
    stats = run_stats(run)
    system = system_stats(run)
    return Side(run, stats, system, judge(run, stats, system))


def _slices(side: Side) -> dict[str, SliceStats]:
    """Requests offered in each phase, then the whole run, by name."""
    return {p.name: p.by_offer for p in side.stats.phases} | {WHOLE_RUN: side.stats.whole}


def _completions(side: Side) -> dict[str, SliceStats]:
    """Requests completed inside each phase's window, then the whole run, by name."""
    return {p.name: p.by_completion for p in side.stats.phases} | {WHOLE_RUN: side.stats.whole}


def _workload(part: SliceStats | None, name: str) -> WorkloadStats | None:
    if part is None:
        return None
    return next((w for w in part.workloads if w.workload == name), None)


def zero_tolerance_workloads(scenario: Scenario) -> set[str]:
    """Workloads whose error-rate threshold is zero: any proven rise in errors is a regression."""
    return {t.workload for t in scenario.thresholds if t.metric == "error_rate" and t.limit == 0}


def _offered_samples(side: Side) -> dict[str, pd.DataFrame]:
    """Samples offered in each phase, then the whole run, by name (as ``_slices``)."""
    samples = side.run.samples
    parts = {p.name: samples[samples["phase"] == p.name] for p in side.stats.phases}
    return parts | {WHOLE_RUN: samples}


def latencies_from_due(
    samples: pd.DataFrame,
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
    mine = samples[samples["workload"] == workload]
    outcomes = ERROR_OUTCOMES | ({"shed"} if shed_is_error else set())
    failed = mine["outcome"].isin(outcomes)
    unverified = pd.Series(False, index=mine.index)
    if AFTER in mine.columns:
        failed |= mine[AFTER].isin(LOST)
        unverified = mine[AFTER] == NOT_VERIFIABLE
    if first_token:
        value = mine["ttft_ms"] + (mine["sent_s"] - mine["due_s"]) * 1000.0
        answered = (mine["ok"] == 1) & value.notna()
    else:
        value = mine["latency_due_ms"]
        answered = timed_successes(mine)
    timeout_ms = timeout_s * 1000.0
    done = value[answered & ~failed & ~unverified].to_numpy(dtype="float64")
    lost = np.full(int(failed.sum()), timeout_ms)
    maybe = value[answered & ~failed & unverified].to_numpy(dtype="float64")
    return Latencies(
        best=np.concatenate([done, lost, maybe]),
        worst=np.concatenate([done, lost, np.full(len(maybe), timeout_ms)]),
    )


def _p95(values: np.ndarray) -> float | None:
    return nearest_rank(values, 95) if len(values) else None


def changes(
    base: Side, run: Side, rules: Rules, shift: Shift = Shift()
) -> tuple[tuple[Change, ...], tuple[Change, ...], tuple[Change, ...]]:
    """(regressions, unproven, improvements) per phase and workload: p95 latency from due
    with failures at their timeout, p95 first token likewise where there is one, the error
    rate, and peak RSS.

    A change past the floors with too few samples or an interval that includes zero
    (or what the environment explains) is "unproven": listed, never counted.
    """
    found: dict[str, list[Change]] = {"regression": [], "unproven": [], "improvement": []}
    strict = zero_tolerance_workloads(run.run.scenario)
    base_slices, base_samples = _slices(base), _offered_samples(base)
    run_samples = _offered_samples(run)
    for where, part in _slices(run).items():
        for now in part.workloads:
            before = _workload(base_slices.get(where), now.workload)
            if before is None or where not in base_samples:
                continue
            pair = (base_samples[where], run_samples[where])
            verdicts = [
                _latency_change(where, now.workload, pair, (base, run), rules, shift, ttft)
                for ttft in (False, True)
            ]
            verdicts.append(_error_change(where, before, now, now.workload in strict, rules))
            for kind, change in verdicts:
                if change is not None:
                    found[kind].append(change)
    old_rss, new_rss = base.system.peak(*RSS), run.system.peak(*RSS)
    if (
        old_rss
        and new_rss is not None
        and new_rss > old_rss * (1 + rules.rss_tolerance)
        and new_rss - old_rss >= RSS_FLOOR_BYTES
    ):
        found["regression"].append(
            Change(
                "system",
                "api",
                f"peak RSS {fmt.probe_value('rss_bytes', old_rss)} -> "
                f"{fmt.probe_value('rss_bytes', new_rss)} ({fmt.change(old_rss, new_rss)})",
            )
        )
    return tuple(found["regression"]), tuple(found["unproven"]), tuple(found["improvement"])


def compared_latencies(side: Side, samples: pd.DataFrame, workload: str, ttft: bool) -> Latencies:
    """``latencies_from_due`` with the side's own timeout and shed rule."""
    scenario = side.run.scenario
    return latencies_from_due(
        samples,
        workload,
        scenario.timeouts.for_workload(workload),
        scenario.shed_counts_as_error,
        first_token=ttft,
    )


def _latency_change(
    where: str,
    workload: str,
    samples: tuple[pd.DataFrame, pd.DataFrame],
    sides: tuple[Side, Side],
    rules: Rules,
    shift: Shift,
    ttft: bool,
) -> tuple[str, Change | None]:
    """(kind, the change) when the compared p95 rose or fell past both floors.

    A rise is judged with BASE's unverifiable work counted as lost and RUN's as done,
    a fall the other way round, so neither rests on what nobody could verify.
    """
    before = compared_latencies(sides[0], samples[0], workload, ttft)
    now = compared_latencies(sides[1], samples[1], workload, ttft)
    label = "p95 first token" if ttft else "p95"
    for kind, old_values, new_values in (
        ("regression", before.worst, now.best),
        ("improvement", before.best, now.worst),
    ):
        old, new = _p95(old_values), _p95(new_values)
        if old is None or new is None:
            return kind, None
        rise = kind == "regression"
        higher, lower = (new, old) if rise else (old, new)
        if higher - lower < rules.p95_floor_ms or higher <= lower * (1 + rules.p95_tolerance):
            continue
        counts = f"n={len(old_values)} -> {len(new_values)}"
        head = (
            f"{label} from due, failures at timeout, {fmt.ms(old)} -> {fmt.ms(new)} ms "
            f"({fmt.change(old, new)}, {counts})"
        )
        if min(len(old_values), len(new_values)) < rules.min_samples:
            return "unproven", Change(
                where, workload, f"{head}: too few samples (< {rules.min_samples})"
            )
        interval = percentile_change(old_values, new_values, CONFIDENCE)
        bounds = f"{CONFIDENCE:.0%} interval {fmt.ms(interval.low)} to {fmt.ms(interval.high)} ms"
        beyond_noise = interval.low > 0 if rise else interval.high < 0
        if not beyond_noise:
            return "unproven", Change(where, workload, f"{head}: within noise ({bounds})")
        explained = shift.rise_ms if rise else shift.fall_ms
        if (interval.low if rise else -interval.high) <= explained:
            return "unproven", Change(
                where,
                workload,
                f"{head}: within what the environment explains ({bounds}; the generator's lag "
                f"and the stub's lateness {'rose' if rise else 'fell'} by {fmt.ms(explained)} ms)",
            )
        return kind, Change(where, workload, f"{head}; {bounds}")
    return "regression", None


def _error_change(
    where: str, before: WorkloadStats, now: WorkloadStats, strict: bool, rules: Rules
) -> tuple[str, Change | None]:
    """(kind, the change) when the error rate rose or fell past its floor.

    A rise counts RUN's known errors against BASE's with its unverifiable work lost; a
    fall the other way round.
    """
    old, new = before.counts, now.counts
    if not old.calls or not new.calls:
        return "regression", None
    floor = 0.0 if strict else ERROR_FLOOR
    for kind, old_errors, new_errors in (
        ("regression", _worst_errors(old), new.errors),
        ("improvement", old.errors, _worst_errors(new)),
    ):
        old_rate, new_rate = old_errors / old.calls, new_errors / new.calls
        rise = kind == "regression"
        if (new_rate - old_rate if rise else old_rate - new_rate) <= floor:
            continue
        head = (
            f"error rate {error_text(old)} -> {error_text(new)} "
            f"({old_errors} of {old.calls} -> {new_errors} of {new.calls}"
            f"{', a zero-tolerance workload' if strict else ''})"
        )
        if min(old.calls, new.calls) < rules.min_samples:
            return "unproven", Change(
                where, now.workload, f"{head}: too few samples (< {rules.min_samples})"
            )
        interval = rate_change(old_errors, old.calls, new_errors, new.calls, CONFIDENCE)
        bounds = (
            f"{CONFIDENCE:.0%} interval {fmt.points(0, interval.low)} to "
            f"{fmt.points(0, interval.high)}"
        )
        if (interval.low <= 0) if rise else (interval.high >= 0):
            return "unproven", Change(where, now.workload, f"{head}: within noise ({bounds})")
        return kind, Change(where, now.workload, f"{head}; {bounds}")
    return "regression", None


def _worst_errors(counts: Counts) -> int:
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
    worst = _worst_errors(counts) / counts.calls
    return f"{known}–{fmt.rate(worst)} ({counts.after.unverified} not verifiable)"


def comparison_document(c: Comparison) -> Document:
    """The side-by-side report: the runs, per phase and workload, the system, regressions last."""
    return Document(
        title=f"Compare: {c.base.run.run_id} (BASE) -> {c.run.run.run_id} (RUN)",
        subtitle=f"Scenario {c.run.run.scenario.name}. Regressions are listed last.",
        sections=(
            _runs_section(c),
            _phases_section(c),
            _system_section(c),
            _regressions_section(c),
        ),
    )


def _runs_section(c: Comparison) -> Section:
    blocks: list[Block] = []
    if c.environment:
        blocks.append(
            Banner(
                "The runs' environments differ; a change below may be the machine, not the "
                "release:",
                "warn",
                c.environment,
            )
        )
    if c.scenario_difference:
        blocks.append(
            Banner(f"Forced: the runs' scenarios differ ({c.scenario_difference}).", "warn")
        )
    for label, side in (("BASE", c.base), ("RUN", c.run)):
        if side.verdict.invalid_reasons:
            blocks.append(
                Banner(
                    f"{label} is an invalid run; this comparison cannot be trusted:",
                    "bad",
                    side.verdict.invalid_reasons,
                )
            )
    rows = [
        ("run", c.base.run.run_id, c.run.run.run_id),
        *(
            (key, str(old), str(new))
            for key, old, new in (
                ("started_at", c.base.run.record.started_at, c.run.run.record.started_at),
                ("topology", c.base.run.record.topology, c.run.run.record.topology),
                ("host", c.base.run.record.host, c.run.run.record.host),
                ("scale", c.base.run.record.scale, c.run.run.record.scale),
                ("workers", c.base.run.record.workers, c.run.run.record.workers),
            )
        ),
        ("offered", fmt.count(c.base.run.offered), fmt.count(c.run.run.offered)),
        (
            "recorded",
            fmt.count(c.base.stats.lateness.recorded),
            fmt.count(c.run.stats.lateness.recorded),
        ),
        ("verdict", c.base.verdict.word, c.run.verdict.word),
    ]
    blocks.append(Table(("", "BASE", "RUN"), tuple(rows)))
    return Section("runs", "Runs compared", tuple(blocks))


def _phases_section(c: Comparison) -> Section:
    blocks: list[Block] = [
        Paragraph(
            "Per workload, for requests offered in each phase: p95 latency from due with each "
            "failure counted at its workload's timeout (nearest-rank over every arrival but "
            "cancelled turns and, where 429 is not an error, shed ones; n beside it), the same "
            "for the first token where there is one, the error rate, and successful "
            "completions per second inside the phase's window. Where accepted work could not "
            "be verified, a p95 and an error rate are the range it spans (counted as done, "
            "then as lost): never a success, never 0.00% for work nobody checked."
        )
    ]
    base_slices, run_slices = _slices(c.base), _slices(c.run)
    base_done, run_done = _completions(c.base), _completions(c.run)
    base_samples, run_samples = _offered_samples(c.base), _offered_samples(c.run)
    for where, part in run_slices.items():
        rows, first_tokens = [], []
        for now in part.workloads:
            name = now.workload
            before = _workload(base_slices.get(where), name)
            old_tp = _throughput(base_done.get(where), name)
            new_tp = _throughput(run_done.get(where), name)
            old_latency, new_latency = (
                compared_latencies(c.base, base_samples[where], name, False)
                if where in base_samples
                else None,
                compared_latencies(c.run, run_samples[where], name, False),
            )
            old_errors = before.counts if before else Counts()
            rows.append(
                (
                    name,
                    *_p95_cells(old_latency, new_latency),
                    error_text(old_errors),
                    error_text(now.counts),
                    _points(old_errors, now.counts),
                    fmt.per_s(old_tp),
                    fmt.per_s(new_tp),
                    fmt.change(old_tp, new_tp),
                )
            )
            if now.ttft.count or (before is not None and before.ttft.count):
                old_first = (
                    compared_latencies(c.base, base_samples[where], name, True)
                    if where in base_samples
                    else None
                )
                new_first = compared_latencies(c.run, run_samples[where], name, True)
                first_tokens.append((name, *_p95_cells(old_first, new_first)))
        blocks += [
            Heading(where.capitalize()),
            Table(
                (
                    "workload",
                    "p95 BASE",
                    "p95 RUN",
                    "p95 change",
                    "errors BASE",
                    "errors RUN",
                    "error change",
                    "ok/s BASE",
                    "ok/s RUN",
                    "ok/s change",
                ),
                tuple(rows),
            ),
        ]
        if first_tokens:
            blocks.append(
                Table(
                    ("workload", "p95 first token BASE", "p95 first token RUN", "change"),
                    tuple(first_tokens),
                )
            )
    return Section("phases", "Per phase and workload", tuple(blocks))


def _p95_cells(old: Latencies | None, new: Latencies) -> tuple[str, str, str]:
    """BASE's and RUN's compared p95 with n (a range where unverifiable work could move it),
    and the change when both are settled."""
    return _p95_cell(old), _p95_cell(new), fmt.change(_settled(old), _settled(new))


def _p95_cell(values: Latencies | None) -> str:
    if values is None or not values.count:
        return fmt.ABSENT
    best, worst = _p95(values.best), _p95(values.worst)
    said = fmt.ms(best) if best == worst else f"{fmt.ms(best)}–{fmt.ms(worst)}"
    return f"{said} (n={values.count})"


def _settled(values: Latencies | None) -> float | None:
    """The p95 when unverifiable work cannot move it, else None (no single change to show)."""
    if values is None or not values.count:
        return None
    best, worst = _p95(values.best), _p95(values.worst)
    return best if best == worst else None


def _points(old: Counts, new: Counts) -> str:
    """The error-rate change in points, only when neither side has unverifiable work."""
    if old.after.unverified or new.after.unverified:
        return fmt.ABSENT
    return fmt.points(old.error_rate, new.error_rate)


def _throughput(part: SliceStats | None, workload: str) -> float | None:
    stats = _workload(part, workload)
    return None if stats is None else stats.counts.successes / part.window_s


def _system_section(c: Comparison) -> Section:
    keys = sorted(
        {(s.probe, s.metric) for s in c.base.system.series}
        | {(s.probe, s.metric) for s in c.run.system.series},
        key=lambda k: (k not in (CPU, RSS), k),
    )
    rows = []
    for probe, metric in keys:
        old, new = c.base.system.peak(probe, metric), c.run.system.peak(probe, metric)
        rows.append(
            (
                probe,
                metric,
                fmt.probe_value(metric, old),
                fmt.probe_value(metric, new),
                fmt.change(old, new),
            )
        )
    return Section(
        "system",
        "The system under test: peaks",
        (
            Table(
                ("probe", "metric", "peak BASE", "peak RUN", "change"),
                tuple(rows),
                empty="Neither run recorded probe readings.",
            ),
        ),
    )


def _regressions_section(c: Comparison) -> Section:
    strict = sorted(zero_tolerance_workloads(c.run.run.scenario))
    rules = c.rules
    blocks: list[Block] = [
        Paragraph(
            f"Rules: in any phase or the whole run, a rise in p95 latency from due (each "
            f"failure at its timeout), or in p95 first token likewise, is a regression when it "
            f"is above {rules.p95_tolerance:.0%} and above {rules.p95_floor_ms:g} ms, both "
            f"sides have at least {rules.min_samples} arrivals in it, and the "
            f"{CONFIDENCE:.0%} bootstrap interval of the difference lies above zero and above "
            f"what the environment explains ({fmt.ms(c.shift.rise_ms)} ms here: the rise in "
            f"the generator's peak loop lag plus the rise in the stub's own lateness); an "
            f"error-rate rise likewise, above {ERROR_FLOOR * 100:g} point (any rise on a "
            f"zero-tolerance workload: {', '.join(strict) or 'none in this scenario'}) with at "
            f"least {rules.min_samples} calls each; peak API RSS up more than "
            f"{rules.rss_tolerance:.0%} and {RSS_FLOOR_BYTES // 2**20} MiB. A rise must hold "
            f"with BASE's unverifiable accepted work counted as lost and RUN's as done. Falls "
            f"past the same floors, with that work counted the other way round and beyond what "
            f"a quieter environment explains ({fmt.ms(c.shift.fall_ms)} ms here), are "
            f"improvements: listed, never an exit code."
        ),
    ]
    if c.improvements:
        blocks += [
            Heading("Improvements"),
            Bullets(tuple(f"{r.where}, {r.workload}: {r.what}" for r in c.improvements)),
        ]
    if c.unproven:
        blocks += [
            Heading("Changes past the floors without enough evidence (not counted)"),
            Bullets(tuple(f"{r.where}, {r.workload}: {r.what}" for r in c.unproven)),
        ]
    if c.regressions:
        blocks += [
            Heading("Regressions"),
            Bullets(tuple(f"{r.where}, {r.workload}: {r.what}" for r in c.regressions)),
            Banner(f"{len(c.regressions)} regressions (exit {c.exit_code}).", "bad"),
        ]
    else:
        blocks.append(
            Banner(
                f"No regression beyond the rules (exit {c.exit_code}).",
                "good" if c.exit_code == 0 else "bad",
            )
        )
    return Section("regressions", "Regressions", tuple(blocks))


def compare_runs(
    base: str | Path,
    run: str | Path,
    force: bool = False,
    p95_tolerance: float = DEFAULT_TOLERANCE,
    rss_tolerance: float = DEFAULT_TOLERANCE,
    min_samples: int = DEFAULT_MIN_SAMPLES,
    p95_floor_ms: float = DEFAULT_P95_FLOOR_MS,
) -> int:
    """Write compare-<BASE id>.md/.html into RUN and return 0, 1 (regression) or 2 (refused)."""
    try:
        comparison = compare(
            load_run(base),
            load_run(run),
            force,
            p95_tolerance,
            rss_tolerance,
            min_samples,
            p95_floor_ms,
        )
    except (RunDirError, CompareRefused) as exc:
        print(f"reports: {exc}", file=sys.stderr)
        return INVALID
    document = comparison_document(comparison)
    stem = comparison.run.run.path / f"compare-{comparison.base.run.run_id}"
    markdown, html = Path(f"{stem}.md"), Path(f"{stem}.html")
    nofollow.replace(markdown, render.markdown(document))
    nofollow.replace(html, render.html(document))
    print(
        f"{len(comparison.regressions)} regressions (exit {comparison.exit_code}), "
        f"{len(comparison.improvements)} improvements: {markdown}, {html.name}"
    )
    for line in comparison.environment:
        print(f"  environment: {line}")
    for r in comparison.regressions:
        print(f"  {r.where}, {r.workload}: {r.what}")
    for r in comparison.improvements:
        print(f"  improved: {r.where}, {r.workload}: {r.what}")
    if comparison.unproven:
        print(f"  {len(comparison.unproven)} changes past the floors without evidence (see report)")
    return comparison.exit_code
