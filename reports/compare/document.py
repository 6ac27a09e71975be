"""The comparison as a document: what the pair can answer first, the runs, each phase, the system,
then the findings, named for what the pair is (regressions only between runs of one plan on one
platform)."""

from __future__ import annotations

from reports import formatting as fmt
from reports.compare.changes import (
    CONFIDENCE,
    ERROR_FLOOR,
    RSS,
    RSS_FLOOR_BYTES,
    Change,
    Latencies,
    compared_latencies,
    completions,
    contended_share,
    error_text,
    offered_samples,
    p95,
    slices,
    workload_stats,
    zero_tolerance_workloads,
)
from reports.compare.comparison import Comparison
from reports.compare.differences import Pairing, facts, plan_text
from reports.document import Banner, Block, Bullets, Document, Heading, Paragraph, Section, Table
from reports.stats import Counts, SliceStats

CPU = ("api", "cpu_percent")

SUBTITLES = {
    Pairing.GATE: "One plan on one platform: a regression gate. Regressions are listed last.",
    Pairing.PLATFORMS: (
        "Two platforms on one plan: side by side, not a regression gate (exit 2). "
        "Differences beyond noise are listed last."
    ),
    Pairing.PLANS: (
        "Two plans, compared because --force was given: side by side; no change between "
        "them is claimed (exit 2)."
    ),
}


def comparison_document(c: Comparison) -> Document:
    """The side-by-side report: the runs, per phase and workload, the system, findings last."""
    return Document(
        title=f"Compare: {c.base.run.run_id} (BASE) -> {c.run.run.run_id} (RUN)",
        subtitle=f"Scenario {c.run.run.scenario.name}. {SUBTITLES[c.pairing]}",
        sections=(
            _runs_section(c),
            _phases_section(c),
            _system_section(c),
            _findings_section(c),
        ),
    )


def _runs_section(c: Comparison) -> Section:
    blocks: list[Block] = []
    if c.differences.plan:
        blocks.append(
            Banner(
                "The runs' plans differ, so no change between them is the release's; nothing "
                "below is judged:",
                "warn",
                c.differences.plan,
            )
        )
    if c.differences.platform:
        blocks.append(
            Banner(
                f"Two platforms ({c.differences.platform}): a side-by-side, not a regression "
                "gate; a difference below is the platforms', not a release's.",
                "warn",
            )
        )
    if c.environment:
        blocks.append(
            Banner(
                "The runs' environments differ; a change below may be the machine, not the "
                "release:",
                "warn",
                c.environment,
            )
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
    old, new = facts(c.base.run), facts(c.run.run)
    rows = [
        ("run", c.base.run.run_id, c.run.run.run_id),
        ("platform", old.platform or "not recorded", new.platform or "not recorded"),
        ("mode", old.mode, new.mode),
        ("plan", plan_text(c.base.run), plan_text(c.run.run)),
        ("started at", old.started_at, new.started_at),
        ("topology", old.topology, new.topology),
        ("host", old.host, new.host),
        ("machine", fmt.machine(old.machine), fmt.machine(new.machine)),
        ("load processes", str(old.workers), str(new.workers)),
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
    base_slices, run_slices = slices(c.base), slices(c.run)
    base_done, run_done = completions(c.base), completions(c.run)
    base_samples, run_samples = offered_samples(c.base), offered_samples(c.run)
    for where, part in run_slices.items():
        rows, first_tokens = [], []
        for now in part.workloads:
            name = now.workload
            before = workload_stats(base_slices.get(where), name)
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
    best, worst = p95(values.best), p95(values.worst)
    said = fmt.ms(best) if best == worst else f"{fmt.ms(best)}–{fmt.ms(worst)}"
    return f"{said} (n={values.count})"


def _settled(values: Latencies | None) -> float | None:
    """The p95 when unverifiable work cannot move it, else None (no single change to show)."""
    if values is None or not values.count:
        return None
    best, worst = p95(values.best), p95(values.worst)
    return best if best == worst else None


def _points(old: Counts, new: Counts) -> str:
    """The error-rate change in points, only when neither side has unverifiable work."""
    if old.after.unverified or new.after.unverified:
        return fmt.ABSENT
    return fmt.points(old.error_rate, new.error_rate)


def _throughput(part: SliceStats | None, workload: str) -> float | None:
    stats = workload_stats(part, workload)
    return None if stats is None or part is None else stats.counts.successes / part.window_s


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


def _rules(c: Comparison) -> str:
    strict = sorted(zero_tolerance_workloads(c.run.run))
    rules = c.rules
    return (
        f"Rules: in any phase or the whole run, a rise in p95 latency from due (each "
        f"failure at its timeout), or in p95 first token likewise, counts when it "
        f"is above {rules.p95_tolerance:.0%} and above {rules.p95_floor_ms:g} ms, both "
        f"sides have at least {rules.min_samples} arrivals in it, the "
        f"{CONFIDENCE:.0%} bootstrap interval of the difference lies above zero and above "
        f"what the environment explains ({fmt.ms(c.machine.rise_ms)} ms here: the rise in "
        f"the generator's peak loop lag plus the rise in the stub's own lateness), and in "
        f"RUN the API process waited for a CPU less than "
        f"{contended_share(rules.p95_tolerance):.1%} of the time it was ready to run there, "
        f"and not so much more than in BASE that its CPU-bound work took "
        f"{rules.p95_tolerance:.0%} longer for that alone (else the rise is left untold: "
        f"no answer, not a pass); an "
        f"error-rate rise likewise but for the machine, above {ERROR_FLOOR * 100:g} point "
        f"(any rise on a zero-tolerance workload: {', '.join(strict) or 'none in this scenario'})"
        f" with at least {rules.min_samples} calls each; peak API RSS up more than "
        f"{rules.rss_tolerance:.0%} and {RSS_FLOOR_BYTES // 2**20} MiB. A rise must hold "
        f"with BASE's unverifiable accepted work counted as lost and RUN's as done. Falls "
        f"past the same floors, with that work counted the other way round, beyond what a "
        f"quieter environment explains ({fmt.ms(c.machine.fall_ms)} ms here) and with "
        f"BASE's API process as little held back, count the same way."
    )


def beyond_noise(c: Comparison) -> str:
    """How many of RUN's figures rose and fell beyond noise, in words."""
    return (
        f"{fmt.plural(len(c.rises), 'figure')} higher and {len(c.falls):,} lower in RUN "
        "beyond noise"
    )


def _bullets(found: tuple[Change, ...]) -> Bullets:
    return Bullets(tuple(f"{r.where}, {r.workload}: {r.what}" for r in found))


def _findings_section(c: Comparison) -> Section:
    if c.pairing is Pairing.PLANS:
        return Section(
            "differences",
            "Changes",
            (
                Banner(
                    f"Nothing is judged: the plans differ (exit {c.exit_code}).",
                    "warn",
                    c.differences.plan,
                ),
            ),
        )
    blocks: list[Block] = [Paragraph(_rules(c))]
    gate = c.pairing is Pairing.GATE
    rise, fall = ("Regressions", "Improvements") if gate else ("Higher in RUN", "Lower in RUN")
    if c.falls:
        blocks += [Heading(fall), _bullets(c.falls)]
    if c.unproven:
        blocks += [
            Heading("Changes past the floors without enough evidence (not counted)"),
            _bullets(c.unproven),
        ]
    if c.untold:
        blocks += [
            Heading("Rises the machine leaves untold (no answer: run the pair on a quieter one)"),
            _bullets(c.untold),
        ]
    if c.rises:
        blocks += [Heading(rise), _bullets(c.rises)]
    if not gate:
        blocks.append(
            Banner(
                f"{beyond_noise(c).capitalize()}; two platforms are not a regression gate "
                f"(exit {c.exit_code}).",
                "warn",
            )
        )
    elif c.regressions:
        blocks.append(
            Banner(f"{fmt.plural(len(c.regressions), 'regression')} (exit {c.exit_code}).", "bad")
        )
    elif c.untold:
        blocks.append(
            Banner(
                f"No regression proven, but {fmt.plural(len(c.untold), 'rise')} beyond noise "
                f"on a machine too busy to tell whose (exit {c.exit_code}): not a pass.",
                "warn",
            )
        )
    else:
        blocks.append(
            Banner(
                f"No regression beyond the rules (exit {c.exit_code}).",
                "good" if c.exit_code == 0 else "bad",
            )
        )
    return Section(
        "regressions" if gate else "differences",
        "Regressions" if gate else "Differences",
        tuple(blocks),
    )
