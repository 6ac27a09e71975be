"""The HTML report's charts, drawn with matplotlib as SVG text to inline in the page.

Every time chart shades the phases so a change can be read against the schedule,
and a latency chart draws the scenario's limit for the percentile it plots over
the phases that limit is judged in: "is it under the line" is the question a
reader brings. Time series are binned so a chart of a ten-hour run stays a few
thousand points, and a chart with nothing to draw says what was missing instead
of drawing axes. The distribution is the nearest-rank percentile curve of the raw
samples (every point a latency some request had), on a scale that gives the tail
as much room as the median.
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

from reports.rundir import Run
from reports.stats import percentile_table, timed_successes

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
    samples = run.samples
    if samples.empty:
        return Chart("throughput", title, None, "No samples were recorded.")
    width = bin_width(run, 1.0)
    fig, (ax,) = _figure(1)
    offered = "sent by users" if run.closed_loop else "offered"
    for column, label in (("due_s", offered), ("finished_s", "completed")):
        t, per_s = _per_second(samples[column], width)
        ax.step(t, per_s, where="post", label=label, linewidth=1)
    by = "by send time" if run.closed_loop else "by due time"
    _finish(ax, run, f"requests/s ({width:g} s bins)", f"{offered} {by}, completed by finish time")
    return Chart("throughput", title, svg(fig, "throughput"))


def latency_chart(run: Run) -> Chart:
    """p50 and p95 latency over successes, per workload, in windows by due time, with the
    workload's p50 and p95 limits over the phases they are judged in."""
    title = f"Latency p50/p95 per workload against its limits ({LATENCY_WINDOW_S:g}-second windows)"
    width = bin_width(run, LATENCY_WINDOW_S)
    timed = run.samples[timed_successes(run.samples)]
    if timed.empty:
        return Chart("latency", title, None, "No successful requests to time.")
    table = percentile_table(
        timed.assign(window=_window_middle(timed["due_s"], width)),
        ["workload", "window"],
        "latency_ms",
    ).reset_index()
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
    samples = run.samples
    bad = samples[samples["ok"] == 0]
    if bad.empty:
        return Chart("errors", title, None, "No request failed or was shed in this run.")
    width = bin_width(run, 1.0)
    fig, (failed_ax, shed_ax) = _figure(2)
    shed = bad["outcome"] == "shed"
    for ax, rows, label in ((failed_ax, bad[~shed], "failed"), (shed_ax, bad[shed], "shed")):
        for workload in run.scenario.mix:
            mine = rows.loc[rows["workload"] == workload, "finished_s"]
            if not mine.empty:
                t, per_s = _per_second(mine, width)
                ax.step(t, per_s, where="post", label=workload, linewidth=1)
        ax.set_title(f"{label} per second", pad=14)
        if rows.empty:
            ax.text(0.5, 0.5, f"none {label}", transform=ax.transAxes, ha="center")
        _finish(ax, run, f"requests/s ({width:g} s bins)", "by finish time")
    return Chart("errors", title, svg(fig, "errors"))


def ttft_chart(run: Run) -> Chart:
    """p50 and p95 time to first token over successful streams, in windows by due time."""
    title = f"Time to first token p50/p95 against its limits ({LATENCY_WINDOW_S:g}-second windows)"
    samples = run.samples
    streams = samples[(samples["ok"] == 1) & samples["ttft_ms"].notna()]
    if streams.empty:
        return Chart("ttft", title, None, "No successful stream recorded a first token.")
    width = bin_width(run, LATENCY_WINDOW_S)
    table = percentile_table(
        streams.assign(window=_window_middle(streams["due_s"], width)), ["window"], "ttft_ms"
    ).reset_index()
    fig, (ax,) = _figure(1)
    ax.plot(table["window"], table["p50"], label="p50", linewidth=1)
    ax.plot(table["window"], table["p95"], label="p95", linewidth=1)
    for workload in streams["workload"].unique():
        _limit_lines(ax, run, str(workload), ("p50_ttft_ms", "p95_ttft_ms"))
    _finish(ax, run, "ms", "by due time")
    return Chart("ttft", title, svg(fig, "ttft"))


def distribution_chart(run: Run) -> Chart:
    """Per workload (and chat's first token), the nearest-rank percentile curve of its
    successes in each phase, the count in the legend, and its percentile limits."""
    title = "Latency distribution per workload and phase (nearest rank over successes)"
    samples = run.samples
    timed = samples[timed_successes(samples)]
    firsts = samples[(samples["ok"] == 1) & samples["ttft_ms"].notna()]
    panels = [
        (workload, f"{workload} first token", firsts, "ttft_ms", "_ttft_ms")
        for workload in run.scenario.mix
        if (firsts["workload"] == workload).any()
    ] + [
        (workload, workload, timed, "latency_ms", "_ms")
        for workload in run.scenario.mix
        if (timed["workload"] == workload).any()
    ]
    if not panels:
        return Chart("distribution", title, None, "No successful requests to time.")
    panels.sort(key=lambda panel: list(run.scenario.mix).index(panel[0]))
    fig, axes = _figure(math.ceil(len(panels) / 2), columns=2, sharex=False)
    for ax, (workload, label, frame, column, suffix) in zip(axes, panels, strict=False):
        mine = frame[frame["workload"] == workload]
        for i, phase in enumerate(run.phases):
            values = mine.loc[mine["phase"] == phase.name, column].to_numpy(dtype="float64")
            if values.size:
                x, y = percentile_curve(values)
                ax.step(
                    x,
                    y,
                    where="post",
                    linewidth=1,
                    color=PHASE_COLOURS[i % len(PHASE_COLOURS)],
                    label=f"{phase.name} (n={values.size:,})",
                    marker="o" if values.size < FEW_POINTS else None,
                    markersize=2,
                )
        for t in run.scenario.thresholds:
            name, _, rest = t.metric.partition("_")
            if t.workload == workload and f"_{rest}" == suffix and name in _PERCENT_OF:
                ax.axhline(t.limit, **_line_style(), label=f"{name} limit ({', '.join(t.phases)})")
                ax.axvline(_nines(_PERCENT_OF[name]), color="#999999", linewidth=0.6)
        ax.set_title(label, pad=4)
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


# The percentile each limit's first word names ("max" is the 100th, drawn at the curve's end).
_PERCENT_OF = {"p50": 50.0, "p95": 95.0, "p99": 99.0}


def percentile_curve(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest-rank percentile curve of ``values`` on the nines scale: rank i (1-based, of n
    sorted) is the value of every percentile in ((i-1)/n, i/n], drawn from where its span
    starts, at most CURVE_POINTS ranks (always the first and the last, the maximum)."""
    ordered = np.sort(values)
    n = ordered.size
    x_end = math.log10(n) if n > 1 else 1.0
    grid = np.linspace(0.0, x_end, CURVE_POINTS)
    ranks = np.floor(n * (1.0 - 10.0**-grid)).astype("int64") + 1
    ranks = np.unique(np.clip(np.append(ranks, [1, n]), 1, n))
    x = np.array([_nines(100.0 * (r - 1) / n) for r in ranks])
    y = ordered[ranks - 1]
    # The last rank's span runs to the 100th percentile: draw it a step further right.
    return np.append(x, x[-1] + 0.3), np.append(y, y[-1])


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
    for key, series in readings.groupby(["probe", "metric"], sort=True):
        probe, metric = cast(tuple[str, str], key)
        ax.plot(
            series["t_s"],
            series["value"] * metrics[metric],
            label=f"{probe} {metric}",
            marker="o" if len(series) < FEW_POINTS else None,
            markersize=3,
        )
    _finish(ax, run, unit, "by reading time")
    return Chart(chart_id, title, svg(fig, chart_id))


def _no_probe_reason(run: Run, metrics: dict[str, float], probes: tuple[str, ...] | None) -> str:
    names = ", ".join(metrics)
    if run.probes is None:
        return f"No probes.csv in the run directory, so no {names} readings."
    missing = run.record.probes.missing
    why = "; ".join(f"{p}: {missing[p]}" for p in (probes or ()) if p in missing)
    return f"No {names} readings" + (f" ({why})." if why else ".")


def _window_middle(times: pd.Series, width: float) -> pd.Series:
    """The middle of the ``width``-second window each time falls in, where its point is drawn."""
    return (times // width) * width + width / 2


def _per_second(times: pd.Series, width: float) -> tuple[np.ndarray, np.ndarray]:
    """Bin start times and events per second in each bin of ``width`` seconds."""
    bins = np.floor(times.to_numpy() / width).astype("int64")
    bins = bins[bins >= 0]
    counts = np.bincount(bins) if bins.size else np.zeros(1)
    return np.arange(len(counts)) * width, counts / width


def _figure(rows: int, columns: int = 1, sharex: bool = True) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=(WIDTH_IN, PANEL_HEIGHT_IN * rows), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False, sharex=sharex)
    return fig, list(axes.flat)


def _finish(ax: Axes, run: Run, unit: str, clock: str) -> None:
    """Phase bands with their names, axis labels, a legend when there is more than one line."""
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
