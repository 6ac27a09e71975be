"""A sweep's report as a Document: the knee and throughput first, the chart, then each step's
numbers, the overhead over the model and the memory per session, rendered through
reports/render.py as the run's own report is."""

from __future__ import annotations

from reports import formatting as fmt
from reports.charts import Chart
from reports.document import Block, Bullets, Document, Figure, Paragraph, Section, Table
from reports.sweep.record import Sweep


def document(sweep: Sweep, drawn: Chart) -> Document:
    """The sweep report as a Document: the knee and throughput first, the chart, then each
    step's numbers, the overhead over the model and the memory per session."""
    return Document(
        title=f"Sweep {sweep.run_id}",
        subtitle=f"Mode: {sweep.mode} (load is {sweep.load_unit}; a run is in one mode only).",
        glance=(
            Paragraph(f"Knee: {sweep.knee_text}."),
            Paragraph(f"Throughput: {sweep.plateau_text}."),
        ),
        sections=(
            Section("chart", "Against load", (Figure(drawn),)),
            Section("steps", "Steps", _steps_blocks(sweep)),
            Section(
                "latency",
                "Latency per workload",
                (
                    Paragraph("Nearest rank over successes; the count beside each percentile."),
                    _latency_table(sweep),
                ),
            ),
            Section("overhead", "Overhead over the model", _overhead_blocks(sweep)),
            Section("memory", "Memory per session", _memory_blocks(sweep)),
        ),
    )


def _step_load(sweep: Sweep, load: float) -> str:
    """A step's load in the table: its users, or its arrival rate."""
    return fmt.count(round(load)) if sweep.load_unit == "users" else fmt.per_s(load)


def _steps_blocks(sweep: Sweep) -> tuple[Block, ...]:
    """The steps' table, then each broken threshold by step (long, so not in a cell)."""
    broken = tuple(f"{s.name}: {'; '.join(s.failed)}" for s in sweep.steps if s.failed)
    if not broken:
        return (_steps_table(sweep),)
    return _steps_table(sweep), Paragraph("Thresholds broken:"), Bullets(broken)


def _steps_table(sweep: Sweep) -> Table:
    """Per step: its load, what it offered, its throughput, error and shed rates, and how
    many of the thresholds judged in it hold."""
    # A closed loop offers what its users send; nothing is scheduled to compare it with.
    sent = "offered (sent)" if sweep.load_unit == "users" else "offered"
    unit = "users" if sweep.load_unit == "users" else "rate"
    return Table(
        ("step", unit, sent, "completed", "successful", "errors", "shed", "thresholds"),
        tuple(
            (
                s.name,
                _step_load(sweep, s.load),
                fmt.count(s.offered),
                fmt.per_s(s.completed_per_s),
                fmt.per_s(s.successes_per_s),
                fmt.rate(s.error_rate),
                fmt.rate(s.shed_rate),
                s.thresholds,
            )
            for s in sweep.steps
        ),
    )


def _latency_table(sweep: Sweep) -> Table:
    """Per step and workload: latency and first-token percentiles, each with its count."""
    return Table(
        ("step", "workload", "n", "p50 ms", "p95 ms", "TTFT n", "TTFT p50 ms", "TTFT p95 ms"),
        tuple(
            (
                s.name,
                name,
                fmt.count(lat.n),
                fmt.ms(lat.p50_ms),
                fmt.ms(lat.p95_ms),
                fmt.count(lat.ttft_n),
                fmt.ms(lat.ttft_p50_ms),
                fmt.ms(lat.ttft_p95_ms),
            )
            for s in sweep.steps
            for name, lat in s.latency.items()
        ),
    )


def _overhead_blocks(sweep: Sweep) -> tuple[Block, ...]:
    """The stub's stated delays and what the platform added over them, per step."""
    if not sweep.stub:
        return (
            Paragraph("Not measured: the stub's /stats (its knobs) was not probed (--stub-url)."),
        )
    k = sweep.stub
    stream = k["first_token_ms"] + (k["tokens"] - 1) * k["token_ms"]
    stated = (
        f"The stub states first token {fmt.ms(k['first_token_ms'])} ms, {k['tokens']:g} tokens "
        f"{fmt.ms(k['token_ms'])} ms apart, so a whole answer takes {fmt.ms(stream)} ms (jitter "
        f"{k.get('jitter', 0):g}). Overhead = observed minus stated."
    )
    table = Table(
        ("step", "workload", "TTFT +p50 ms", "TTFT +p95 ms", "turn +p50 ms", "turn +p95 ms"),
        tuple(
            (
                s.name,
                name,
                fmt.ms(o.ttft_p50_ms),
                fmt.ms(o.ttft_p95_ms),
                fmt.ms(o.turn_p50_ms),
                fmt.ms(o.turn_p95_ms),
            )
            for s in sweep.steps
            for name, o in s.overhead.items()
        ),
    )
    return Paragraph(stated), table


def _memory_blocks(sweep: Sweep) -> tuple[Block, ...]:
    """The fit of memory per session, and each step's readings when there are any."""
    text = Paragraph(sweep.memory.text)
    if not sweep.has_memory:
        return (text,)
    table = Table(
        ("step", "sessions", "RSS", "Private_Dirty"),
        tuple(
            (s.name, fmt.amount(s.sessions), fmt.mib(s.rss_mb), fmt.mib(s.private_dirty_mb))
            for s in sweep.steps
        ),
    )
    return text, table
