"""`compare`: two runs of the same scenario side by side, and the regressions between them.

"Did this release make it worse" is a question about the same experiment run
twice, so runs of different scenarios are refused unless forced. Per phase and
workload the change in p95, error rate and throughput is shown; a regression is
p95 or peak RSS up by more than the tolerance, or any error-rate increase on a
workload whose error-rate threshold is zero.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from reports import formatting as fmt
from reports import render
from reports.document import Banner, Block, Bullets, Document, Heading, Paragraph, Section, Table
from reports.rundir import Run, RunDirError, load_run
from reports.stats import RunStats, SliceStats, WorkloadStats, run_stats
from reports.system import SystemStats, system_stats
from reports.verdict import Verdict, judge
from scenario import Scenario

# p95 latency or peak RSS more than this fraction above the base run is a regression.
DEFAULT_TOLERANCE = 0.2
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
class Comparison:
    base: Side
    run: Side
    scenario_difference: str | None
    p95_tolerance: float
    rss_tolerance: float
    regressions: tuple[Regression, ...]

    @property
    def exit_code(self) -> int:
        """2 when either run is invalid, 1 when a regression was found, else 0."""
        if self.base.verdict.invalid_reasons or self.run.verdict.invalid_reasons:
            return INVALID
        return 1 if self.regressions else 0


def scenario_difference(base: Scenario, run: Scenario) -> str | None:
    """The first way two scenarios differ as experiments, or None when they are the same.

    Phase lengths may differ (``--scale`` shortens a run without changing it);
    names, mix, rates, cancel share, timeouts and the shed rule may not.
    """
    facts = (
        ("name", base.name, run.name),
        ("mix", _rounded(base.mix), _rounded(run.mix)),
        ("phases", [p.name for p in base.phases], [p.name for p in run.phases]),
        ("phase rates", [p.rate for p in base.phases], [p.rate for p in run.phases]),
        ("chat_cancel_share", base.chat_cancel_share, run.chat_cancel_share),
        ("timeouts", base.timeouts, run.timeouts),
        ("shed_counts_as_error", base.shed_counts_as_error, run.shed_counts_as_error),
    )
    for what, a, b in facts:
        if a != b:
            return f"{what}: {a} in BASE, {b} in RUN"
    return None


def _rounded(mix: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 9) for k, v in mix.items()}


def compare(
    base: Run,
    run: Run,
    force: bool = False,
    p95_tolerance: float = DEFAULT_TOLERANCE,
    rss_tolerance: float = DEFAULT_TOLERANCE,
) -> Comparison:
    """The comparison of ``run`` against ``base``; CompareRefused for different scenarios."""
    difference = scenario_difference(base.scenario, run.scenario)
    if difference and not force:
        raise CompareRefused(
            f"compare: {base.path} and {run.path} ran different scenarios ({difference}); "
            "pass --force to compare them anyway"
        )
    sides = [_side(r) for r in (base, run)]
    return Comparison(
        *sides,
        scenario_difference=difference,
        p95_tolerance=p95_tolerance,
        rss_tolerance=rss_tolerance,
        regressions=regressions(*sides, p95_tolerance, rss_tolerance),
    )


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
    """Workloads whose error-rate threshold is zero: any new error there is a regression."""
    return {t.workload for t in scenario.thresholds if t.metric == "error_rate" and t.limit == 0}


def regressions(
    base: Side, run: Side, p95_tolerance: float, rss_tolerance: float
) -> tuple[Regression, ...]:
    """p95 up beyond tolerance, peak RSS up beyond tolerance, new errors where none are allowed."""
    found = []
    strict = zero_tolerance_workloads(run.run.scenario)
    base_slices = _slices(base)
    for where, part in _slices(run).items():
        for now in part.workloads:
            before = _workload(base_slices.get(where), now.workload)
            if before is None:
                continue
            old_p95, new_p95 = before.latency.p95, now.latency.p95
            if old_p95 and new_p95 is not None and new_p95 > old_p95 * (1 + p95_tolerance):
                found.append(
                    Regression(
                        where,
                        now.workload,
                        f"p95 {fmt.ms(old_p95)} -> {fmt.ms(new_p95)} ms "
                        f"({fmt.change(old_p95, new_p95)}, n={now.latency.count})",
                    )
                )
            old_rate, new_rate = before.counts.error_rate, now.counts.error_rate
            if (
                now.workload in strict
                and old_rate is not None
                and new_rate is not None
                and new_rate > old_rate
            ):
                found.append(
                    Regression(
                        where,
                        now.workload,
                        f"error rate {fmt.rate(old_rate)} -> {fmt.rate(new_rate)} on a "
                        f"zero-tolerance workload ({now.counts.errors} of {now.counts.calls})",
                    )
                )
    old_rss, new_rss = base.system.peak(*RSS), run.system.peak(*RSS)
    if old_rss and new_rss is not None and new_rss > old_rss * (1 + rss_tolerance):
        found.append(
            Regression(
                "system",
                "api",
                f"peak RSS {fmt.probe_value('rss_bytes', old_rss)} -> "
                f"{fmt.probe_value('rss_bytes', new_rss)} ({fmt.change(old_rss, new_rss)})",
            )
        )
    return tuple(found)


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
    blocks: list[Block] = [
        Paragraph(
            f"Rules: p95 up more than {c.p95_tolerance:.0%} in any phase or the whole run; "
            f"peak API RSS up more than {c.rss_tolerance:.0%}; any error-rate increase on a "
            f"zero-tolerance workload ({', '.join(strict) or 'none in this scenario'})."
        ),
    ]
    if c.regressions:
        blocks += [
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
) -> int:
    """Write compare-<BASE id>.md/.html into RUN and return 0, 1 (regression) or 2 (refused)."""
    try:
        comparison = compare(load_run(base), load_run(run), force, p95_tolerance, rss_tolerance)
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
    for r in comparison.regressions:
        print(f"  {r.where}, {r.workload}: {r.what}")
    return comparison.exit_code
