"""The report's section per fault window (issue 45): what was done about it and when, then each
workload before, during and after it, its time to recover and its retries' cost, what became
of the work it accepted, and how load was shed or queued (reports/faults.py computes it)."""

from __future__ import annotations

from reports import formatting as fmt
from reports.document import Banner, Block, Bullets, Paragraph, Section, Table
from reports.faults import (
    FAULT_RULE,
    MEASURE_WORDS,
    REPORTED,
    FaultCheck,
    Span,
    WindowReport,
    WindowWorkload,
    fault_id,
    shed_cell,
)
from reports.verdict import Verdict

HEADERS = (
    "workload",
    "errors before",
    "errors during",
    "errors after",
    "p95 during ms (n)",
    "time to recover",
    "model calls per turn: before, during",
    "shed during; in flight at its end",
    "accepted during: processed, lost, not verifiable",
)


def fault_sections(verdict: Verdict, start_epoch: float) -> tuple[Section, ...]:
    """A section per window, in the order the scenario lists them."""
    return tuple(_section(w, start_epoch) for w in verdict.faults)


def _section(report: WindowReport, start_epoch: float) -> Section:
    window = report.window
    fault = window.fault
    blocks: list[Block] = []
    if report.undo_failed:
        blocks.append(
            Banner(
                "Its undoing FAILED: what followed it was not the platform's doing alone, and "
                "the run is invalid.",
                "bad",
                report.undo_failed,
            )
        )
    lead = (
        f"{fault.what.capitalize()}, in {fault.phase} from {fmt.seconds(fault.start_s)} for "
        f"{fmt.seconds(fault.duration_s)}: {window.start_s:g}–{window.end_s:g} s of the run."
    )
    if fault.written_duration_s and (
        fault.written_duration_s != fault.duration_s or fault.written_start_s != fault.start_s
    ):
        lead += " (--scale moved it with its phase.)"
    blocks.append(Paragraph(lead))
    if report.not_applied:
        blocks.append(Banner(f"Not applied, so judged nowhere: {report.not_applied}", "warn"))
    if report.events:
        blocks.append(
            Bullets(
                tuple(
                    f"{e.by}: {e.event} at {e.at - start_epoch:.3f} s "
                    f"(planned {e.planned - start_epoch:.3f} s)"
                    + (f": {e.detail}" if e.detail else "")
                    for e in report.events
                )
            )
        )
    blocks.append(
        Table(HEADERS, tuple(_row(w) for w in report.workloads), empty="No workload ran.")
    )
    if report.queue:
        blocks.append(
            Table(
                ("queue (probe series)", "peak before", "peak during"),
                tuple((q.series, fmt.amount(q.before), fmt.amount(q.during)) for q in report.queue),
            )
        )
    judged = [c for c in report.checks if c.judged]
    if judged:
        blocks.append(
            Table(
                ("check", "limit", "measured (n)", "result"),
                tuple(_check_row(c) for c in judged),
                fit=True,
            )
        )
    blocks.append(Paragraph(f"Rule: {FAULT_RULE}."))
    return Section(fault_id(fault.name), f"Fault window: {fault.name}", tuple(blocks))


def _share(span: Span) -> str:
    return f"{fmt.rate(span.error_rate)} ({span.errors:,} of {span.calls:,})"


def _row(w: WindowWorkload) -> tuple[str, ...]:
    amplification = ""
    if w.amplification is not None:
        calls = (
            f"{_mean(w.calls_before)} (n={w.turns_before:,}), {_mean(w.calls_during)} "
            f"(n={w.turns_during:,})"
        )
        amplification = f"{calls}: {_said(w.amplification)}"
    accepted = (
        f"{w.accepted.processed:,}, {w.accepted.lost:,}, {w.accepted.unverified:,}"
        if w.accepted.accepted
        else fmt.ABSENT
    )
    return (
        w.workload,
        _share(w.before),
        _share(w.during),
        _share(w.after),
        f"{fmt.ms(w.latency.p95)} (n={w.latency.count:,})",
        _said(w.recover),
        amplification or fmt.ABSENT,
        shed_cell(w),
        accepted,
    )


def _mean(value: float | None) -> str:
    return fmt.ABSENT if value is None else f"{value:.2f}"


def _said(check: FaultCheck) -> str:
    """A measure as its cell reads: its reading, and its status when that is not plain."""
    if check.status in (REPORTED,) or check.reading.startswith(check.status):
        return check.reading
    if check.judged:
        return f"{check.reading} ({check.status})"
    return check.reading if check.measured is not None else f"{check.status}: {check.reading}"


def _check_row(c: FaultCheck) -> tuple[str, str, str, str]:
    limit = (
        f"≤ {fmt.seconds(c.limit)}"
        if c.metric == "time_to_recover_s" and c.limit is not None
        else f"≤ {c.limit:g}x"
    )
    return (
        f"{c.workload} {MEASURE_WORDS[c.metric]}",
        limit,
        f"{c.reading} (n={c.samples:,})",
        c.status,
    )
