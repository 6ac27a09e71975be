"""A sweep measured: each step's throughput, latency and overhead, the knee, the memory fit.

Every figure lands in a typed record of sweep.json's (reports/sweep/record.py: ``Step``,
``Latency``, ``Overhead``, ``Fitted``, ``Memory``...), so the document, the charts, the JSON
and a reader of it read one shape and a key that drifts fails where it is made.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd
from msgspec import UNSET
from msgspec.structs import replace

from engine.run_record import PhaseRecord
from engine.sweep_steps import REST
from reports.rundir import Run, load_run
from reports.stats import SliceStats, run_stats
from reports.sweep.record import (
    Fitted,
    Latency,
    Memory,
    MemoryNotMeasured,
    NotFitted,
    Overhead,
    Step,
    Sweep,
)
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


def stub_knobs(run: Run) -> dict[str, float]:
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
    measured = []
    for phase in stats.phases:
        if phase.name == REST:
            continue
        done, offered = phase.by_completion, phase.by_offer
        latency = _latency(offered)
        judged = [r for r in results if r.phase == phase.name and r.status in JUDGED]
        failed = _broken(judged, phase.name)
        measured.append(
            Step(
                name=phase.name,
                load=loads.get(phase.name, phase.window.rate),
                seconds=phase.window.duration_s,
                offered=phase.offered,
                completed_per_s=done.completed_per_s,
                successes_per_s=done.successes_per_s,
                error_rate=offered.total.error_rate,
                shed_rate=offered.total.shed / offered.total.calls if offered.total.calls else None,
                latency=latency,
                overhead=_overhead(latency, knobs),
                thresholds=(
                    f"{len(judged) - len(failed)} of {len(judged)} hold"
                    if judged
                    else "none judged"
                ),
                holds=not failed,
                failed=failed,
            )
        )
    steps, memory = _memory(run, measured)
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


def broken_thresholds(run_dir: str | Path, step: str) -> tuple[int, tuple[str, ...]]:
    """While a sweep runs: the samples recorded in ``step`` so far and its thresholds broken.

    Judged on requests offered in the step, as the final report judges them.
    """
    with load_run(run_dir) as run:
        stats = run_stats(run)
        results = judge_thresholds(run, stats)
    phase = stats.phase(step)
    recorded = phase.recorded if phase else 0
    return recorded, _broken(results, step)


def _broken(results: Iterable[ThresholdResult], step: str) -> tuple[str, ...]:
    """The step's thresholds that broke, in words: each the verdict counts failing, so not
    measured (the platform answered too few to time) breaks a step too, and a step where
    nothing succeeded does not read as one that held."""
    return tuple(
        f"{r.workload} {r.metric} {r.measured:g} > {r.limit:g}"
        if r.status == FAIL and r.measured is not None
        else f"{r.workload} {r.metric} {r.status}: {r.reading}"
        for r in results
        if r.phase == step and r.status in FAILING
    )


def _latency(offered: SliceStats) -> dict[str, Latency]:
    """Per workload with a timed success or a first token in the step: nearest-rank p50/p95
    over successes, TTFT p50/p95, and their counts."""
    out = {}
    for stats in sorted(offered.workloads, key=lambda w: w.workload):
        if not (stats.latency.count or stats.ttft.count):
            continue
        lat = stats.latency if stats.latency.count else None
        first = stats.ttft if stats.ttft.count else None
        out[stats.workload] = Latency(
            n=lat.count if lat else 0,
            p50_ms=lat.p50 if lat else None,
            p95_ms=lat.p95 if lat else None,
            ttft_n=first.count if first else 0,
            ttft_p50_ms=first.p50 if first else None,
            ttft_p95_ms=first.p95 if first else None,
        )
    return out


def _overhead(latency: dict[str, Latency], knobs: dict[str, float]) -> dict[str, Overhead]:
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
        out[name] = Overhead(
            ttft_p50_ms=_minus(lat.ttft_p50_ms, first),
            ttft_p95_ms=_minus(lat.ttft_p95_ms, first),
            turn_p50_ms=_minus(lat.p50_ms, stream),
            turn_p95_ms=_minus(lat.p95_ms, stream),
        )
    return out


def _minus(value: float | None, stated: float) -> float | None:
    return None if value is None else value - stated


def _knee(steps: tuple[Step, ...], run: Run) -> tuple[float | None, str]:
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


def _plateau(steps: tuple[Step, ...], workloads: set[str], open_arrival: bool) -> str:
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
        full, note = list(steps), " (comparing steps with different mixes: few users per class)"
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


def _memory(run: Run, measured: list[Step]) -> tuple[tuple[Step, ...], Memory | MemoryNotMeasured]:
    """The steps with the API's memory read in each, a fit of MB per concurrent session, and
    whether rest gave it back."""
    probes = run.probes
    if probes is None or probes.empty or not (probes["probe"] == "api").any():
        why = "not measured: give --api-pid (the API process) to probe its memory"
        return tuple(measured), MemoryNotMeasured(why)
    api = probes[probes["probe"] == "api"]
    rss = api[api["metric"] == "rss_bytes"]
    dirty = api[api["metric"] == "private_dirty_bytes"]
    users = run.closed_loop
    in_flight = _generator_in_flight(probes)
    windows = {p.name: p for p in run.phases}
    steps = tuple(
        replace(
            step,
            rss_mb=_settled(rss, window.start_s, window.end_s),
            private_dirty_mb=_settled(dirty, window.start_s, window.end_s),
            sessions=step.load if users else _settled_mean(in_flight, window),
        )
        for step in measured
        for window in (windows[step.name],)
    )
    sessions = (
        "users (each its own session)"
        if users
        else "arrivals in flight (mean of the generator's count), open arrival has no sessions"
    )
    rss_fit = _fit([(s.sessions, s.rss_mb) for s in steps])
    dirty_fit = _fit([(s.sessions, s.private_dirty_mb) for s in steps])
    given_back = _given_back(rss, steps, windows.get(REST))
    fits = f"{_fit_text('RSS', rss_fit)}; {_fit_text('Private_Dirty', dirty_fit)}"
    text = f"{fits}; sessions are {sessions}; {given_back}."
    return steps, Memory(sessions, rss_fit, dirty_fit, given_back, text)


def _given_back(rss: pd.DataFrame, steps: tuple[Step, ...], rest: PhaseRecord | None) -> str:
    """Whether the rest step ended within GIVEN_BACK_SHARE of the growth above the start, in
    words with the three readings, or why that is not measured."""
    peak = max((s.rss_mb for s in steps if s.rss_mb is not None), default=None)
    base = _value_before(rss, steps[0].seconds if steps else 0.0)
    if rest is None:
        return "not measured: run the sweep with --rest-s to see memory after load"
    if peak is None or base is None:
        return "not measured: no memory reading in the steps"
    last = rss[(rss["t_s"] >= rest.start_s)]["value"]
    if not len(last):
        return "not measured: no reading in the rest step"
    end = float(last.iloc[-1]) / MB
    grown = max(peak - base, 0.0)
    kept = end - base
    verdict = "given back" if kept <= GIVEN_BACK_SHARE * grown else "NOT given back"
    return (
        f"{verdict}: RSS {base:.1f} MB at the start, {peak:.1f} MB at the peak step, "
        f"{end:.1f} MB after {rest.duration_s:g} s of rest"
    )


def _generator_in_flight(probes: pd.DataFrame) -> pd.DataFrame:
    rows = probes[probes["probe"].str.startswith("generator.") & (probes["metric"] == "in_flight")]
    return cast(pd.DataFrame, rows.groupby("t_s", as_index=False)["value"].sum())


def _settled(readings: pd.DataFrame, start: float, end: float) -> float | None:
    """Median reading in the second half of a step (after its users settled), in MB."""
    half = readings[(readings["t_s"] >= (start + end) / 2) & (readings["t_s"] < end)]
    if half.empty:
        half = readings[(readings["t_s"] >= start) & (readings["t_s"] < end)]
    return None if half.empty else float(half["value"].median()) / MB


def _settled_mean(readings: pd.DataFrame, window: PhaseRecord) -> float | None:
    inside = readings[(readings["t_s"] >= window.start_s) & (readings["t_s"] < window.end_s)]
    return None if inside.empty else float(inside["value"].mean())


def _value_before(readings: pd.DataFrame, first_step_s: float) -> float | None:
    early = readings[readings["t_s"] < first_step_s]
    rows = early if not early.empty else readings
    return None if rows.empty else float(rows["value"].iloc[0]) / MB


def _fit(points: list[tuple[float | None, float | None]]) -> Fitted | NotFitted:
    """Least squares y = base + slope x, with r^2 and the point count it rests on."""
    xs = np.array([x for x, y in points if x is not None and y is not None], dtype=float)
    ys = np.array([y for x, y in points if x is not None and y is not None], dtype=float)
    if len(xs) < 3 or np.ptp(xs) == 0:
        return NotFitted(len(xs), "not fitted: needs 3 or more steps with readings")
    slope, base = np.polyfit(xs, ys, 1)
    residual = ys - (base + slope * xs)
    total = ys - ys.mean()
    r2 = 1 - float(residual @ residual) / float(total @ total) if total.any() else 1.0
    return Fitted(len(xs), float(slope), float(base), r2)


def _fit_text(label: str, fit: Fitted | NotFitted) -> str:
    if isinstance(fit, NotFitted):
        return f"{label}: {fit.text}"
    return (
        f"{label}: {fit.slope_mb:.3f} MB per session over a base of "
        f"{fit.base_mb:.1f} MB (r^2 {fit.r2:.2f}, {fit.points} steps)"
    )
