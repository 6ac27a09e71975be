"""The run report as a Document, in the order the questions get asked, verdict last.

The first screen says the outcome as the seed says to read it: offered against
recorded, late dispatches and validity first, then one verdict line whose every
finding carries its sample count and a link to its evidence, then each workload's
headline (its p95 and error rate over the phases each is judged in, the count and
the limit beside them). The charts follow at once, drawn against the limits, and
each threshold phase by phase: a stakeholder who stops there has the answer and
its shape. The detail follows for whoever checks it: what was run, each phase
(offered and completed), the whole run, the system under test, and the full
verdict last, under the numbers it rests on (the counts above it say whether a
tail is a finding or three requests).

This module writes the first screen and puts the sections in order; each section's
content is a room of its own: run_section.py (what was run), phase_sections.py (each phase
and the whole run), detail_sections.py (accepted work, the system, the full verdict).
"""

from __future__ import annotations

from inputs.phases import RECOVERY_PHASE
from reports import formatting as fmt
from reports.charts import Chart
from reports.detail_sections import (
    SYSTEM,
    accepted_section,
    system_section,
    verdict_level,
    verdict_section,
)
from reports.document import (
    Banner,
    Block,
    Document,
    Figure,
    Paragraph,
    Section,
    Table,
)
from reports.faults import undo_failures
from reports.faults_report import fault_sections
from reports.finding import Finding
from reports.followups import unverified_reasons
from reports.headline import findings, recovery_summary, verdict_line
from reports.limits import Headline, headlines, measured_text, phase_grid
from reports.loop_report import loop_section
from reports.phase_sections import phase_section, whole_run
from reports.run_section import platform_name, what_was_run
from reports.rundir import Run
from reports.stats import RunStats
from reports.system import SystemStats
from reports.verdict import Verdict

# Findings the first screen lists before it points to the Verdict section for the rest: a
# short run can have fifteen, and the workloads' headline must still fit on the screen.
GLANCE_FINDINGS = 6
# What a closed loop says where open arrival states its schedule and lateness.
NO_LATENESS = "does not apply: closed loop (a user sends when its last answer is in)"


def report_document(
    run: Run,
    stats: RunStats,
    system: SystemStats,
    verdict: Verdict,
    charts: tuple[tuple[Chart, ...], tuple[Chart, ...]],
) -> Document:
    """Every section of the report, in the issue's order, with the verdict last."""
    request_charts, system_charts = charts
    phase_sections = tuple(phase_section(p, stats, verdict, run) for p in stats.phases)
    undone = undo_failures(verdict.faults)
    return Document(
        title=_title(run),
        subtitle=(
            (
                "A FAULT WAS NOT UNDONE, so the run is invalid (the first block says which). "
                if undone
                else ""
            )
            + f"Started {run.record.started_at or 'at an unrecorded time'} on "
            f"{fmt.machine(run.record.machine)}. The full verdict is the last section, "
            "under the numbers it rests on."
        ),
        glance=_glance(run, stats, verdict, system),
        sections=(
            _charts_section(request_charts, bool(run.windows)),
            _limits_section(run, stats, verdict),
            what_was_run(run, stats, system, verdict),
            *phase_sections,
            *fault_sections(verdict, run.record.start_epoch),
            whole_run(run, stats),
            *accepted_section(run, stats),
            *loop_section(run),
            system_section(run, system, system_charts),
            verdict_section(verdict),
        ),
    )


def _glance(run: Run, stats: RunStats, verdict: Verdict, system: SystemStats) -> tuple[Block, ...]:
    """The first screen: what to check before anything else, then one verdict line (and the
    platform's logged errors beside it, which no threshold sees)."""
    late = stats.lateness
    rule = run.scenario.lateness
    kept = (
        "every request its users sent left a sample"
        if run.closed_loop
        else "every offered arrival left a sample and the driver kept its schedule"
    )
    validity = (
        "INVALID: " + "; ".join(verdict.invalid_reasons)
        if verdict.invalid_reasons
        else f"valid: {kept}"
    )
    lateness = (
        NO_LATENESS
        if run.closed_loop
        else f"{fmt.count(late.late)} ({fmt.rate(late.fraction)}; tolerance "
        f"{fmt.rate(rule.max_late_fraction)})"
    )
    facts = Table(
        (
            "offered (sent by users)" if run.closed_loop else "offered",
            "recorded",
            "late dispatches",
            "validity",
        ),
        ((fmt.count(run.offered), fmt.count(late.recorded), lateness, validity),),
        fit=True,
    )
    found = findings(verdict)
    shown, rest = found[:GLANCE_FINDINGS], found[GLANCE_FINDINGS:]
    more = (f"{len(rest)} more, each in the Verdict section: {_kinds(rest)}",) if rest else ()
    logged = _logged_errors(system)
    # A fault that could not be undone is the first thing a reader must know.
    undone = undo_failures(verdict.faults)
    return (
        *((Banner("A fault was NOT undone:", "bad", undone),) if undone else ()),
        facts,
        Banner(
            verdict_line(verdict),
            verdict_level(verdict),
            (*(f.text for f in shown), *more, recovery_summary(verdict), *logged),
            (
                *(f.anchor for f in shown),
                *(("verdict",) if rest else ()),
                f"phase-{RECOVERY_PHASE}",
                *(SYSTEM for _ in logged),
            ),
        ),
        *_unverified_banner(run),
        _headline_table(headlines(run, stats, verdict)),
    )


def _kinds(found: tuple[Finding, ...]) -> str:
    """'8 inconclusive, 1 flag': findings counted by kind, in the order they come."""
    kinds = [f.kind for f in found]
    return ", ".join(f"{kinds.count(k)} {k}" for k in dict.fromkeys(kinds))


def _headline_table(rows: tuple[Headline, ...]) -> Table:
    """Each workload's p95 and error rate over the phases each is judged in, count and limit
    beside; the phases go in the header when every workload shares them, else in the cell."""
    latency_in = _shared_phases(h.latency.phases for h in rows)
    errors_in = _shared_phases(h.errors.phases for h in rows)

    def latency(h: Headline) -> str:
        kind = "" if h.latency_name == "p95" else f"{h.latency_name}: "
        where = "" if latency_in else f" in {_phases(h.latency.phases)}"
        return f"{kind}{measured_text(h.latency)}{where}"

    def errors(h: Headline) -> str:
        where = "" if errors_in else f" in {_phases(h.errors.phases)}"
        return f"{measured_text(h.errors)}{where}"

    return Table(
        (
            "workload",
            f"p95 in {latency_in}" if latency_in else "p95",
            f"error rate in {errors_in}" if errors_in else "error rate",
            "checks",
        ),
        tuple((h.workload, latency(h), errors(h), h.checks) for h in rows),
        empty="No workload was judged.",
        fit=True,
    )


def _shared_phases(phase_sets) -> str:
    """The phases every headline shares, in words; empty when they differ."""
    distinct = set(phase_sets)
    return _phases(distinct.pop()) if len(distinct) == 1 else ""


def _phases(names: tuple[str, ...]) -> str:
    return ", ".join(names)


def _charts_section(charts: tuple[Chart, ...], faults: bool) -> Section:
    """The run's shape right under the verdict: rates, latency against its limits, the
    latency distribution, errors and first tokens, each shaded by phase."""
    return Section(
        "charts",
        "Charts",
        (
            Paragraph(
                "Phases are shaded"
                + ("; fault windows are hatched over them, each named" if faults else "")
                + "; dashed lines are the scenario's limits, drawn over the "
                "phases they are judged in. Latency is over successful requests only."
            ),
            *(Figure(c) for c in charts),
        ),
    )


def _limits_section(run: Run, stats: RunStats, verdict: Verdict) -> Section:
    """Every threshold in every phase: where it held, where it broke, and the phases it is
    not judged in for context."""
    names = [p.name for p in run.phases]
    rows = phase_grid(run, stats, verdict)
    return Section(
        "limits",
        "Each phase against the limits",
        (
            Paragraph(
                "Each threshold on the requests offered in each phase: its result where the "
                "scenario judges it, the same measurement marked 'not judged' where it does "
                "not (ramp's cold start, or a burst a latency limit is not held to)."
            ),
            Table(
                ("check", "limit", *names),
                tuple((r.check, r.limit, *r.cells) for r in rows),
                empty="The scenario sets no thresholds.",
                fit=True,
            ),
        ),
    )


def _unverified_banner(run: Run) -> tuple[Block, ...]:
    """Why accepted work is not verifiable, one line per workload and reason (none: nothing)."""
    reasons = unverified_reasons(run.samples)
    if not reasons:
        return ()
    return (
        Banner(
            "Accepted work not verifiable, and why:",
            "warn",
            tuple(f"{fmt.count(n)} accepted {w} not verifiable: {why}" for w, why, n in reasons),
            ("accepted-work",) * len(reasons),
        ),
    )


def _logged_errors(system: SystemStats) -> tuple[str, ...]:
    """The platform-log line for the first screen, when the platform logged errors."""
    logged = system.platform_log
    return (logged.summary_line(),) if logged is not None and logged.errors else ()


def _title(run: Run) -> str:
    """'Load test of agno: scenario default, run ...': the platform first, when recorded, since
    a report read on its own must say what it measured."""
    name = platform_name(run)
    of = f" of {name}" if name else ""
    return f"Load test{of}: scenario {run.scenario.name}, run {run.run_id}"
