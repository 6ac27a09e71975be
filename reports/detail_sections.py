"""The report's detail after the numbers: work accepted for later and what became of it,
the system under test, and the full verdict last, under the figures it rests on.
"""

from __future__ import annotations

from inputs.phases import BASELINE_PHASE
from reports import formatting as fmt
from reports.charts import Chart
from reports.document import (
    Banner,
    Block,
    Bullets,
    Figure,
    Heading,
    Paragraph,
    Section,
    Table,
)
from reports.headline import findings, recovery_summary, verdict_line
from reports.rundir import Run
from reports.stats import RunStats
from reports.system import SystemStats
from reports.thresholds import INCONCLUSIVE
from reports.verdict import Verdict

# The system section's id: the first screen's platform-log line links to it.
SYSTEM = "system"


def accepted_section(run: Run, stats: RunStats) -> tuple[Section, ...]:
    """What became of the work the platform accepted for later (a 202, or a 200 that only
    accepts, as agno's WhatsApp delivery), per workload, whole run (no section when nothing
    was accepted for later). followups.csv's states keep their names ("failed after 202")."""
    accepted = [w for w in stats.whole.workloads if w.counts.after.accepted]
    if not accepted:
        return ()
    rows = tuple(
        (
            w.workload,
            fmt.count(w.counts.after.accepted),
            fmt.count(w.counts.after.processed),
            fmt.count(w.counts.after.failed_after),
            fmt.count(w.counts.after.not_finished),
            fmt.count(w.counts.after.unverified),
        )
        for w in accepted
    )
    blocks: list[Block] = [
        Paragraph(
            "An answer that accepts work for later (a 202, or a 200 that only accepts it) says "
            "the platform took the work, not that it did it. After the run each accepted "
            "arrival was followed on the platform (followups.csv) for up to "
            f"{_grace(run)} after the run. Failed after accepting and not finished in grace "
            "are lost work: they count against the workload's error rate, and 'Failures by "
            "reason' gives the platform's words."
        ),
        Table(
            (
                "workload",
                "accepted",
                "processed",
                "failed after accepting",
                "not finished in grace",
                "not verifiable",
            ),
            rows,
        ),
    ]
    unverified = [w for w in accepted if w.counts.after.unverified]
    if unverified:
        blocks.append(
            Banner(
                "Processing not verifiable: nothing shows what became of this accepted work. An "
                "error-rate threshold its known failures already break fails; one it could "
                "still tip is not measured, never passed.",
                "warn",
                tuple(
                    f"{w.workload}: {fmt.count(w.counts.after.unverified)} of "
                    f"{fmt.count(w.counts.after.accepted)}"
                    for w in unverified
                ),
            )
        )
    return (Section("accepted-work", "Work accepted for later", tuple(blocks)),)


def _grace(run: Run) -> str:
    """How long the follow-up waited, as run.json says (older runs: the slowest timeout)."""
    grace = run.record.follow_up_grace_s
    return fmt.seconds(grace) if grace else "the slowest timeout"


def system_section(run: Run, system: SystemStats, charts: tuple[Chart, ...]) -> Section:
    """What the system under test and the generator were doing, phase by phase."""
    names = [p.name for p in run.phases]
    blocks: list[Block] = []
    if not system.has_probes_file:
        blocks.append(
            Paragraph("No probes.csv in the run directory: nothing was recorded about the system.")
        )
    blocks.append(
        Table(
            ("probe", "metric", "readings", *(f"peak in {n}" for n in names), "peak", "final"),
            tuple(
                (
                    s.probe,
                    s.metric,
                    fmt.count(s.readings),
                    *(fmt.probe_value(s.metric, s.peak_by_phase[n]) for n in names),
                    fmt.probe_value(s.metric, s.peak),
                    fmt.probe_value(s.metric, s.final),
                )
                for s in system.series
            ),
            empty="No probe readings.",
        )
    )
    if system.missing:
        blocks.append(
            Paragraph(
                f"Not taken, so absent rather than zero: {', '.join(system.missing)} "
                "(reasons under What was run)."
            )
        )
    if system.platform_log is not None:
        line = system.platform_log.summary_line()
        blocks.append(Paragraph(line[0].upper() + line[1:] + "."))
    blocks += [Figure(c) for c in charts]
    return Section(SYSTEM, "The system under test while it ran", tuple(blocks))


def verdict_section(verdict: Verdict) -> Section:
    """The full verdict, last in the report, under the numbers it rests on."""
    rows = tuple(
        (
            f"{t.workload} {fmt.metric_name(t.metric)} in {t.phase}",
            "> 0 samples" if t.limit is None else f"≤\u00a0{fmt.metric(t.metric, t.limit)}",
            # The count rides in the reading's cell, which wraps, so the table fits a phone.
            f"{t.reading or fmt.metric(t.metric, t.measured)} (n={t.samples:,})",
            t.status,
        )
        for t in verdict.thresholds
    )
    blocks: list[Block] = [
        Paragraph(
            "Each threshold is judged on the requests offered in each phase it names "
            "(scenario.yaml's judging block gives the defaults and why, and the minimum count "
            "each is judged on: 20 arrivals for a p95 or an error rate). It fails when what is "
            "known already breaks its limit, even with accepted work nobody could verify or "
            "fewer arrivals than its minimum; it is not measured when the unknown "
            "part could still tip it, and inconclusive when the plan offered fewer arrivals "
            "than its minimum and nothing known breaks it. A workload skipped at preflight is "
            "not measured, never a pass; a workload that did not come back to sustain's band "
            "in recover fails the run unless the scenario calls recovery informational. Exit "
            "codes: invalid 2, else fail 1, else inconclusive 2, else pass 0."
        ),
        Table(
            ("check", "limit", "measured (n)", "result"),
            rows,
            empty="The scenario sets no thresholds.",
            fit=True,
        ),
    ]
    if verdict.jumps:
        blocks += [
            Heading("Flagged without a threshold"),
            Bullets(
                tuple(
                    f"{j.workload} in {j.phase}: {j.kind} rate {fmt.rate(j.rate)} against "
                    f"{fmt.rate(j.baseline_rate)} in {BASELINE_PHASE} ({j.count} of {j.calls})"
                    for j in verdict.jumps
                )
            ),
        ]
    blocks.append(Paragraph(recovery_summary(verdict) + "."))
    blocks.append(_verdict_banner(verdict))
    return Section("verdict", "Verdict", tuple(blocks))


def _verdict_banner(verdict: Verdict) -> Banner:
    if verdict.invalid_reasons:
        return Banner(
            "INVALID: the run cannot be judged (exit 2); the results above are for diagnosis only.",
            "bad",
            verdict.invalid_reasons,
        )
    found = findings(verdict)
    return Banner(
        verdict_line(verdict) + ".",
        verdict_level(verdict),
        tuple(f.text for f in found),
        tuple(f.anchor for f in found),
    )


def verdict_level(verdict: Verdict) -> str:
    """How a verdict banner looks: good for a pass, bad for a failure or an invalid run, a
    warning for a run that could not judge some check (neither a pass nor the platform's
    failure)."""
    if verdict.exit_code == 0:
        return "good"
    return "warn" if verdict.word == INCONCLUSIVE else "bad"
