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
"""

from __future__ import annotations

from msgspec import UNSET

from inputs.phases import BASELINE_PHASE, RECOVERY_PHASE
from reports import formatting as fmt
from reports.charts import Chart
from reports.document import (
    Banner,
    Block,
    Bullets,
    Document,
    Figure,
    Heading,
    Paragraph,
    Section,
    Table,
)
from reports.faults import undo_failures
from reports.faults_report import fault_sections
from reports.followups import unverified_reasons
from reports.headline import Finding, findings, recovery_summary, verdict_line
from reports.jumps import JUMP_RULE
from reports.limits import Headline, headlines, measured_text, phase_grid
from reports.loop_report import loop_section
from reports.recovery import NEVER, NOT_JUDGED, NOT_RECOVERED, RECOVERED, RECOVERY_RULE, Recovery
from reports.rundir import Run
from reports.stats import Counts, PhaseStats, RunStats, SliceStats
from reports.system import SystemStats
from reports.thresholds import INCONCLUSIVE, NOT_MEASURED, unserved
from reports.verdict import Verdict

# Findings the first screen lists before it points to the Verdict section for the rest: a
# short run can have fifteen, and the workloads' headline must still fit on the screen.
GLANCE_FINDINGS = 6
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
NOTES = (
    "How to read the tables below: percentiles are nearest-rank over successful requests "
    "(a stream's whole-turn latency over completed turns only), measured from send; "
    "'timed (n)' is the count they are taken over. {due} Error rate counts failed, "
    "timed-out and abandoned requests, work accepted for later and then lost{shed} over calls "
    "(see 'Work accepted for later'). The 'all workloads' row has no "
    "percentiles: one latency over a mix of different requests describes none of them."
)
DUE_NOTE = (
    "'p95 from due' measures from the scheduled time instead, which includes any driver lateness."
)
CLOSED_LOOP_DUE_NOTE = (
    "'p95 from due' equals p95 here: a closed-loop request is due when its user sends it."
)
# Why a workload with share 0 has no rows, no thresholds and no recovery anywhere below.
NOT_OFFERED = "Not offered by the scenario: its share is 0"
# The system section's id: the first screen's platform-log line links to it.
SYSTEM = "system"
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
    phase_sections = tuple(_phase_section(p, stats, verdict, run) for p in stats.phases)
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
            _what_was_run(run, stats, system, verdict),
            *phase_sections,
            *fault_sections(verdict, run.record.start_epoch),
            _whole_run(run, stats),
            *_accepted_section(run, stats),
            *loop_section(run),
            _system_section(run, system, system_charts),
            _verdict_section(verdict),
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


def verdict_level(verdict: Verdict) -> str:
    """How a verdict banner looks: good for a pass, bad for a failure or an invalid run, a
    warning for a run that could not judge some check (neither a pass nor the platform's
    failure)."""
    if verdict.exit_code == 0:
        return "good"
    return "warn" if verdict.word == INCONCLUSIVE else "bad"


def _logged_errors(system: SystemStats) -> tuple[str, ...]:
    """The platform-log line for the first screen, when the platform logged errors."""
    logged = system.platform_log
    return (logged.summary_line(),) if logged is not None and logged.errors else ()


def _mode(run: Run) -> str:
    """How load was offered: a run is in one mode only, and the reader must know which."""
    if run.closed_loop:
        return (
            "users (closed loop: each user sends its next request when the last one is "
            "answered, so no schedule, no arrival rate and no lateness; each phase states "
            "its users and the rate they achieved)"
        )
    return "open arrival (requests offered on a schedule, whatever the answers)"


def _said(value: object) -> str:
    """A recorded field as the report shows it; one the run did not record says so."""
    return "not recorded" if value is None or value is UNSET or value == "" else str(value)


def _lost(run: Run) -> str:
    """Load processes that never sent their last samples, each with the arrival indexes
    (its own, every W-th) the run never got back."""
    return "; ".join(
        f"process {p.slot} ({p.worker}): {fmt.plural(p.missing, 'arrival')} not "
        "returned, k = " + ", ".join(f"{a}" if a == b else f"{a}..{b}" for a, b in p.missing_ranges)
        for p in run.record.lost
    )


def _what_was_run(run: Run, stats: RunStats, system: SystemStats, verdict: Verdict) -> Section:
    record = run.record
    blocks: list[Block] = []
    if verdict.invalid_reasons:
        blocks.append(
            Banner(
                "UNUSABLE RUN: these numbers cannot be used as a result, because",
                "bad",
                verdict.invalid_reasons,
            )
        )
    if verdict.warnings:
        blocks.append(Banner("Read with care:", "warn", verdict.warnings))
    blocks.append(
        Table(
            ("what", "as recorded in run.json"),
            (
                ("scenario", run.scenario.name),
                ("platform", _platform(run)),
                ("mode", _mode(run)),
                ("started", _said(record.started_at)),
                ("ended", _said(record.ended_at)),
                ("stopped", _said(record.stopped)),
                ("machine", fmt.machine(record.machine)),
                ("topology", _said(record.topology)),
                ("host", _said(record.host)),
                # A run recorded before the option sent none.
                ("Accept-Encoding sent", record.accept_encoding or "none"),
                ("TLS certificates trusted", _said(record.tls_trust)),
                ("duration", fmt.seconds(float(record.duration_s))),
                ("scale", _said(record.scale)),
                ("workers", _said(record.workers)),
                *((("lost", _lost(run)),) if record.lost else ()),
                ("connections (driver bound)", _said(record.connections)),
            ),
        )
    )
    blocks += [
        Heading("Mix (normalised shares)"),
        Table(
            ("workload", "share", "what one request is"),
            tuple(_mix_row(run, w.name, w.description) for w in run.scenario.workloads),
        ),
        Heading("Phases"),
        _closed_loop_phases(run, stats)
        if run.closed_loop
        else Table(
            (
                "phase",
                "window s",
                "rate",
                "arrivals",
                "offered",
                "recorded",
                "late",
                "worst late ms",
                "p99 late ms",
                "why",
            ),
            tuple(
                (
                    p.name,
                    f"{p.window.start_s:g}–{p.window.end_s:g}",
                    fmt.per_s(p.window.rate),
                    fmt.arrivals(p.window.arrivals),
                    fmt.count(p.offered),
                    fmt.count(p.recorded),
                    fmt.count(p.lateness.late),
                    fmt.ms(p.lateness.lateness_ms.max),
                    fmt.ms(p.lateness.lateness_ms.p99),
                    p.window.reason,
                )
                for p in stats.phases
            ),
        ),
        Heading("Requests"),
        _counts_table(run, stats),
        Paragraph(
            NOTES.format(
                shed=_shed_note(run), due=CLOSED_LOOP_DUE_NOTE if run.closed_loop else DUE_NOTE
            )
        ),
        Paragraph(_lateness_text(run, stats)),
        Paragraph(_generator_text(system)),
        Heading("Workloads skipped at preflight"),
        Bullets(tuple(f"{name}: {why}" for name, why in verdict.skipped.items()))
        if verdict.skipped
        else Paragraph("Preflight skipped no workload."),
        *_no_user_blocks(run),
        Heading("Probes not taken"),
        Bullets(tuple(f"{probe}: {why}" for probe, why in system.missing.items()))
        if system.missing
        else Paragraph("Every probe the run asked for was taken."),
    ]
    return Section("what-was-run", "What was run", tuple(blocks))


def _title(run: Run) -> str:
    """'Load test of agno: scenario default, run ...': the platform first, when recorded, since
    a report read on its own must say what it measured."""
    name = _platform_name(run)
    of = f" of {name}" if name else ""
    return f"Load test{of}: scenario {run.scenario.name}, run {run.run_id}"


def _platform(run: Run) -> str:
    """The platform the run spoke to, as its fixture named it (runs before it was recorded
    say so)."""
    return _platform_name(run) or "not recorded"


def _platform_name(run: Run) -> str:
    """The platform's registry name, "" in a run from before it was recorded."""
    return run.record.platform.name if run.record.platform is not None else ""


def _mix_row(run: Run, name: str, description: str) -> tuple[str, str, str]:
    """A workload preflight left out, that no user ran (users mode), or that the scenario gives
    no share reads "not offered" with the reason, never a 0% share. This row is the one place
    a workload the scenario does not offer appears. What the workload became on the platform
    that ran follows the scenario's words, where the run recorded it."""
    spoken = run.record.platform
    request = spoken.requests.get(name) if spoken is not None else None
    if request:
        description = f"{description}: {request}" if description else request
    lead = f"{description}. " if description else ""
    if name in run.not_offered:
        # A platform's own share of 0 says why (per_platform); else the scenario's words.
        why = next((w.why for w in run.scenario.workloads if w.name == name and w.why), NOT_OFFERED)
        return (name, "not offered", f"{lead}{why.rstrip('.')}.")
    skipped = {**unserved(run), **run.record.skipped}
    if name in skipped:
        return (name, "not offered", f"{lead}Not offered: {skipped[name]}")
    return (name, f"{run.scenario.mix[name]:.1%}", description)


def _no_user_blocks(run: Run) -> list[Block]:
    """Users mode: the workloads no user ran, with why and the user count that fixes it."""
    missing = unserved(run)
    if not missing:
        return []
    return [
        Heading("Workloads no user ran"),
        Bullets(tuple(f"{name}: not offered, {why}" for name, why in missing.items())),
    ]


def _closed_loop_phases(run: Run, stats: RunStats) -> Table:
    """Users mode's phases: users and the rate they achieved, never a schedule or lateness."""
    return Table(
        ("phase", "window s", "users", "offered (sent)", "recorded", "achieved", "why"),
        tuple(
            (
                p.name,
                f"{p.window.start_s:g}–{p.window.end_s:g}",
                _users(run, p.name),
                fmt.count(p.offered),
                fmt.count(p.recorded),
                fmt.per_s(p.offered / p.window.duration_s),
                p.window.reason,
            )
            for p in stats.phases
        ),
    )


def _users(run: Run, phase: str) -> str:
    step = run.users_step(phase)
    return fmt.ABSENT if step is None else fmt.count(step.users)


def _outcome_cells(counts: Counts) -> tuple[str, ...]:
    return tuple(fmt.count(getattr(counts, name)) for name in OUTCOME_HEADERS)


def _counts_table(run: Run, stats: RunStats) -> Table:
    return Table(
        ("offered", "recorded", *OUTCOME_HEADERS),
        (
            (
                fmt.count(run.offered),
                fmt.count(stats.lateness.recorded),
                *_outcome_cells(stats.whole.total),
            ),
        ),
    )


def _lateness_text(run: Run, stats: RunStats) -> str:
    late = stats.lateness
    rule = run.scenario.lateness
    if run.closed_loop:
        return (
            "Driver lateness does not apply: in a closed loop a user sends its next request "
            "when its last one is answered, so nothing is due before it is sent and nothing "
            f"can be late. The driver's connection bound was {_said(run.record.connections)}."
        )
    return (
        f"Driver lateness: {fmt.count(late.late)} of {fmt.count(late.recorded)} dispatches late "
        f"(sent more than {rule.late_after_ms:g} ms after due, or never sent; "
        f"{fmt.count(late.never_sent)} never sent), {fmt.rate(late.fraction)} against a "
        f"tolerance of {fmt.rate(rule.max_late_fraction)}. Over the "
        f"{fmt.count(late.lateness_ms.count)} sent: worst {fmt.ms(late.lateness_ms.max)} ms, "
        f"p99 {fmt.ms(late.lateness_ms.p99)} ms. The driver's connection bound was "
        f"{_said(run.record.connections)}."
        + (f" {run.record.connections_note}." if run.record.connections_note else "")
    )


def _generator_text(system: SystemStats) -> str:
    if not system.generators:
        return "The generator did not probe itself: nothing says whether it kept up."
    parts = [
        f"{g.probe} peaked at {fmt.probe_value('cpu_percent', g.peak_cpu_percent)} CPU and "
        f"{fmt.probe_value('loop_lag_ms', g.peak_loop_lag_ms)} loop lag, so "
        + (f"it may have been the bottleneck ({g.why})" if g.busy else "it kept up")
        for g in system.generators
    ]
    return "The generator's own load: " + "; ".join(parts) + "."


def _shed_note(run: Run) -> str:
    return " and shed (429)" if run.scenario.shed_counts_as_error else " (not shed: 429s excluded)"


def _workload_table(part: SliceStats) -> Table:
    rows = [
        (
            w.workload,
            fmt.count(w.counts.calls),
            *_outcome_cells(w.counts),
            fmt.rate(w.counts.error_rate),
            fmt.count(w.latency.count),
            fmt.ms(w.latency.p50),
            fmt.ms(w.latency.p95),
            fmt.ms(w.latency.p99),
            fmt.ms(w.latency.max),
            fmt.ms(w.latency_due.p95),
        )
        for w in part.workloads
    ]
    total = part.total
    rows.append(
        (
            "all workloads",
            fmt.count(total.calls),
            *_outcome_cells(total),
            fmt.rate(total.error_rate),
            *[fmt.ABSENT] * 6,
        )
    )
    return Table(WORKLOAD_HEADERS, tuple(rows))


def _ttft_table(part: SliceStats) -> Table:
    return Table(
        PERCENTILE_HEADERS,
        tuple(
            (
                w.workload,
                fmt.count(w.ttft.count),
                fmt.ms(w.ttft.p50),
                fmt.ms(w.ttft.p95),
                fmt.ms(w.ttft.p99),
                fmt.ms(w.ttft.max),
            )
            for w in part.workloads
            if w.ttft.count
        ),
        empty="No successful stream recorded a first token here.",
    )


def _stream_table(part: SliceStats) -> Table | None:
    """A streamed turn timed token by token (first event, inter-token latency, longest gap,
    time per output token), or None where no stream measured them (a platform that sends no
    tokens, or a run from before)."""
    rows = tuple(
        (
            w.workload,
            label,
            fmt.count(p.count),
            fmt.ms(p.p50),
            fmt.ms(p.p95),
            fmt.ms(p.p99),
            fmt.ms(p.max),
        )
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


def _phase_section(phase: PhaseStats, stats: RunStats, verdict: Verdict, run: Run) -> Section:
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


def _whole_run(run: Run, stats: RunStats) -> Section:
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


def _accepted_section(run: Run, stats: RunStats) -> tuple[Section, ...]:
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


def _system_section(run: Run, system: SystemStats, charts: tuple[Chart, ...]) -> Section:
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


def _verdict_section(verdict: Verdict) -> Section:
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
