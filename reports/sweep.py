"""A sweep's report: each step's throughput and latency, the knee, the overhead, memory per session.

Reads a run directory written by a sweep shape (shapes/sweep.py), whose phases
are its steps, and answers the capacity questions the seeds ask: how much load
before a threshold breaks or throughput stops growing (the knee), what the
platform adds on top of the model (observed time minus the stub's stated
delays, read from the stub's /stats knobs in probes.csv), and what one
concurrent session costs in memory (a least-squares fit of the API process's
RSS and Private_Dirty against sessions, with r^2, and whether a rest step gave
it back). It never mixes modes: the run's mode is stated and decides what
"load" means (users, or arrivals per second). Writes sweep.md, sweep.html,
sweep.json and sweep.png beside the run's own report; the Markdown and HTML are a
Document rendered as the run report is (reports/document.py, render.py, the same
templates and number formatting), so the two cannot disagree on how a figure reads.

    python -m reports.sweep runs/<timestamp>
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import math
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import cast

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import ScalarFormatter
from msgspec import UNSET

from engine import nofollow
from engine.sweep_steps import REST, is_sweep
from reports import formatting as fmt
from reports import render
from reports.charts import PANEL_HEIGHT_IN, SVG_STYLE, WIDTH_IN, Chart, svg
from reports.document import Block, Bullets, Document, Figure, Paragraph, Section, Table
from reports.rundir import Run, RunDirError, load_run
from reports.stats import SliceStats, run_stats
from reports.thresholds import FAIL, PASS, ThresholdResult, judge_thresholds
from reports.verdict import FAILING

# The statuses that judge a step: held, or failing as the verdict counts it (over the
# limit, or too few answered to time).
JUDGED = FAILING | {PASS}

# A step "grew" when its completed throughput beat the previous step's by this fraction.
GROWTH_MIN = 0.10
# An open-arrival step keeps up while its successes per second reach this share of its rate.
KEEP_UP = 0.9
# Memory is "given back" when the rest step ends within this share of the growth above base.
GIVEN_BACK_SHARE = 0.25
# The workloads whose time includes one model call the stub answers.
MODEL_WORKLOADS = ("chat_stream", "agent_run")
MB = 1024 * 1024


@dataclass
class Step:
    """One sweep step as measured."""

    name: str
    load: float
    seconds: float
    offered: int
    completed_per_s: float
    successes_per_s: float
    error_rate: float | None
    shed_rate: float | None
    latency: dict[str, dict] = field(default_factory=dict)
    overhead: dict[str, dict] = field(default_factory=dict)
    thresholds: str = "none judged"
    holds: bool = True
    failed: list[str] = field(default_factory=list)
    rss_mb: float | None = None
    private_dirty_mb: float | None = None
    sessions: float | None = None


@dataclass
class Sweep:
    """The whole sweep: its steps and what they say."""

    run_id: str
    mode: str
    load_unit: str
    steps: list[Step]
    knee: float | None
    knee_text: str
    plateau_text: str
    stub: dict
    memory: dict


def stub_knobs(run: Run) -> dict:
    """The stub's stated delays from probes.csv (its /stats ``knobs``), empty if not probed."""
    probes = run.probes
    if probes is None or probes.empty:
        return {}
    rows = probes[(probes["probe"] == "stub") & probes["metric"].str.startswith("knobs.")]
    return {
        m.removeprefix("knobs."): float(v)
        for m, v in zip(rows["metric"], rows["value"], strict=False)
    }


def step_loads(run: Run) -> dict[str, float]:
    """Each step's load: its users in users mode (run.json ``users``), else its arrival rate."""
    if run.closed_loop:
        users = run.record.users
        return {} if users is UNSET else {s.name: float(s.users) for s in users}
    return {p.name: p.rate for p in run.phases}


def build(run: Run) -> Sweep:
    """Measure every step of a sweep run, then find its knee, overhead and memory fit."""
    stats = run_stats(run)
    results = judge_thresholds(run, stats)
    loads = step_loads(run)
    knobs = stub_knobs(run)
    steps = []
    for phase in stats.phases:
        if phase.name == REST:
            continue
        done, offered = phase.by_completion, phase.by_offer
        step = Step(
            name=phase.name,
            load=loads.get(phase.name, phase.window.rate),
            seconds=phase.window.duration_s,
            offered=phase.offered,
            completed_per_s=done.completed_per_s,
            successes_per_s=done.successes_per_s,
            error_rate=offered.total.error_rate,
            shed_rate=offered.total.shed / offered.total.calls if offered.total.calls else None,
        )
        step.latency = _latency(offered)
        step.overhead = _overhead(step.latency, knobs)
        judged = [r for r in results if r.phase == phase.name and r.status in JUDGED]
        step.failed = _broken(judged, phase.name)
        step.holds = not step.failed
        step.thresholds = (
            f"{len(judged) - len(step.failed)} of {len(judged)} hold" if judged else "none judged"
        )
        steps.append(step)
    memory = _memory(run, steps)
    knee, knee_text = _knee(steps, run)
    return Sweep(
        run_id=run.run_id,
        mode=run.record.mode,
        load_unit="users" if run.closed_loop else "arrivals/s",
        steps=steps,
        knee=knee,
        knee_text=knee_text,
        plateau_text=_plateau(
            steps,
            {n for n, v in run.scenario.mix.items() if v > 0},
            not run.closed_loop,
        ),
        stub=knobs,
        memory=memory,
    )


def broken_thresholds(run_dir: str | Path, step: str) -> tuple[int, list[str]]:
    """While a sweep runs: the samples recorded in ``step`` so far and its thresholds broken.

    Judged on requests offered in the step, as the final report judges them.
    """
    with load_run(run_dir) as run:
        stats = run_stats(run)
        results = judge_thresholds(run, stats)
    phase = stats.phase(step)
    recorded = phase.recorded if phase else 0
    return recorded, _broken(results, step)


def _broken(results: Iterable[ThresholdResult], step: str) -> list[str]:
    """The step's thresholds that broke, in words: each the verdict counts failing, so not
    measured (the platform answered too few to time) breaks a step too, and a step where
    nothing succeeded does not read as one that held."""
    return [
        f"{r.workload} {r.metric} {r.measured:g} > {r.limit:g}"
        if r.status == FAIL and r.measured is not None
        else f"{r.workload} {r.metric} {r.status}: {r.reading}"
        for r in results
        if r.phase == step and r.status in FAILING
    ]


def _latency(offered: SliceStats) -> dict[str, dict]:
    """Per workload with a timed success or a first token in the step: nearest-rank p50/p95
    over successes, TTFT p50/p95, and their counts."""
    out = {}
    for stats in sorted(offered.workloads, key=lambda w: w.workload):
        if not (stats.latency.count or stats.ttft.count):
            continue
        lat = stats.latency if stats.latency.count else None
        first = stats.ttft if stats.ttft.count else None
        out[stats.workload] = {
            "n": lat.count if lat else 0,
            "p50_ms": lat.p50 if lat else None,
            "p95_ms": lat.p95 if lat else None,
            "ttft_n": first.count if first else 0,
            "ttft_p50_ms": first.p50 if first else None,
            "ttft_p95_ms": first.p95 if first else None,
        }
    return out


def _overhead(latency: dict[str, dict], knobs: dict) -> dict[str, dict]:
    """What the platform added over the stub's stated delays, per model workload.

    TTFT overhead = observed TTFT - first_token_ms; turn overhead = observed turn time -
    (first_token_ms + (tokens - 1) x token_ms), the stub's whole answer.
    """
    if not {"first_token_ms", "token_ms", "tokens"} <= set(knobs):
        return {}
    first = knobs["first_token_ms"]
    stream = first + (knobs["tokens"] - 1) * knobs["token_ms"]
    out = {}
    for name in MODEL_WORKLOADS:
        lat = latency.get(name)
        if not lat:
            continue
        out[name] = {
            "ttft_p50_ms": _minus(lat["ttft_p50_ms"], first),
            "ttft_p95_ms": _minus(lat["ttft_p95_ms"], first),
            "turn_p50_ms": _minus(lat["p50_ms"], stream),
            "turn_p95_ms": _minus(lat["p95_ms"], stream),
        }
    return out


def _minus(value: float | None, stated: float) -> float | None:
    return None if value is None else value - stated


def _knee(steps: list[Step], run: Run) -> tuple[float | None, str]:
    """The highest load up to which every step's thresholds hold."""
    if not any(s.thresholds != "none judged" for s in steps):
        return None, "no threshold was judged in any step, so the sweep names no knee"
    knee = None
    for step in steps:
        if not step.holds:
            broke = "; ".join(step.failed)
            where = f"{_load(knee, run)}" if knee is not None else "none (the first step broke)"
            return knee, f"{where}: every threshold holds up to it; at {step.name} {broke}"
        knee = step.load
    return knee, f"{_load(knee, run)} or more: every threshold held at every step"


def _load(value: float | None, run: Run) -> str:
    unit = "users" if run.closed_loop else "/s"
    return "none" if value is None else f"{value:g} {unit}".replace(" /s", "/s")


def _plateau(steps: list[Step], workloads: set[str], open_arrival: bool) -> str:
    """Where successes per second stop keeping up with the offered rate (open arrival), or
    stop growing by GROWTH_MIN from step to step.

    Only steps in which every workload of the mix ran are compared: at 1 or 2 users
    only the largest classes have a user, and a different mix is a different load.
    """
    for step in steps if open_arrival else ():
        if step.load > 0 and step.successes_per_s < KEEP_UP * step.load:
            return (
                f"throughput stops keeping up at {step.name}: {step.successes_per_s:.1f}/s "
                f"successful of {step.load:g}/s offered"
            )
    full = [s for s in steps if workloads <= set(s.latency)]
    note = ""
    if len(full) < 2:
        full, note = steps, " (comparing steps with different mixes: few users per class)"
    for before, after in itertools.pairwise(full):
        if before.successes_per_s <= 0:
            continue
        gain = after.successes_per_s / before.successes_per_s - 1
        if gain < GROWTH_MIN:
            return (
                f"throughput stops growing after {before.name}: {before.successes_per_s:.1f}/s "
                f"there, {after.successes_per_s:.1f}/s at {after.name} ({gain:+.0%}){note}"
            )
    return f"throughput grew by 10% or more at every step from {full[0].name}{note}"


def _memory(run: Run, steps: list[Step]) -> dict:
    """API memory per step, a fit of MB per concurrent session, and whether rest gave it back."""
    probes = run.probes
    if probes is None or probes.empty or not (probes["probe"] == "api").any():
        return {"text": "not measured: give --api-pid (the API process) to probe its memory"}
    api = probes[probes["probe"] == "api"]
    rss = api[api["metric"] == "rss_bytes"]
    dirty = api[api["metric"] == "private_dirty_bytes"]
    users = run.closed_loop
    in_flight = _generator_in_flight(probes)
    windows = {p.name: p for p in run.phases}
    for step in steps:
        window = windows[step.name]
        step.rss_mb = _settled(rss, window.start_s, window.end_s)
        step.private_dirty_mb = _settled(dirty, window.start_s, window.end_s)
        step.sessions = step.load if users else _settled_mean(in_flight, window)
    out = {
        "sessions": "users (each its own session)"
        if users
        else "arrivals in flight (mean of the generator's count), open arrival has no sessions",
        "rss": _fit([(s.sessions, s.rss_mb) for s in steps]),
        "private_dirty": _fit([(s.sessions, s.private_dirty_mb) for s in steps]),
    }
    rest = windows.get(REST)
    peak = max((s.rss_mb for s in steps if s.rss_mb is not None), default=None)
    base = _value_before(rss, steps[0].seconds if steps else 0.0)
    if rest is None:
        out["given_back"] = "not measured: run the sweep with --rest-s to see memory after load"
    elif peak is None or base is None:
        out["given_back"] = "not measured: no memory reading in the steps"
    else:
        last = rss[(rss["t_s"] >= rest.start_s)]["value"]
        end = float(last.iloc[-1]) / MB if len(last) else None
        if end is None:
            out["given_back"] = "not measured: no reading in the rest step"
        else:
            grown = max(peak - base, 0.0)
            kept = end - base
            verdict = "given back" if kept <= GIVEN_BACK_SHARE * grown else "NOT given back"
            out["given_back"] = (
                f"{verdict}: RSS {base:.1f} MB at the start, {peak:.1f} MB at the peak step, "
                f"{end:.1f} MB after {rest.duration_s:g} s of rest"
            )
    out["text"] = _memory_text(out)
    return out


def _generator_in_flight(probes: pd.DataFrame) -> pd.DataFrame:
    rows = probes[probes["probe"].str.startswith("generator.") & (probes["metric"] == "in_flight")]
    return cast(pd.DataFrame, rows.groupby("t_s", as_index=False)["value"].sum())


def _settled(readings: pd.DataFrame, start: float, end: float) -> float | None:
    """Median reading in the second half of a step (after its users settled), in MB."""
    half = readings[(readings["t_s"] >= (start + end) / 2) & (readings["t_s"] < end)]
    if half.empty:
        half = readings[(readings["t_s"] >= start) & (readings["t_s"] < end)]
    return None if half.empty else float(half["value"].median()) / MB


def _settled_mean(readings: pd.DataFrame, window) -> float | None:
    inside = readings[(readings["t_s"] >= window.start_s) & (readings["t_s"] < window.end_s)]
    return None if inside.empty else float(inside["value"].mean())


def _value_before(readings: pd.DataFrame, first_step_s: float) -> float | None:
    early = readings[readings["t_s"] < first_step_s]
    rows = early if not early.empty else readings
    return None if rows.empty else float(rows["value"].iloc[0]) / MB


def _fit(points: list[tuple[float | None, float | None]]) -> dict:
    """Least squares y = base + slope x, with r^2 and the point count it rests on."""
    xs = np.array([x for x, y in points if x is not None and y is not None], dtype=float)
    ys = np.array([y for x, y in points if x is not None and y is not None], dtype=float)
    if len(xs) < 3 or np.ptp(xs) == 0:
        return {"points": len(xs), "text": "not fitted: needs 3 or more steps with readings"}
    slope, base = np.polyfit(xs, ys, 1)
    residual = ys - (base + slope * xs)
    total = ys - ys.mean()
    r2 = 1 - float(residual @ residual) / float(total @ total) if total.any() else 1.0
    return {"points": len(xs), "slope_mb": float(slope), "base_mb": float(base), "r2": r2}


def _memory_text(memory: dict) -> str:
    parts = []
    for key, label in (("rss", "RSS"), ("private_dirty", "Private_Dirty")):
        fit = memory[key]
        if "slope_mb" in fit:
            parts.append(
                f"{label}: {fit['slope_mb']:.3f} MB per session over a base of "
                f"{fit['base_mb']:.1f} MB (r^2 {fit['r2']:.2f}, {fit['points']} steps)"
            )
        else:
            parts.append(f"{label}: {fit['text']}")
    return "; ".join(parts) + f"; sessions are {memory['sessions']}; {memory['given_back']}."


# -- output ------------------------------------------------------------------------------------


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
                fmt.count(lat["n"]),
                fmt.ms(lat["p50_ms"]),
                fmt.ms(lat["p95_ms"]),
                fmt.count(lat["ttft_n"]),
                fmt.ms(lat["ttft_p50_ms"]),
                fmt.ms(lat["ttft_p95_ms"]),
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
                fmt.ms(o["ttft_p50_ms"]),
                fmt.ms(o["ttft_p95_ms"]),
                fmt.ms(o["turn_p50_ms"]),
                fmt.ms(o["turn_p95_ms"]),
            )
            for s in sweep.steps
            for name, o in s.overhead.items()
        ),
    )
    return Paragraph(stated), table


def _memory_blocks(sweep: Sweep) -> tuple[Block, ...]:
    """The fit of memory per session, and each step's readings when there are any."""
    text = Paragraph(sweep.memory["text"])
    if not _has_memory(sweep):
        return (text,)
    table = Table(
        ("step", "sessions", "RSS", "Private_Dirty"),
        tuple(
            (s.name, fmt.amount(s.sessions), fmt.mib(s.rss_mb), fmt.mib(s.private_dirty_mb))
            for s in sweep.steps
        ),
    )
    return text, table


def _has_memory(sweep: Sweep) -> bool:
    return any(s.rss_mb is not None for s in sweep.steps)


def chart(sweep: Sweep) -> MplFigure:
    """Throughput and latency against load, and memory against sessions when measured."""
    memory = _has_memory(sweep)
    rows = 3 if memory else 2
    fig = MplFigure(figsize=(WIDTH_IN, PANEL_HEIGHT_IN * rows), layout="constrained")
    axes = list(fig.subplots(rows, 1, squeeze=False).flat)
    _draw_throughput(axes[0], sweep)
    _draw_latency(axes[1], sweep)
    if memory:
        _draw_memory(axes[2], sweep)
    return fig


def _draw_throughput(ax: Axes, sweep: Sweep) -> None:
    """Completed and successful requests per second at each step's load, and the knee."""
    loads = [s.load for s in sweep.steps]
    ax.plot(loads, [s.completed_per_s for s in sweep.steps], "o-", label="completed/s")
    ax.plot(loads, [s.successes_per_s for s in sweep.steps], "s--", label="successful/s")
    if sweep.knee is not None:
        ax.axvline(sweep.knee, color="#c44e52", linestyle=":", label=f"knee {sweep.knee:g}")
    ax.set_ylabel("requests/s")
    ax.set_title(f"Sweep {sweep.run_id} ({sweep.mode})")
    ax.legend(fontsize=7)
    _load_axis(ax, loads)


def _draw_latency(ax: Axes, sweep: Sweep) -> None:
    """p95 latency per workload at each step's load, and chat's p95 first token."""
    loads = [s.load for s in sweep.steps]
    for name in sorted({n for s in sweep.steps for n in s.latency}):
        ax.plot(loads, _series(sweep, name, "p95_ms"), "o-", label=f"{name} p95")
        if name == "chat_stream":
            ax.plot(loads, _series(sweep, name, "ttft_p95_ms"), "x--", label="TTFT p95")
    ax.set_ylabel("ms")
    ax.set_xlabel(sweep.load_unit)
    ax.legend(fontsize=7)
    _load_axis(ax, loads)


def _series(sweep: Sweep, workload: str, key: str) -> list[float]:
    """One workload's value at each step, NaN (a gap in the line) where it had none."""
    values = [s.latency.get(workload, {}).get(key) for s in sweep.steps]
    return [np.nan if v is None else v for v in values]


def _load_axis(ax: Axes, loads: list[float]) -> None:
    """Loads that double from step to step (1, 2, 4, ...) on a log-2 axis, labelled plainly."""
    if len(loads) > 2 and min(loads) > 0 and max(loads) / min(loads) >= 8:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ScalarFormatter())


def _plotted(values: list[float | None]) -> list[float]:
    """Values as a chart plots them: an unmeasured one (None) is a gap (NaN)."""
    return [math.nan if v is None else v for v in values]


def _draw_memory(ax: Axes, sweep: Sweep) -> None:
    """RSS and Private_Dirty at each step's sessions, and the fitted lines."""
    xs = _plotted([s.sessions for s in sweep.steps])
    ax.plot(xs, _plotted([s.rss_mb for s in sweep.steps]), "o", label="RSS")
    ax.plot(xs, _plotted([s.private_dirty_mb for s in sweep.steps]), "s", label="Private_Dirty")
    for key in ("rss", "private_dirty"):
        fit = sweep.memory.get(key, {})
        if "slope_mb" in fit:
            x = np.array([min(v for v in xs if v is not None), max(v for v in xs if v)])
            ax.plot(x, fit["base_mb"] + fit["slope_mb"] * x, ":", label=f"{key} fit")
    ax.set_xlabel("concurrent sessions")
    ax.set_ylabel("MB")
    ax.legend(fontsize=7)


def write(sweep: Sweep, out: Path) -> list[Path]:
    """sweep.md, sweep.html (the chart inline), sweep.json and sweep.png in ``out``, each
    written by rename (engine/nofollow.py: never through a link planted where it goes)."""
    with matplotlib.rc_context(SVG_STYLE):
        fig = chart(sweep)
        drawn = Chart("sweep", "Throughput, latency and memory against load", svg(fig, "sweep"))
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=90, metadata={"Software": None})
    doc = document(sweep, drawn)
    nofollow.replace(out / "sweep.png", png.getvalue())
    nofollow.replace(out / "sweep.md", render.markdown(doc))
    nofollow.replace(out / "sweep.html", render.html(doc))
    nofollow.replace(out / "sweep.json", json.dumps(asdict(sweep), indent=1, default=str) + "\n")
    return [out / n for n in ("sweep.md", "sweep.html", "sweep.json", "sweep.png")]


DESCRIPTION = (
    "Write sweep.md, sweep.html, sweep.json and sweep.png into the run directory of a sweep "
    "(loadkit run --sweep-users or --sweep-rates, docs/capacity.md): each step's throughput "
    "and latency, the knee, the platform's overhead over the model, memory per session. "
    "Exit 0 written; 2 when the run cannot be read or is not a sweep (its phases are not "
    "sweep steps), and then nothing is written."
)


def main(argv: list[str] | None = None, prog: str = "python -m reports.sweep") -> int:
    """Build the sweep report of a sweep's run directory: 0 written; 2, writing nothing, when
    the run cannot be read or is not a sweep (a knee read off ramp, sustain, burst and recover
    would describe the plan, not the platform)."""
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    parser.add_argument("run_dir", help="the run directory of a sweep")
    args = parser.parse_args(argv)
    try:
        run = load_run(args.run_dir)
    except RunDirError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    with run:
        phases = [p.name for p in run.phases]
        if not is_sweep(phases):
            print(
                f"{prog}: {args.run_dir} is not a sweep (its phases are {', '.join(phases)}); "
                "a sweep's steps come from loadkit run --sweep-users or --sweep-rates",
                file=sys.stderr,
            )
            return 2
        sweep = build(run)
    write(sweep, Path(args.run_dir))
    print(f"{sweep.mode}: knee {sweep.knee_text}; {sweep.plateau_text}")
    print(f"memory: {sweep.memory['text']}")
    print(f"written: {Path(args.run_dir) / 'sweep.md'} (and .html, .json, .png)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
