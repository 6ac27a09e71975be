"""A sweep's chart: throughput and latency against load, and memory against sessions when
measured, drawn as the run report's charts are (reports/charts.py's sizes and style)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import ScalarFormatter

from reports.charts import PANEL_HEIGHT_IN, WIDTH_IN
from reports.sweep.record import Fitted, Latency, Memory, Sweep


def chart(sweep: Sweep) -> MplFigure:
    """Throughput and latency against load, and memory against sessions when measured."""
    memory = sweep.has_memory
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
        ax.plot(loads, _series(sweep, name, lambda lat: lat.p95_ms), "o-", label=f"{name} p95")
        if name == "chat_stream":
            ttft = _series(sweep, name, lambda lat: lat.ttft_p95_ms)
            ax.plot(loads, ttft, "x--", label="TTFT p95")
    ax.set_ylabel("ms")
    ax.set_xlabel(sweep.load_unit)
    ax.legend(fontsize=7)
    _load_axis(ax, loads)


def _series(sweep: Sweep, workload: str, figure: Callable[[Latency], float | None]) -> list[float]:
    """One workload's figure at each step, NaN (a gap in the line) where it had none."""
    values = [
        None if (lat := s.latency.get(workload)) is None else figure(lat) for s in sweep.steps
    ]
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
    memory = sweep.memory
    if isinstance(memory, Memory):
        for key, fit in (("rss", memory.rss), ("private_dirty", memory.private_dirty)):
            if isinstance(fit, Fitted):
                x = np.array([min(v for v in xs if v is not None), max(v for v in xs if v)])
                ax.plot(x, fit.base_mb + fit.slope_mb * x, ":", label=f"{key} fit")
    ax.set_xlabel("concurrent sessions")
    ax.set_ylabel("MB")
    ax.legend(fontsize=7)
