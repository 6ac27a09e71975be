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
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from reports import formatting as fmt
from reports import render
from reports.document import Banner, Block, Bullets, Document, Heading, Paragraph, Section, Table
from reports.evidence import percentile_change, rate_change
from reports.rundir import Run, RunDirError, load_run
from reports.stats import RunStats, SliceStats, WorkloadStats, run_stats, timed_successes
from reports.system import GENERATOR_PROBE, SystemStats, system_stats
from reports.verdict import Verdict, judge
from scenario import TRACE, Scenario

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
class Regression:
    where: str
    workload: str
    what: str


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
    regressions: tuple[Regression, ...]
    environment: tuple[str, ...] = ()
    # Milliseconds of a latency rise the environment's own slowdown explains.
    allowance_ms: float = 0.0
    # Changes beyond the floors that lacked samples or evidence: shown, not counted.
    unproven: tuple[Regression, ...] = ()

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
        f"trace {p.arrivals.trace}" if p.arrivals.kind == TRACE else p.arrivals.kind
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
    allowance = environment_allowance_ms(*sides)
    found, unproven = regressions(*sides, rules, allowance)
    return Comparison(
        *sides,
        scenario_difference=difference,
        rules=rules,
        regressions=found,
        environment=environment_differences(*sides),
        allowance_ms=allowance,
        unproven=unproven,
    )


def environment_allowance_ms(base: Side, run: Side) -> float:
    """How much later RUN's responses can be through the machine alone: the rise in the
    generator's peak loop lag plus the rise in the stub's worst p99 lateness (0 if none)."""
    rises = []
    for figure in (_generator_lag, _stub_lateness):
        old, new = figure(base), figure(run)
        if old is not None and new is not None:
            rises.append(max(0.0, new - old))
    return sum(rises)


def _stub_lateness(side: Side) -> float | None:
    peaks = [side.system.peak(probe, metric) for probe, metric in STUB_LATENESS]
    known = [p for p in peaks if p is not None]
    return max(known) if known else None


def environment_differences(base: Side, run: Side) -> tuple[str, ...]:
    """How the two runs' environments differed, each as one sentence; empty when alike."""
    found = []
    for key in ("machine", "topology", "workers"):
        old, new = base.run.meta.get(key), run.run.meta.get(key)
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


def _latencies(samples: pd.DataFrame, workload: str) -> np.ndarray:
    mine = samples[samples["workload"] == workload]
    return mine.loc[timed_successes(mine), "latency_ms"].to_numpy(dtype="float64")


def regressions(
    base: Side, run: Side, rules: Rules, allowance_ms: float = 0.0
) -> tuple[tuple[Regression, ...], tuple[Regression, ...]]:
    """(regressions, unproven): p95 and error-rate rises per phase and workload, and peak RSS.

    A rise past the floors with too few samples or an interval that includes zero
    is "unproven": listed, never counted.
    """
    found, unproven = [], []
    strict = zero_tolerance_workloads(run.run.scenario)
    base_slices, base_samples = _slices(base), _offered_samples(base)
    run_samples = _offered_samples(run)
    for where, part in _slices(run).items():
        for now in part.workloads:
            before = _workload(base_slices.get(where), now.workload)
            if before is None or where not in base_samples:
                continue
            p95 = _p95_rise(
                where,
                now.workload,
                (before, now),
                (base_samples[where], run_samples[where]),
                rules,
                allowance_ms,
            )
            errors = _error_rise(where, before, now, now.workload in strict, rules)
            for verdict, regression in (p95, errors):
                if regression is not None:
                    (found if verdict else unproven).append(regression)
    old_rss, new_rss = base.system.peak(*RSS), run.system.peak(*RSS)
    if (
        old_rss
        and new_rss is not None
        and new_rss > old_rss * (1 + rules.rss_tolerance)
        and new_rss - old_rss >= RSS_FLOOR_BYTES
    ):
        found.append(
            Regression(
                "system",
                "api",
                f"peak RSS {fmt.probe_value('rss_bytes', old_rss)} -> "
                f"{fmt.probe_value('rss_bytes', new_rss)} ({fmt.change(old_rss, new_rss)})",
            )
        )
    return tuple(found), tuple(unproven)


def _p95_rise(
    where: str,
    workload: str,
    stats: tuple[WorkloadStats, WorkloadStats],
    samples: tuple[pd.DataFrame, pd.DataFrame],
    rules: Rules,
    allowance_ms: float,
) -> tuple[bool, Regression | None]:
    """(proven, the rise) when p95 rose past both floors; (False, None) when it did not."""
    before, now = stats
    base_samples, run_samples = samples
    old, new = before.latency.p95, now.latency.p95
    if old is None or new is None:
        return False, None
    if new - old < rules.p95_floor_ms or new <= old * (1 + rules.p95_tolerance):
        return False, None
    counts = f"n={before.latency.count} -> {now.latency.count}"
    head = f"p95 {fmt.ms(old)} -> {fmt.ms(new)} ms ({fmt.change(old, new)}, {counts})"
    if min(before.latency.count, now.latency.count) < rules.min_samples:
        return False, Regression(
            where, workload, f"{head}: too few samples (< {rules.min_samples})"
        )
    interval = percentile_change(
        _latencies(base_samples, workload), _latencies(run_samples, workload), CONFIDENCE
    )
    bounds = f"{CONFIDENCE:.0%} interval {fmt.ms(interval.low)} to {fmt.ms(interval.high)} ms"
    if interval.low <= 0:
        return False, Regression(where, workload, f"{head}: within noise ({bounds})")
    if interval.low <= allowance_ms:
        return False, Regression(
            where,
            workload,
            f"{head}: within what the environment explains ({bounds}; the generator's lag and "
            f"the stub's lateness rose by {fmt.ms(allowance_ms)} ms)",
        )
    return True, Regression(where, workload, f"{head}; {bounds}")


def _error_rise(
    where: str, before: WorkloadStats, now: WorkloadStats, strict: bool, rules: Rules
) -> tuple[bool, Regression | None]:
    """(proven, the rise) when the error rate rose past its floor; (False, None) when not."""
    old, new = before.counts, now.counts
    if old.error_rate is None or new.error_rate is None:
        return False, None
    floor = 0.0 if strict else ERROR_FLOOR
    if new.error_rate - old.error_rate <= floor:
        return False, None
    head = (
        f"error rate {fmt.rate(old.error_rate)} -> {fmt.rate(new.error_rate)} "
        f"({old.errors} of {old.calls} -> {new.errors} of {new.calls}"
        f"{', a zero-tolerance workload' if strict else ''})"
    )
    if min(old.calls, new.calls) < rules.min_samples:
        return False, Regression(
            where, now.workload, f"{head}: too few samples (< {rules.min_samples})"
        )
    interval = rate_change(old.errors, old.calls, new.errors, new.calls, CONFIDENCE)
    bounds = (
        f"{CONFIDENCE:.0%} interval {fmt.points(0, interval.low)} to {fmt.points(0, interval.high)}"
    )
    if interval.low <= 0:
        return False, Regression(where, now.workload, f"{head}: within noise ({bounds})")
    return True, Regression(where, now.workload, f"{head}; {bounds}")


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
            (key, str(c.base.run.meta.get(key, "")), str(c.run.run.meta.get(key, "")))
            for key in ("started_at", "topology", "host", "scale", "workers")
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
            "Per workload, for requests offered in each phase: p95 over successes "
            "(nearest-rank, n beside it), error rate, and successful completions per second "
            "inside the phase's window."
        )
    ]
    base_slices, run_slices = _slices(c.base), _slices(c.run)
    base_done, run_done = _completions(c.base), _completions(c.run)
    for where, part in run_slices.items():
        rows = []
        for now in part.workloads:
            before = _workload(base_slices.get(where), now.workload)
            old_tp = _throughput(base_done.get(where), now.workload)
            new_tp = _throughput(run_done.get(where), now.workload)
            old_p95 = before.latency.p95 if before else None
            old_rate = before.counts.error_rate if before else None
            rows.append(
                (
                    now.workload,
                    _p95(before),
                    _p95(now),
                    fmt.change(old_p95, now.latency.p95),
                    fmt.rate(old_rate),
                    fmt.rate(now.counts.error_rate),
                    fmt.points(old_rate, now.counts.error_rate),
                    fmt.per_s(old_tp),
                    fmt.per_s(new_tp),
                    fmt.change(old_tp, new_tp),
                )
            )
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
    return Section("phases", "Per phase and workload", tuple(blocks))


def _p95(stats: WorkloadStats | None) -> str:
    if stats is None:
        return fmt.ABSENT
    return f"{fmt.ms(stats.latency.p95)} (n={stats.latency.count})"


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
            f"Rules: in any phase or the whole run, a p95 rise is a regression when it is above "
            f"{rules.p95_tolerance:.0%} and above {rules.p95_floor_ms:g} ms, both sides have at "
            f"least {rules.min_samples} timed successes, and the {CONFIDENCE:.0%} bootstrap "
            f"interval of the difference lies above zero and above what the environment "
            f"explains ({fmt.ms(c.allowance_ms)} ms here: the rise in the generator's peak loop "
            f"lag plus the rise in the stub's own lateness); an error-rate rise likewise, above "
            f"{ERROR_FLOOR * 100:g} point (any rise on a zero-tolerance workload: "
            f"{', '.join(strict) or 'none in this scenario'}) with at least {rules.min_samples} "
            f"calls each; peak API RSS up more than {rules.rss_tolerance:.0%} and "
            f"{RSS_FLOOR_BYTES // 2**20} MiB."
        ),
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
    markdown.write_text(render.markdown(document))
    html.write_text(render.html(document))
    print(
        f"{len(comparison.regressions)} regressions (exit {comparison.exit_code}): "
        f"{markdown}, {html.name}"
    )
    for line in comparison.environment:
        print(f"  environment: {line}")
    for r in comparison.regressions:
        print(f"  {r.where}, {r.workload}: {r.what}")
    if comparison.unproven:
        print(f"  {len(comparison.unproven)} changes past the floors without evidence (see report)")
    return comparison.exit_code
