"""What a terminal gets when a run ends, printed from summary.json's record.

The console text is printed from the summary, so ``make demo``, a headless run and
``reports build`` say the same thing: first, as k6 ends a run, each workload's
p50/p95/p99 and error rate over the whole run with their counts (a pass shows its
figures too), then the verdict line, its findings, recovery and validity, once.
"""

from __future__ import annotations

from reports import formatting as fmt
from reports.summary import PercentilesRecord, Summary, WorkloadSlice
from reports.validity import DAMAGED


def workload_table(summary: Summary) -> list[str]:
    """Per workload over the whole run: n and nearest-rank p50/p95/p99 over successes, and
    the error rate over calls (chat's first token on a line of its own), aligned columns."""
    header = ("whole run", "n", "p50", "p95", "p99", "error rate", "calls")
    rows: list[tuple[str, ...]] = [header]
    for name, w in summary.whole_run.workloads.items():
        rows.append((name, *_percentile_cells(w.latency_ms), _error_cell(w), f"{w.calls:,}"))
        if w.ttft_ms.count:
            rows.append((f"  {name} first token", *_percentile_cells(w.ttft_ms), "", ""))
        if w.itl_ms.count:
            rows.append((f"  {name} inter-token", *_percentile_cells(w.itl_ms), "", ""))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return [
        "  "
        + "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def _percentile_cells(p: PercentilesRecord) -> tuple[str, ...]:
    return (f"{p.count:,}", *(_ms(v) for v in (p.p50, p.p95, p.p99)))


def _ms(value: float | None) -> str:
    return fmt.ABSENT if value is None else f"{fmt.ms(value)} ms"


def _error_cell(w: WorkloadSlice) -> str:
    """The error rate over calls; known errors only, and how many more nobody could verify."""
    return fmt.known_rate(w.error_rate, w.after.unverified)


def console_text(summary: Summary) -> str:
    """Each workload's figures over the whole run, then the verdict line, its findings,
    recovery and validity (and first, any fault whose undoing failed)."""
    undone = summary.faults.undo_failed if summary.faults else []
    lines = [*(f"FAULT NOT UNDONE: {line}" for line in undone)]
    lines += [*workload_table(summary), "", summary.headline]
    if summary.findings:
        header = ("", "phase", "workload", "metric", "limit", "measured", "n")
        table = [header] + [
            (f.kind, f.phase, f.workload, f.metric, f.limit or "-", f.measured, f"{f.samples:,}")
            for f in summary.findings
        ]
        widths = [max(len(row[i]) for row in table) for i in range(len(header))]
        lines += [
            "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in table
        ]
    lines.append("  " + summary.recovery_line)
    validity = summary.validity
    counted = f"offered {validity.offered:,}, recorded {validity.recorded:,}"
    if summary.mode == "users":
        lines.append(
            f"  validity: {counted} (closed loop: offered is what the users sent; no schedule, "
            f"so lateness does not apply): {validity.status}"
        )
    else:
        lines.append(
            f"  validity: {counted}, late {validity.late:,} "
            f"({fmt.rate(validity.late_fraction)}, tolerance "
            f"{fmt.rate(validity.late_tolerance)}): {validity.status}"
        )
    for name, why in summary.unserved.items():
        lines.append(f"  not offered: {name}: {why}")
    for name, why in summary.why_not_offered.items():
        lines.append(f"  {name}: {why}")
    if scenario_left := [n for n in summary.not_offered if n not in summary.why_not_offered]:
        lines.append(f"  not offered by the scenario: {', '.join(scenario_left)}")
    if summary.platform_log is not None and summary.platform_log.errors:
        lines.append("  " + summary.platform_log.line)
    lines += [f"  {w}" for w in summary.warnings if w.startswith(DAMAGED)]
    return "\n".join(lines)
