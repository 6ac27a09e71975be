"""The HTML report's charts, drawn with matplotlib as SVG text to inline in the page.

Every time chart shades the phases so a change can be read against the schedule,
and a latency chart draws the scenario's limit for the percentile it plots over
the phases that limit is judged in: "is it under the line" is the question a
reader brings. Time series are binned (a probe's readings cut to each bin's lowest
and highest) so a chart of a ten-hour run stays a few thousand points, and a chart
with nothing to draw says what was missing instead of drawing axes. The distribution
is the nearest-rank percentile curve of the raw samples (every point a latency some
request had), on a scale that gives the tail as much room as the median.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass
from typing import Any, cast

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.typing import RcKeyType

from reports.dataset import Samples, double
from reports.ranks import Picked, pick
from reports.rundir import Run
from reports.stats import WORKLOAD_SLOTS

# Most points a time axis gets; longer runs widen the bins instead.
MAX_POINTS = 1500
# Latency and time-to-first-token windows, per the issue.
LATENCY_WINDOW_S = 5.0
WIDTH_IN = 8.0
# A series with fewer readings than this gets markers, so one reading is still visible.
FEW_POINTS = 30
# Limits are drawn dashed in one colour no phase band or series uses.
LIMIT_STYLE: dict[str, Any] = {"colors": "#b00020", "linestyles": "dashed", "linewidth": 1.2}
# Most points a percentile curve gets; a million samples would otherwise be a million.
CURVE_POINTS = 400
# Percentiles marked on the distribution's axis, as (percent, label).
NINES_TICKS = ((50, "p50"), (95, "p95"), (99, "p99"), (99.9, "p99.9"))
PANEL_HEIGHT_IN = 2.6
PHASE_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")
# Matplotlib's text becomes SVG <text>, so the page's font is used and glyphs are not paths.
SVG_STYLE: dict[RcKeyType, Any] = {"svg.fonttype": "none", "font.size": 9, "axes.titlesize": 10}
NO_METADATA = {"Creator": None, "Date": None, "Format": None, "Type": None}


@dataclass(frozen=True)
class Chart:
    """One chart: its SVG markup, or None and the reason there was nothing to draw."""

    id: str
    title: str
    svg: str | None
    no_data: str = ""


def report_charts(run: Run) -> tuple[tuple[Chart, ...], tuple[Chart, ...]]:
    """The run's charts (requests, latency, errors, first token) and its system charts."""
    with matplotlib.rc_context(SVG_STYLE):
        requests = (
            throughput_chart(run),
            latency_chart(run),
            distribution_chart(run),
            errors_chart(run),
            ttft_chart(run),
        )
        system = (
            probe_chart(run, "cpu", "CPU over time", "% of one core", {"cpu_percent": 1.0}),
            probe_chart(
                run,
                "memory",
                "Memory over time",
                "MiB",
                {"rss_bytes": 2**-20, "private_dirty_bytes": 2**-20},
                probes=("api",),
            ),
            probe_chart(
                run,
                "db",
                "Database connections over time",
                "connections",
                {"connections_total": 1.0, "connections_active": 1.0},
                probes=("db",),
            ),
        )
    return requests, system


def bin_width(run: Run, smallest: float) -> float:
    """Seconds per point on a time axis: ``smallest``, widened to keep MAX_POINTS."""
    return max(smallest, math.ceil(run.end_s / MAX_POINTS / smallest) * smallest)


def throughput_chart(run: Run) -> Chart:
    """Arrivals offered (by due time) and completed (by finish time) per second; in a closed
    loop what the users sent, by send time (nothing is due before it is sent)."""
    title = "Offered and completed requests per second"
    if not run.samples.count:
        return Chart("throughput", title, None, "No samples were recorded.")
    width = bin_width(run, 1.0)
    fig, (ax,) = _figure(1)
    offered = "sent by users" if run.closed_loop else "offered"
    for column, label in (("due_s", offered), ("finished_s", "completed")):
        t, per_s = _per_second(run.samples, column, "TRUE", width)
        ax.step(t, per_s, where="post", label=label, linewidth=1)
    by = "by send time" if run.closed_loop else "by due time"
    _finish(ax, run, f"requests/s ({width:g} s bins)", f"{offered} {by}, completed by finish time")
    return Chart("throughput", title, svg(fig, "throughput"))


def latency_chart(run: Run) -> Chart:
    """p50 and p95 latency over successes, per workload, in windows by due time, with the
    workload's p50 and p95 limits over the phases they are judged in."""
    title = f"Latency p50/p95 per workload against its limits ({LATENCY_WINDOW_S:g}-second windows)"
    width = bin_width(run, LATENCY_WINDOW_S)
    picked, _ = _latencies(run, "latency_ms", "timed")
    if not picked:
        return Chart("latency", title, None, "No successful requests to time.")
    names = list(run.scenario.mix)
    table = pd.DataFrame(
        [
            (names[code % WORKLOAD_SLOTS], _middle(code // WORKLOAD_SLOTS, width), *g.values[:2])
            for code, g in picked.items()
        ],
        columns=["workload", "window", "p50", "p95"],
    ).sort_values(["workload", "window"], kind="stable")
    workloads = [w for w in run.scenario.mix if w in set(table["workload"])]
    rows = math.ceil(len(workloads) / 2)
    fig, axes = _figure(rows, columns=2)
    for ax, workload in zip(axes, workloads, strict=False):
        mine = table[table["workload"] == workload]
        ax.plot(mine["window"], mine["p50"], label="p50", linewidth=1)
        ax.plot(mine["window"], mine["p95"], label="p95", linewidth=1)
        _limit_lines(ax, run, workload, ("p50_ms", "p95_ms"))
        ax.set_title(workload, pad=14)
        _finish(ax, run, "ms", "by due time")
    for ax in axes[len(workloads) :]:
        ax.set_visible(False)
    return Chart("latency", title, svg(fig, "latency"))


def errors_chart(run: Run) -> Chart:
    """Failures (failed, timeout, abandoned) and 429s per second, by workload and finish time."""
    title = "Errors and shed per second by workload"
    (bad,) = run.samples.one("SELECT count(*) FROM samples WHERE ok = 0")
    if not bad:
        return Chart("errors", title, None, "No request failed or was shed in this run.")
    width = bin_width(run, 1.0)
    fig, (failed_ax, shed_ax) = _figure(2)
    for ax, which, label in (
        (failed_ax, "outcome <> 'shed'", "failed"),
        (shed_ax, "outcome = 'shed'", "shed"),
    ):
        (rows,) = run.samples.one(f"SELECT count(*) FROM samples WHERE ok = 0 AND {which}")
        for workload in run.scenario.mix:
            where = f"ok = 0 AND {which} AND workload = '{workload}'"
            t, per_s = _per_second(run.samples, "finished_s", where, width)
            if len(t):
                ax.step(t, per_s, where="post", label=workload, linewidth=1)
        ax.set_title(f"{label} per second", pad=14)
        if not rows:
            ax.text(0.5, 0.5, f"none {label}", transform=ax.transAxes, ha="center")
        _finish(ax, run, f"requests/s ({width:g} s bins)", "by finish time")
    return Chart("errors", title, svg(fig, "errors"))


# Successful streams that recorded a first token.
FIRST_TOKENS = "ok = 1 AND ttft_ms IS NOT NULL"


def ttft_chart(run: Run) -> Chart:
    """p50 and p95 time to first token over successful streams, in windows by due time."""
    title = f"Time to first token p50/p95 against its limits ({LATENCY_WINDOW_S:g}-second windows)"
    width = bin_width(run, LATENCY_WINDOW_S)
    picked, _ = _latencies(run, "ttft_ms", FIRST_TOKENS)
    if not picked:
        return Chart("ttft", title, None, "No successful stream recorded a first token.")
    table = pd.DataFrame(
        [(_middle(code, width), *g.values[:2]) for code, g in sorted(picked.items())],
        columns=["window", "p50", "p95"],
    )
    fig, (ax,) = _figure(1)
    ax.plot(table["window"], table["p50"], label="p50", linewidth=1)
    ax.plot(table["window"], table["p95"], label="p95", linewidth=1)
    # In the order the streams first appear in the samples, as the limits were always drawn.
    firsts = run.samples.rows(
        f"SELECT workload FROM samples WHERE {FIRST_TOKENS} GROUP BY workload ORDER BY min(seq)"
    )
    for (workload,) in firsts:
        _limit_lines(ax, run, str(workload), ("p50_ttft_ms", "p95_ttft_ms"))
    _finish(ax, run, "ms", "by due time")
    return Chart("ttft", title, svg(fig, "ttft"))


def distribution_chart(run: Run) -> Chart:
    """Per workload (and chat's first token), the nearest-rank percentile curve of its
    successes in each phase, the count in the legend, and its percentile limits."""
    title = "Latency distribution per workload and phase (nearest rank over successes)"
    _, firsts = _latencies(run, "ttft_ms", FIRST_TOKENS)
    _, timed = _latencies(run, "latency_ms", "timed")
    names = list(run.scenario.mix)
    present = {
        key: {names[c % WORKLOAD_SLOTS] for c in picked}
        for key, picked in (("ttft", firsts), ("ms", timed))
    }
    panels = [
        (workload, f"{workload} first token", firsts, "_ttft_ms")
        for workload in run.scenario.mix
        if workload in present["ttft"]
    ] + [
        (workload, workload, timed, "_ms")
        for workload in run.scenario.mix
        if workload in present["ms"]
    ]
    if not panels:
        return Chart("distribution", title, None, "No successful requests to time.")
    panels.sort(key=lambda panel: list(run.scenario.mix).index(panel[0]))
    fig, axes = _figure(math.ceil(len(panels) / 2), columns=2, sharex=False)
    for ax, (workload, label_text, picked, suffix) in zip(axes, panels, strict=False):
        slot = names.index(workload)
        for i, phase in enumerate(run.phases):
            # A phase's samples are numbered by the first phase of its name (pi).
            number = next(k for k, p in enumerate(run.phases) if p.name == phase.name)
            group = picked.get(number * WORKLOAD_SLOTS + slot)
            if group is None:
                continue
            x, y = curve_points(group.count, group.values)
            ax.step(
                x,
                y,
                where="post",
                linewidth=1,
                color=PHASE_COLOURS[i % len(PHASE_COLOURS)],
                label=f"{phase.name} (n={group.count:,})",
                marker="o" if group.count < FEW_POINTS else None,
                markersize=2,
            )
        for t in run.scenario.thresholds:
            name, _, rest = t.metric.partition("_")
            if t.workload == workload and f"_{rest}" == suffix and name in _PERCENT_OF:
                ax.axhline(t.limit, **_line_style(), label=f"{name} limit ({', '.join(t.phases)})")
                ax.axvline(_nines(_PERCENT_OF[name]), color="#999999", linewidth=0.6)
        ax.set_title(label_text, pad=4)
        ax.set_xticks([_nines(p) for p, _ in NINES_TICKS], [t for _, t in NINES_TICKS])
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("ms")
        ax.legend(fontsize=7, loc="best")
        if _last_row(ax):
            ax.set_xlabel("percentile (nines scale: each step right is ten times rarer)")
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    return Chart("distribution", title, svg(fig, "distribution"))


def _latencies(run: Run, value: str, where: str) -> tuple[dict[int, Picked], dict[int, Picked]]:
    """``value``'s p50 and p95 per window of due time (whole-turn latency per workload, first
    token over every workload) and its percentile curve per phase and workload: one sorted
    pass for the latency charts and the distribution both, kept for the other."""
    key = f"charts {value}"
    if key not in run.samples.memo:
        window = _window_of("due_s", bin_width(run, LATENCY_WINDOW_S))
        per_window = f"{window} * {WORKLOAD_SLOTS} + wi" if value == "latency_ms" else window
        labels = [per_window, f"pi * {WORKLOAD_SLOTS} + wi"]
        run.samples.memo[key] = tuple(
            pick(run.samples, value, where, labels, (_p50_p95, curve_ranks))
        )
    return run.samples.memo[key]  # type: ignore[return-value]


def _p50_p95(n: int) -> np.ndarray:
    """Nearest rank of p50 and p95 over ``n`` observations."""
    return np.array([(50 * n + 99) // 100, (95 * n + 99) // 100], dtype=np.int64)


# The percentile each limit's first word names ("max" is the 100th, drawn at the curve's end).
_PERCENT_OF = {"p50": 50.0, "p95": 95.0, "p99": 99.0}


def curve_ranks(n: int) -> np.ndarray:
    """The ranks (1-based, of n sorted) a nearest-rank percentile curve on the nines scale
    draws: rank i is the value of every percentile in ((i-1)/n, i/n], at most CURVE_POINTS of
    them, always the first and the last (the maximum)."""
    x_end = math.log10(n) if n > 1 else 1.0
    grid = np.linspace(0.0, x_end, CURVE_POINTS)
    ranks = np.floor(n * (1.0 - 10.0**-grid)).astype("int64") + 1
    return np.unique(np.clip(np.append(ranks, [1, n]), 1, n))


def curve_points(n: int, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The curve of ``n`` observations from its values at ``curve_ranks(n)``: each drawn from
    where its rank's span starts."""
    ranks = curve_ranks(n)
    x = np.array([_nines(100.0 * (r - 1) / n) for r in ranks])
    # The last rank's span runs to the 100th percentile: draw it a step further right.
    return np.append(x, x[-1] + 0.3), np.append(values, values[-1])


def _nines(percent: float) -> float:
    """A percentile on the nines scale: p0 at 0, p90 at 1, p99 at 2, p99.9 at 3."""
    return -math.log10(1.0 - percent / 100.0)


def _line_style() -> dict:
    """LIMIT_STYLE in the singular names axhline takes."""
    return {
        "color": LIMIT_STYLE["colors"],
        "linestyle": LIMIT_STYLE["linestyles"],
        "linewidth": LIMIT_STYLE["linewidth"],
    }


def _limit_lines(ax: Axes, run: Run, workload: str, metrics: tuple[str, ...]) -> None:
    """``workload``'s limits on ``metrics``, each dashed over the phases it is judged in."""
    for t in run.scenario.thresholds:
        if t.workload != workload or t.metric not in metrics:
            continue
        spans = [p for p in run.phases if p.name in t.phases]
        for i, phase in enumerate(spans):
            style = {**LIMIT_STYLE, "label": f"{t.metric.split('_')[0]} limit" if i == 0 else None}
            ax.hlines(t.limit, phase.start_s, phase.end_s, **style)


def _last_row(ax: Axes) -> bool:
    """Whether ``ax`` is in its figure's bottom row (where the x axis is labelled)."""
    spec = ax.get_subplotspec()
    return spec is not None and spec.is_last_row()


def probe_chart(
    run: Run,
    chart_id: str,
    title: str,
    unit: str,
    metrics: dict[str, float],
    probes: tuple[str, ...] | None = None,
) -> Chart:
    """Probe series named in ``metrics`` (scaled by its factor) from ``probes`` (None: any)."""
    readings = run.probes if run.probes is not None else pd.DataFrame(columns=["probe", "metric"])
    wanted = readings["metric"].isin(list(metrics))
    if probes is not None:
        wanted &= readings["probe"].isin(probes)
    readings = readings[wanted]
    if readings.empty:
        return Chart(chart_id, title, None, _no_probe_reason(run, metrics, probes))
    fig, (ax,) = _figure(1)
    width = bin_width(run, 1.0)
    for key, series in readings.groupby(["probe", "metric"], sort=True):
        probe, metric = cast(tuple[str, str], key)
        t, value = envelope(series["t_s"].to_numpy(), series["value"].to_numpy(), width)
        ax.plot(
            t,
            value * metrics[metric],
            label=f"{probe} {metric}",
            marker="o" if len(series) < FEW_POINTS else None,
            markersize=3,
        )
    _finish(ax, run, unit, "by reading time")
    return Chart(chart_id, title, svg(fig, chart_id))


def envelope(t: np.ndarray, values: np.ndarray, width: float) -> tuple[np.ndarray, np.ndarray]:
    """A series of more than MAX_POINTS readings cut to its lowest and highest reading in each
    ``width``-second bin, in the order they were read: the line a reader sees is the same (its
    every peak and trough is still drawn, each a reading the probe took), but a day read every
    second is a few thousand points, not 86,400 (drawing those, and placing a legend around
    them, took seconds). A shorter series is drawn whole."""
    if len(t) <= MAX_POINTS:
        return t, values
    bins = np.floor(t / width).astype(np.int64)
    # By bin, then by value: each bin's first row is its lowest reading, its last its highest.
    order = np.lexsort((values, bins))
    edges = np.flatnonzero(np.diff(bins[order])) + 1
    firsts, lasts = np.r_[0, edges], np.r_[edges - 1, len(order) - 1]
    kept = np.unique(np.concatenate([order[firsts], order[lasts]]))
    return t[kept], values[kept]


def _no_probe_reason(run: Run, metrics: dict[str, float], probes: tuple[str, ...] | None) -> str:
    names = ", ".join(metrics)
    if run.probes is None:
        return f"No probes.csv in the run directory, so no {names} readings."
    missing = run.record.probes.missing
    why = "; ".join(f"{p}: {missing[p]}" for p in (probes or ()) if p in missing)
    return f"No {names} readings" + (f" ({why})." if why else ".")


def _window_of(column: str, width: float) -> str:
    """SQL: the number of the ``width``-second window a time falls in, as numpy's floor
    division (x // width) computes it, remainder first."""
    w = double(width)
    quotient = f"(({column} - fmod({column}, {w})) / {w})"
    return (
        f"CAST(floor({quotient}) + CASE WHEN {quotient} - floor({quotient}) > 0.5 "
        "THEN 1 ELSE 0 END AS BIGINT)"
    )


def _middle(window: int, width: float) -> float:
    """The middle of a window, where its point is drawn."""
    return float(window) * width + width / 2


def _per_second(
    samples: Samples, column: str, where: str, width: float
) -> tuple[np.ndarray, np.ndarray]:
    """Bin start times and events per second in each bin of ``width`` seconds, from the
    first bin to the last with an event (no bins when there is none)."""
    got = samples.arrays(
        f"SELECT CAST(floor({column} / {double(width)}) AS BIGINT) AS bin, count(*) AS n "
        f"FROM samples WHERE {where} GROUP BY bin HAVING bin >= 0"
    )
    bins, counts = got["bin"].astype("int64"), got["n"].astype("int64")
    if not bins.size:
        return np.zeros(0), np.zeros(0)
    per_bin = np.bincount(bins, weights=counts).astype("int64")
    return np.arange(len(per_bin)) * width, per_bin / width


def _figure(rows: int, columns: int = 1, sharex: bool = True) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=(WIDTH_IN, PANEL_HEIGHT_IN * rows), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False, sharex=sharex)
    return fig, list(axes.flat)


# A fault window's band: hatched over its phase's, in the limits' colour.
FAULT_STYLE: dict[str, Any] = {
    "facecolor": "none",
    "edgecolor": "#b00020",
    "hatch": "///",
    "linewidth": 0,
    "alpha": 0.45,
}


def _finish(ax: Axes, run: Run, unit: str, clock: str) -> None:
    """Phase bands with their names, fault windows hatched over them with theirs, axis
    labels, a legend when there is more than one line."""
    for i, phase in enumerate(run.phases):
        colour = PHASE_COLOURS[i % len(PHASE_COLOURS)]
        ax.axvspan(phase.start_s, phase.end_s, color=colour, alpha=0.12, linewidth=0)
        ax.text(
            (phase.start_s + phase.end_s) / 2,
            1.0,
            phase.name,
            transform=ax.get_xaxis_transform(),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    for window in run.windows:
        ax.axvspan(window.start_s, window.end_s, **FAULT_STYLE)
        ax.text(
            window.start_s,
            0.97,
            f" {window.fault.name}",
            transform=ax.get_xaxis_transform(),
            ha="left",
            va="top",
            fontsize=7,
            color=FAULT_STYLE["edgecolor"],
        )
    ax.set_xlim(0, max(run.end_s, ax.get_xlim()[1]))
    if _last_row(ax):
        ax.set_xlabel(f"seconds since load started ({clock})")
    ax.set_ylabel(unit)
    ax.set_ylim(bottom=0)
    if len(ax.get_legend_handles_labels()[0]) > 1:
        ax.legend(fontsize=7, loc="best")


def svg(fig: Figure, chart_id: str) -> str:
    """The figure as an inline <svg> element whose ids (and references to them) are its own.

    Matplotlib names groups ``axes_1``, ``line2d_1`` ... in every figure; inlined
    side by side those would clash, so each id is prefixed with the chart's.
    A fixed hash salt keeps the output identical for identical input.
    """
    out = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "reports"}):
        fig.savefig(out, format="svg", metadata=NO_METADATA)
    text = out.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r'\bid="', f'id="{chart_id}-', text)
    return re.sub(r'(url\(#|href="#)', rf"\g<1>{chart_id}-", text)
