"""The report's "What was run": the plan as the run states it (its mode, the platform, the
mix with what was left out and why, each phase's offered and completed counts, the
generator's lateness), so a reader knows what the figures below are figures of.
"""

from __future__ import annotations

from msgspec import UNSET

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
from reports.phase_sections import OUTCOME_HEADERS, outcome_cells
from reports.rundir import Run
from reports.stats import RunStats
from reports.system import SystemStats
from reports.thresholds import unserved
from reports.verdict import Verdict

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


def what_was_run(run: Run, stats: RunStats, system: SystemStats, verdict: Verdict) -> Section:
    """The plan the run followed and how well it was kept: an unusable run says why first."""
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


def _platform(run: Run) -> str:
    """The platform the run spoke to, as its fixture named it (runs before it was recorded
    say so)."""
    return platform_name(run) or "not recorded"


def platform_name(run: Run) -> str:
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


def _counts_table(run: Run, stats: RunStats) -> Table:
    return Table(
        ("offered", "recorded", *OUTCOME_HEADERS),
        (
            (
                fmt.count(run.offered),
                fmt.count(stats.lateness.recorded),
                *outcome_cells(stats.whole.total),
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
