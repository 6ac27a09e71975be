"""What the system under test (and the generator itself) did while the run ran.

probes.csv is long format, so every series is summarised the same way: how many
readings, the peak in each phase and overall, and the final value. A probe that
was not taken has no rows and is named with its reason, never printed as zero.
The generator watches itself too: a saturated driver looks like a slow server.
When the kit started the platform, what it logged at ERROR or above during the
run is counted here as well (reports/platform_log.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import numpy as np
import pandas as pd

from reports.platform_log import PlatformLog, platform_log
from reports.rundir import Run

GENERATOR_PROBE = "generator"
API_PROBE = "api"
# The name of the whole run beside the phases' names, where a figure is given per phase.
WHOLE_RUN = "whole run"
# A Locust worker is one gevent thread: near one full core it cannot send on time.
GENERATOR_BUSY_CPU_PERCENT = 90.0


@dataclass(frozen=True)
class ProbeSeries:
    """One probe metric over the run: peak per phase and overall, and its last reading."""

    probe: str
    metric: str
    readings: int
    peak: float
    final: float
    peak_by_phase: dict[str, float | None]


@dataclass(frozen=True)
class GeneratorLoad:
    """How hard one load-generating process worked, and whether it may have held the run back."""

    probe: str
    peak_cpu_percent: float | None
    peak_loop_lag_ms: float | None
    busy: bool
    why: str


@dataclass(frozen=True)
class SystemStats:
    """Every probe series, the generators' own load, the probes that were not taken, and the
    platform's log errors (None when the run names no log: the kit did not start the platform)."""

    has_probes_file: bool
    series: tuple[ProbeSeries, ...]
    generators: tuple[GeneratorLoad, ...]
    missing: dict[str, str]
    platform_log: PlatformLog | None = None
    # Per phase and the whole run: the share of its ready time the API process waited for a
    # CPU (cpu_wait_share); empty where that was not probed.
    api_cpu_wait: dict[str, float] = field(default_factory=dict)

    def peak(self, probe: str, metric: str) -> float | None:
        """The overall peak of one series, or None when it was not recorded."""
        found = [s.peak for s in self.series if s.probe == probe and s.metric == metric]
        return found[0] if found else None


def system_stats(run: Run) -> SystemStats:
    """Summaries of every series in probes.csv, the generators' own load, the platform's log."""
    missing = dict(run.record.probes.missing)
    logged = platform_log(run)
    if run.probes is None or run.probes.empty:
        return SystemStats(run.probes is not None, (), (), missing, logged)
    series = _series(run.probes, run)
    late_after_ms = run.scenario.lateness.late_after_ms
    generators = tuple(
        _generator_load(probe, series, late_after_ms, run.closed_loop)
        for probe in sorted({s.probe for s in series})
        if probe.split(".")[0] == GENERATOR_PROBE
    )
    return SystemStats(True, series, generators, missing, logged, cpu_wait_share(run.probes, run))


def cpu_wait_share(probes: pd.DataFrame, run: Run) -> dict[str, float]:
    """Per phase and the whole run, the share of the time the API process was ready to run that
    it spent waiting for a CPU: near 0 on a machine with cores to spare, whatever the
    platform's own CPU; most of it on a machine other work has filled.

    None where the API's wait was not probed (runs before it was, or no ``--api-pid``).
    """
    readings = probes[probes["probe"] == API_PROBE]
    readings = readings.assign(phase=probe_phase(readings["t_s"], run))
    readings = readings[readings["phase"] != ""]
    used = readings[readings["metric"] == "cpu_percent"]
    waited = readings[readings["metric"] == "cpu_wait_percent"]
    if waited.empty:
        return {}
    found = {}
    windows = [(p.name, [p.name]) for p in run.phases] + [(WHOLE_RUN, [p.name for p in run.phases])]
    for name, phases in windows:
        wait = waited[waited["phase"].isin(phases)]["value"].sum()
        ran = used[used["phase"].isin(phases)]["value"].sum()
        if wait + ran > 0:
            found[name] = float(wait / (wait + ran))
    return found


def probe_phase(t_s: pd.Series, run: Run) -> pd.Series:
    """The phase each reading time falls in, or empty when it is outside every window."""
    starts = np.array([p.start_s for p in run.phases])
    ends = np.array([p.end_s for p in run.phases])
    names = np.array([p.name for p in run.phases] + [""], dtype=object)
    at = np.searchsorted(starts, t_s.to_numpy(), side="right") - 1
    inside = (at >= 0) & (t_s.to_numpy() < ends[np.clip(at, 0, None)])
    return pd.Series(np.where(inside, names[at], ""), index=t_s.index)


def _series(probes: pd.DataFrame, run: Run) -> tuple[ProbeSeries, ...]:
    keys = ["probe", "metric"]
    overall = probes.groupby(keys, sort=True)["value"].agg(["count", "max", "last"])
    by_phase = (
        probes.assign(phase=probe_phase(probes["t_s"], run))
        .groupby([*keys, "phase"])["value"]
        .max()
        .unstack()
    )
    names = [p.name for p in run.phases]
    return tuple(
        ProbeSeries(
            probe=str(probe),
            metric=str(metric),
            readings=int(row["count"]),
            peak=float(row["max"]),
            final=float(row["last"]),
            peak_by_phase={name: _value_or_none(by_phase, (probe, metric), name) for name in names},
        )
        for (probe, metric), row in _keyed(overall)
    )


def _keyed(table: pd.DataFrame) -> list[tuple[tuple[str, str], pd.Series]]:
    """The rows of a table indexed by (probe, metric), each with its key."""
    return [(cast(tuple[str, str], key), row) for key, row in table.iterrows()]


def _value_or_none(table: pd.DataFrame, row: tuple, column: str) -> float | None:
    if column not in table.columns:
        return None
    value = cast(float, table.at[row, column])
    return None if pd.isna(value) else float(value)


def _generator_load(
    probe: str, series: tuple[ProbeSeries, ...], late_after_ms: float, closed_loop: bool = False
) -> GeneratorLoad:
    peaks = {s.metric: s.peak for s in series if s.probe == probe}
    cpu, lag = peaks.get("cpu_percent"), peaks.get("loop_lag_ms")
    causes = []
    if cpu is not None and cpu >= GENERATOR_BUSY_CPU_PERCENT:
        causes.append(
            f"its CPU reached {cpu:.0f}% of a core, at or above the "
            f"{GENERATOR_BUSY_CPU_PERCENT:g}% that means busy"
        )
    if lag is not None and lag > late_after_ms:
        # A closed loop has no dispatch to be late: the lag held back users and their timings.
        effect = (
            "holds back a closed loop's users and adds to the latency they measure"
            if closed_loop
            else "makes a dispatch late"
        )
        causes.append(
            f"its event loop lagged {lag:.0f} ms, more than the {late_after_ms:g} ms that {effect}"
        )
    return GeneratorLoad(probe, cpu, lag, bool(causes), "; ".join(causes))
