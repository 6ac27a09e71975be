"""The report's account of the agent's loop: calls per turn, the platform's time per step,
steps per second, and latency by the history a turn carried (issue 28).

Everything here is read from the samples joined to the stub's call record
(reports/loop.py). A turn off plan is named with its count, never averaged in; a run
with no record says the loop was not measured.
"""

from __future__ import annotations

from typing import cast

import matplotlib
import pandas as pd

from inputs.agent import AGENT_WORKLOADS
from inputs.phases import BASELINE_PHASE
from reports import formatting as fmt
from reports.charts import SVG_STYLE, Chart, _figure, svg
from reports.document import Banner, Block, Figure, Paragraph, Section, Table
from reports.loop import (
    HISTORY,
    STEP_OVERHEAD_MS,
    OffPlan,
    calls_per_turn,
    measured,
    model_calls_per_s,
    off_plan,
)
from reports.ranks import pick
from reports.rundir import Run
from reports.stats import percentiles_of

SECTION = "agent-loop"


def loop_section(run: Run) -> tuple[Section, ...]:
    """The section, or none when no workload with a loop was offered."""
    offered = [w for w in AGENT_WORKLOADS if w in run.workloads]
    if not offered:
        return ()
    acting = [w for w in offered if run.scenario.agent(w).acts]
    if not measured(run.samples):
        if not acting:
            return ()
        text = (
            "Not measured: the run directory has no stub call record (stub_calls.csv), so "
            "the model calls each turn made are not known; the stub the run used was not the "
            "kit's, or could not be asked after the run."
        )
        return (Section(SECTION, "The agent's loop", (Paragraph(text),)),)
    blocks: list[Block] = [Paragraph(_lead(run, offered)), _calls_table(run, offered)]
    strays = off_plan(run.samples, run.scenario)
    if strays:
        blocks.append(
            Banner(
                "Turns whose model calls were not the planned steps (left out of the time per "
                "step):",
                "bad",
                tuple(_off_plan_line(o) for o in strays),
            )
        )
    blocks += _history_blocks(run)
    return (Section(SECTION, "The agent's loop", tuple(blocks)),)


def _off_plan_line(stray: OffPlan) -> str:
    """One workload's turns off plan, in words, with arrivals to find them by."""
    how = "stopped short" if stray.calls < stray.planned else "looped further"
    return (
        f"{stray.workload}: {fmt.count(stray.turns)} turns made {stray.calls} model calls where "
        f"{stray.planned} were planned ({how}; arrivals {', '.join(map(str, stray.examples))})"
    )


def _lead(run: Run, offered: list[str]) -> str:
    shapes = "; ".join(f"{w}: {_shape(run, w)}" for w in offered)
    return (
        f"What the stub saw of each turn's loop ({shapes}). The platform's time per step is "
        "the turn's latency minus the stub's own time for the turn's model calls, over those "
        "calls; it is taken over successful turns that made the planned calls."
    )


def _shape(run: Run, workload: str) -> str:
    agent = run.scenario.agent(workload)
    parts = [f"{agent.steps} model call{'s' if agent.steps != 1 else ''} a turn"]
    if agent.acts:
        parts.append(
            f"{agent.parallel_tools} tool call{'s' if agent.parallel_tools != 1 else ''} a step"
        )
        if agent.tool_ms:
            parts.append(f"the tool waits {fmt.ms(agent.tool_ms)} ms")
    return ", ".join(parts)


def _window(run: Run) -> tuple[str, tuple[float, float]]:
    """The phase steps per second are counted in: the baseline, else the whole run."""
    baseline = next((p for p in run.phases if p.name == BASELINE_PHASE), None)
    if baseline is None:
        return "the whole run", (0.0, run.end_s)
    return BASELINE_PHASE, (baseline.start_s, baseline.end_s)


def _calls_table(run: Run, offered: list[str]) -> Table:
    where, window = _window(run)
    rows = []
    names = list(run.scenario.mix)
    (overheads,) = pick(run.samples, STEP_OVERHEAD_MS, "TRUE", ["wi"])
    for workload in offered:
        calls = calls_per_turn(run.samples, workload)
        overhead = percentiles_of(overheads.get(names.index(workload)))
        rows.append(
            (
                workload,
                str(run.scenario.agent(workload).steps),
                ", ".join(f"{n}: {fmt.count(c)}" for n, c in sorted(calls.items())) or "–",
                f"{fmt.ms(overhead.p50)} / {fmt.ms(overhead.p95)} (n={fmt.count(overhead.count)})",
                fmt.per_s(model_calls_per_s(run.samples, workload, window)),
            )
        )
    return Table(
        (
            "workload",
            "planned calls a turn",
            "successful turns by calls made",
            "platform's time per step p50 / p95 ms",
            f"model calls/s in {where}",
        ),
        tuple(rows),
    )


def _history_blocks(run: Run) -> list[Block]:
    """Latency by the history each chat turn carried (the user turns its first call held)."""
    turns = f"workload = 'chat_stream' AND outcome = 'ok' AND {HISTORY} IS NOT NULL"
    history = f"CAST({HISTORY} AS BIGINT)"
    (latency,) = pick(run.samples, "latency_ms", turns, [history])
    if not latency:
        return []
    (overheads,) = pick(run.samples, STEP_OVERHEAD_MS, turns, [history])
    table = _table(latency)
    overhead = _table(overheads).set_index(HISTORY)
    rows = tuple(
        (
            str(int(row[HISTORY])),
            fmt.count(int(row["count"])),
            f"{fmt.ms(row['p50'])} / {fmt.ms(row['p95'])}",
            _overhead_cell(overhead, row[HISTORY]),
        )
        for _, row in table.iterrows()
    )
    return [
        Table(
            (
                "history (user turns sent)",
                "chat turns",
                "latency p50 / p95 ms",
                "platform's time per step p50 / p95 ms",
            ),
            rows,
        ),
        Figure(history_chart(table)),
    ]


def _table(picked: dict) -> pd.DataFrame:
    """Per history length (ascending): its count and p50, p95, p99 and maximum."""
    return pd.DataFrame(
        [(float(h), g.count, *g.values) for h, g in sorted(picked.items())],
        columns=[HISTORY, "count", "p50", "p95", "p99", "max"],
    )


def _overhead_cell(table: pd.DataFrame, history: float) -> str:
    if history not in table.index:
        return "–"
    row = cast(pd.Series, table.loc[history])
    return f"{fmt.ms(row['p50'])} / {fmt.ms(row['p95'])}"


def history_chart(table: pd.DataFrame) -> Chart:
    """Chat latency p50 and p95 against the history each turn carried."""
    title = "Chat turn latency by history length (user turns the platform sent the model)"
    with matplotlib.rc_context(SVG_STYLE):
        fig, (ax,) = _figure(1)
        ax.plot(table[HISTORY], table["p50"], marker="o", markersize=3, label="p50", linewidth=1)
        ax.plot(table[HISTORY], table["p95"], marker="o", markersize=3, label="p95", linewidth=1)
        ax.set_xlabel("history (user turns, this one included)")
        ax.set_ylabel("ms")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, loc="best")
    return Chart("history", title, svg(fig, "history"))
