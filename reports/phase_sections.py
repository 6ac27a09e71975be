"""Each phase's section and the whole run's: one table layout for every slice (outcomes,
percentiles over successes with their counts, first tokens, streams, failures in the
platform's words), so phases read alike, then the jumps after sustain and recover's recovery.
"""

from __future__ import annotations

from inputs.phases import BASELINE_PHASE, RECOVERY_PHASE
from reports import formatting as fmt
from reports.document import (
    Banner,
    Block,
    Bullets,
    Heading,
    Paragraph,
    Section,
    Table,
)
from reports.jumps import JUMP_RULE
from reports.recovery import NEVER, NOT_JUDGED, NOT_RECOVERED, RECOVERED, RECOVERY_RULE, Recovery
from reports.rundir import Run
from reports.stats import Counts, Percentiles, PhaseStats, RunStats, SliceStats
from reports.thresholds import INCONCLUSIVE, NOT_MEASURED
from reports.verdict import Verdict

# How arrivals ended (Counts fields), in the order every table prints them.
OUTCOME_HEADERS = ("ok", "failed", "shed", "cancelled", "timeouts", "abandoned")
WORKLOAD_HEADERS = (
    "workload",
    "calls",
    *OUTCOME_HEADERS,
    "error rate",
    "timed (n)",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "worst ms",
    "p95 from due ms",
)
PERCENTILE_HEADERS = ("workload", "n", "p50 ms", "p95 ms", "p99 ms", "worst ms")
STREAM_HEADERS = ("workload", "measure", "n", "p50 ms", "p95 ms", "p99 ms", "worst ms")


def outcome_cells(counts: Counts) -> tuple[str, ...]:
    """How a slice's arrivals ended, as the tables print them, in OUTCOME_HEADERS' order."""
    return tuple(fmt.count(getattr(counts, name)) for name in OUTCOME_HEADERS)


def _percentile_cells(p: Percentiles) -> tuple[str, ...]:
    """A measure's count and its p50, p95, p99 and max, as every percentile table prints them."""
    return (fmt.count(p.count), fmt.ms(p.p50), fmt.ms(p.p95), fmt.ms(p.p99), fmt.ms(p.max))


def _workload_table(part: SliceStats) -> Table:
    rows = [
        (
            w.workload,
            fmt.count(w.counts.calls),
            *outcome_cells(w.counts),
            fmt.rate(w.counts.error_rate),
            *_percentile_cells(w.latency),
            fmt.ms(w.latency_due.p95),
        )
        for w in part.workloads
    ]
    total = part.total
    rows.append(
        (
            "all workloads",
            fmt.count(total.calls),
            *outcome_cells(total),
            fmt.rate(total.error_rate),
            *[fmt.ABSENT] * 6,
        )
    )
    return Table(WORKLOAD_HEADERS, tuple(rows))


def _ttft_table(part: SliceStats) -> Table:
    return Table(
        PERCENTILE_HEADERS,
        tuple((w.workload, *_percentile_cells(w.ttft)) for w in part.workloads if w.ttft.count),
        empty="No successful stream recorded a first token here.",
    )


def _stream_table(part: SliceStats) -> Table | None:
    """A streamed turn timed token by token (first event, inter-token latency, longest gap,
    time per output token), or None where no stream measured them (a platform that sends no
    tokens, or a run from before)."""
    rows = tuple(
        (w.workload, label, *_percentile_cells(p))
        for w in part.workloads
        for label, p in (
            ("first event", w.first_event),
            ("inter-token", w.itl),
            ("longest gap", w.stall),
            ("per output token", w.tpot),
        )
        if p.count
    )
    return Table(STREAM_HEADERS, rows) if rows else None


def _failures_table(part: SliceStats) -> Table:
    return Table(
        ("workload", "outcome", "detail", "count"),
        tuple(
            (f.workload, f.outcome, f.detail or "(none)", fmt.count(f.count)) for f in part.failures
        ),
        empty="No failures.",
    )


def _slice_blocks(part: SliceStats, what: str) -> list[Block]:
    """The per-workload, first-token and failure tables for one set of samples."""
    return [
        Heading(f"Per workload: {what}"),
        _workload_table(part),
        Heading(f"Time to first token: {what}"),
        _ttft_table(part),
        *_stream_blocks(part, what),
        Heading(f"Failures by reason: {what}"),
        _failures_table(part),
    ]


def _stream_blocks(part: SliceStats, what: str) -> list[Block]:
    table = _stream_table(part)
    if table is None:
        return []
    tokens = sum(w.output_tokens for w in part.workloads)
    rate = f" ({fmt.per_s(tokens / part.window_s)} over the {part.window_s:g} s window)"
    return [
        Heading(f"Streams token by token: {what}"),
        Paragraph(
            "Over completed turns: inter-token latency is (last token - first token) / "
            "(tokens - 1), the longest gap a turn's longest wait between two tokens, per "
            f"output token its last token's time over its tokens; {fmt.count(tokens)} tokens "
            f"in all{rate if part.window_s > 0 else ''}."
        ),
        table,
    ]


def phase_section(phase: PhaseStats, stats: RunStats, verdict: Verdict, run: Run) -> Section:
    """One phase: what it offered and completed, its tables, its jumps and its recovery."""
    window = phase.window
    offered_rate = phase.offered / window.duration_s
    done = phase.by_completion
    offered = "sent by its users and recorded" if run.closed_loop else "offered"
    blocks: list[Block] = [
        Paragraph(_phase_lead(phase, run)),
        Paragraph(
            f"Throughput: {offered} {fmt.count(phase.offered)} ({fmt.per_s(offered_rate)}"
            f"{' achieved' if run.closed_loop else ''}); "
            f"completed inside the window {fmt.count(done.total.calls)} "
            f"({fmt.per_s(done.completed_per_s)}), of which {fmt.count(done.total.successes)} "
            f"successful ({fmt.per_s(done.successes_per_s)})."
        ),
        *_slice_blocks(phase.by_offer, f"requests offered in {phase.name}"),
        Heading(f"Per workload: requests completed inside the {phase.name} window"),
        Paragraph(
            f"Requests whose outcome was known between {window.start_s:g} s and "
            f"{window.end_s:g} s, whenever they were offered."
        ),
        _workload_table(done),
    ]
    if stats.phase(BASELINE_PHASE) and _after_baseline(phase, stats):
        blocks += _jump_blocks(phase, verdict)
    if phase.name == RECOVERY_PHASE and verdict.recovery is not None:
        blocks += _recovery_blocks(verdict.recovery)
    return Section(f"phase-{phase.name}", phase.name.capitalize(), tuple(blocks))


def _phase_lead(phase: PhaseStats, run: Run) -> str:
    """What the phase was: its schedule (open arrival), or its users (closed loop)."""
    window = phase.window
    span = f"from {window.start_s:g} s to {window.end_s:g} s ({fmt.seconds(window.duration_s)})"
    if not run.closed_loop:
        reason = f"{window.reason}. " if window.reason else ""
        spacing = fmt.arrivals(window.arrivals)
        return f"{reason}Scheduled at {fmt.per_s(window.rate)} ({spacing}) {span}."
    step = run.users_step(phase.name)
    users = step.users if step is not None else 0
    rate = fmt.per_s(phase.offered / window.duration_s)
    achieved = f"{rate} ({fmt.count(phase.offered)} request{'' if phase.offered == 1 else 's'})"
    if users == 0 and step is not None:
        return (
            f"Closed loop with 0 users asked for {span}: the last step's users stop at the "
            f"spawn rate, each after its request in flight; they sent {achieved} here, as "
            "recorded. There is no schedule, so lateness does not apply."
        )
    held = f"{fmt.count(users)} user{'' if users == 1 else 's'}" if step is not None else "users"
    lead = (
        f"Closed loop: {held} {span}; a user sends its next request as soon as its last one "
        "is answered. There is no schedule, so nothing was due and lateness does not apply; "
        f"the loop achieved {achieved}, as recorded."
    )
    missing = {
        name: count
        for name, count in (step.unserved if step is not None else {}).items()
        if window.offered.get(name, 0) == 0
    }
    if missing:
        lead += " Not offered here, no user at this count: " + ", ".join(
            f"{name} (needs {count} users)" for name, count in missing.items()
        )
        lead += "."
    return lead


def _after_baseline(phase: PhaseStats, stats: RunStats) -> bool:
    names = [p.name for p in stats.phases]
    return names.index(phase.name) > names.index(BASELINE_PHASE)


def _jump_blocks(phase: PhaseStats, verdict: Verdict) -> list[Block]:
    mine = [j for j in verdict.jumps if j.phase == phase.name]
    return [
        Heading(f"Compared with {BASELINE_PHASE}"),
        Paragraph(f"Rule: {JUMP_RULE}."),
        Bullets(
            tuple(
                f"{j.workload}: {j.kind} rate {fmt.rate(j.baseline_rate)} in {BASELINE_PHASE}, "
                f"{fmt.rate(j.rate)} here ({j.count} of {j.calls})"
                for j in mine
            )
        )
        if mine
        else Paragraph(f"No workload's failure or shed rate jumped against {BASELINE_PHASE}."),
    ]


def _time_to_recover(status: str, seconds: float | None) -> str:
    if status == RECOVERED:
        return fmt.seconds(seconds)
    return NEVER if status == NOT_RECOVERED else status


def _recovery_blocks(recovery: Recovery) -> list[Block]:
    rows = tuple(
        (
            c.workload,
            fmt.rate(c.baseline.counts.error_rate),
            fmt.rate(c.recover.counts.error_rate),
            f"{fmt.ms(c.baseline.latency.p95)} (n={c.baseline.latency.count})",
            f"{fmt.ms(c.recover.latency.p95)} (n={c.recover.latency.count})",
            _time_to_recover(c.status, c.time_to_recover_s),
            c.status + (f": {c.why}" if c.why else ""),
        )
        for c in recovery.checks
    )
    return [
        Heading(f"Did it recover to {BASELINE_PHASE}?"),
        Paragraph(f"Rule: {RECOVERY_RULE}."),
        Table(
            (
                "workload",
                f"{BASELINE_PHASE} error rate",
                f"{RECOVERY_PHASE} error rate",
                f"{BASELINE_PHASE} p95 ms",
                f"{RECOVERY_PHASE} p95 ms",
                "time to recover",
                "result",
            ),
            rows,
        ),
        Banner(_recovery_conclusion(recovery), "good" if recovery.status == RECOVERED else "bad"),
    ]


def _recovery_conclusion(recovery: Recovery) -> str:
    """One sentence true of every workload: the worst status first, then who came back and
    who was not judged."""
    names: dict[str, list[str]] = {}
    for c in recovery.checks:
        names.setdefault(c.status, []).append(c.workload)
    worst = ", ".join(names.get(recovery.status, []))
    if recovery.status == NOT_RECOVERED:
        tail = (
            ": the run fails" if recovery.required else " (informational: the verdict ignores it)"
        )
        lead = f"Recover did NOT come back to {BASELINE_PHASE}'s numbers for {worst}{tail}"
    elif recovery.status == NOT_MEASURED:
        lead = f"Whether {worst} came back depends on accepted work nobody could verify"
    elif recovery.status == INCONCLUSIVE:
        lead = f"Recovery could not be judged for {worst}: too few arrivals"
    elif recovery.status == RECOVERED:
        lead = f"Recover came back to {BASELINE_PHASE}'s numbers for {worst}"
    else:
        lead = f"Recovery was not judged: no workload passed {BASELINE_PHASE}"
    parts = [lead]
    if recovery.status != RECOVERED and names.get(RECOVERED):
        parts.append("recovered: " + ", ".join(names[RECOVERED]))
    if recovery.status != NOT_JUDGED and names.get(NOT_JUDGED):
        parts.append(f"not judged ({BASELINE_PHASE} did not pass): " + ", ".join(names[NOT_JUDGED]))
    return "; ".join(parts) + "."


def whole_run(run: Run, stats: RunStats) -> Section:
    """The whole run in the phases' table layout, so it reads like one of them."""
    whole = stats.whole
    blocks: list[Block] = [
        Paragraph(
            f"All {fmt.count(whole.total.calls)} recorded requests over "
            f"{fmt.seconds(run.end_s)} of {'closed-loop' if run.closed_loop else 'scheduled'} "
            f"load ({fmt.per_s(whole.completed_per_s)} "
            f"on average; {fmt.count(whole.total.successes)} successful)."
        ),
        *_slice_blocks(whole, "the whole run"),
    ]
    return Section("whole-run", "The whole run", tuple(blocks))
