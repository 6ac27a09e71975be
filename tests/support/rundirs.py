"""Build run directories to the contract in reports/README.md, for tests and the benchmark.

Tests build the run directories they read instead of checking in large fixtures:
a schedule from the scenario's phases, one sample per arrival with the workload the
kit's own mix gives its index, outcomes and latencies drawn from a seeded generator,
and whatever damage a test injects.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from engine.dataset import PART_ROWS, PROBES, SAMPLES, PartWriter
from engine.mix import GOLDEN_STEP, Mix
from engine.samples import COLUMNS as SAMPLE_COLUMNS
from engine.samples import STREAM_COLUMNS
from inputs.scenario import Scenario, load_scenario, scenario_from_dict
from inputs.thresholds import MinCounts
from reports.rundir import PROBE_COLUMNS

# A 32-arrival run built by hand; tests/test_reports_golden.py works its numbers out.
GOLDEN = Path(__file__).parents[1] / "data" / "reports_golden"

# Typical service times per workload (ms), so charts and percentiles look like a run.
BASE_LATENCY_MS = {
    "api_read": 40.0,
    "chat_stream": 900.0,
    "agent_run": 1500.0,
    "rag_query": 120.0,
    "ingest": 60.0,
    "trigger_fire": 30.0,
}


# Every minimum count at 1, so a short synthetic run is judged on what it has and a test of
# something else is not inconclusive; tests of the minimums use the shipped ones.
ANY_COUNT = dict.fromkeys(MinCounts.__struct_fields__, 1)


def judged_at_any_count(scenario: Scenario) -> Scenario:
    """The scenario with every check's minimum count at 1."""
    raw = scenario.to_dict()
    raw["judging"]["min_counts"] = ANY_COUNT
    for threshold in raw["thresholds"]:
        threshold.pop("min_count")
    return scenario_from_dict(raw)


def schedule(scenario: Scenario) -> list[dict]:
    """run.json's phases: back-to-back windows, one arrival every 1/rate seconds."""
    phases, start = [], 0.0
    for phase in scenario.phases:
        end = start + phase.duration_s
        phases.append(
            {
                "name": phase.name,
                "rate": phase.rate,
                "start_s": start,
                "end_s": end,
                "reason": phase.reason,
                "offered_total": round(phase.rate * phase.duration_s),
            }
        )
        start = end
    return phases


def synthetic_samples(
    scenario: Scenario,
    run_id: str = "synthetic",
    seed: int = 0,
    error_rates: dict[tuple[str, str], float] | None = None,
    latency_factor: dict[tuple[str, str], float] | None = None,
) -> pd.DataFrame:
    """One sample per scheduled arrival, all on time, with seeded outcomes and latencies.

    ``error_rates`` and ``latency_factor`` map (phase, workload) to a share of
    ``HTTP 500`` failures and a latency multiplier, to inject a regression.
    """
    chunks = synthetic_chunks(scenario, run_id, seed, error_rates, latency_factor)
    return pd.concat(list(chunks), ignore_index=True)


# Arrivals drawn at a time by synthetic_chunks: a day's run is written a chunk at a time.
CHUNK_ARRIVALS = 1_000_000


def synthetic_chunks(
    scenario: Scenario,
    run_id: str = "synthetic",
    seed: int = 0,
    error_rates: dict[tuple[str, str], float] | None = None,
    latency_factor: dict[tuple[str, str], float] | None = None,
) -> Iterator[pd.DataFrame]:
    """synthetic_samples a chunk of at most CHUNK_ARRIVALS at a time, in index order."""
    rng = np.random.default_rng(seed)
    mix = Mix.from_scenario(scenario)
    names, bounds = np.array(mix.names, dtype=object), np.array(mix.upper_bounds)
    first = 0
    for phase in schedule(scenario):
        total = phase["offered_total"]
        for start in range(0, total, CHUNK_ARRIVALS):
            n = min(CHUNK_ARRIVALS, total - start)
            yield _chunk(
                rng, phase, first, start, n, names, bounds, run_id, error_rates, latency_factor
            )
            first += n


def _chunk(
    rng: np.random.Generator,
    phase: dict,
    first: int,
    start: int,
    n: int,
    names: np.ndarray,
    bounds: np.ndarray,
    run_id: str,
    error_rates: dict[tuple[str, str], float] | None,
    latency_factor: dict[tuple[str, str], float] | None,
) -> pd.DataFrame:
    """Arrivals ``start`` .. ``start + n`` of a phase, the first of them global index ``first``."""
    index = np.arange(first, first + n)
    # The kit's own mix on the global index (Mix.pick, vectorised), as a real run assigns.
    spot = np.remainder(index.astype("float64") * GOLDEN_STEP, 1.0)
    workload = names[np.searchsorted(bounds, spot, side="right")]
    due = phase["start_s"] + np.arange(start, start + n) / phase["rate"]
    base = np.array([BASE_LATENCY_MS[w] for w in workload])
    factor = np.array([(latency_factor or {}).get((phase["name"], w), 1.0) for w in workload])
    latency = base * factor * rng.lognormal(0.0, 0.3, size=n)
    failing = rng.random(n) < np.array(
        [(error_rates or {}).get((phase["name"], w), 0.0) for w in workload]
    )
    sent = due + rng.uniform(0.0, 0.005, size=n)
    finished = sent + latency / 1000.0
    stream = workload == "chat_stream"
    return pd.DataFrame(
        {
            "run_id": run_id,
            "worker": 0,
            "index": index,
            "workload": workload,
            "phase": phase["name"],
            "due_s": due,
            "sent_s": sent,
            "finished_s": finished,
            "latency_ms": latency,
            "latency_due_ms": (finished - due) * 1000.0,
            "ttft_ms": np.where(stream & ~failing, latency * 0.3, np.nan),
            "tokens": np.where(stream & ~failing, 40, 0),
            "status": np.where(failing, 500, np.where(stream, 101, 200)),
            "ok": np.where(failing, 0, 1),
            "outcome": np.where(failing, "failed", "ok"),
            "detail": np.where(failing, "HTTP 500", ""),
            "bytes": 512,
        }
    )


def synthetic_probes(
    scenario: Scenario, rss_mib: float = 200.0, cpu: float = 40.0, cpu_wait: float = 2.0
) -> pd.DataFrame:
    """One reading per second per series: API CPU, its wait for a CPU and memory, DB
    connections, generator load, the machine's."""
    end = sum(p.duration_s for p in scenario.phases)
    t = np.arange(0.0, end, 1.0)
    api_cpu = cpu + 10.0 * np.sin(t / 10.0)
    series = {
        ("api", "cpu_percent"): api_cpu,
        ("api", "cpu_wait_percent"): np.full_like(t, cpu_wait),
        ("api", "rss_bytes"): rss_mib * 2**20 + t * 1000.0,
        ("db", "connections_total"): np.full_like(t, 15.0),
        ("db", "connections_active"): np.minimum(15.0, t % 7),
        ("generator.0", "cpu_percent"): np.full_like(t, 30.0),
        ("generator.0", "loop_lag_ms"): np.full_like(t, 2.0),
        ("machine", "cpu_busy_cores"): (api_cpu + 30.0 + cpu_wait) / 100,
        ("machine", "load_1m"): np.full_like(t, 1.0 + cpu_wait / 100),
    }
    return pd.concat(
        [
            pd.DataFrame({"t_s": t, "probe": probe, "metric": metric, "value": values})
            for (probe, metric), values in series.items()
        ],
        ignore_index=True,
    )


def write_run_dir(
    path: Path,
    scenario: Scenario | None = None,
    samples: pd.DataFrame | None = None,
    probes: pd.DataFrame | None = None,
    csv: bool = False,
    **meta: object,
) -> Path:
    """A run directory at ``path``, its samples and probes as the kit writes them (the dataset,
    engine/dataset.py), or with ``csv`` as runs from before the dataset hold them (a test that
    edits a file by hand); offered counts come from the samples unless given in meta."""
    scenario = scenario or load_scenario().scaled(0.05)
    if samples is None:
        samples = synthetic_samples(scenario, str(meta.pop("run_id", "synthetic")))
    run_id = str(samples["run_id"].iloc[0]) if len(samples) else str(meta.pop("run_id", "empty"))
    path.mkdir(parents=True, exist_ok=True)
    if csv:
        written = [c for c in SAMPLE_COLUMNS if c in samples or c not in STREAM_COLUMNS]
        samples[written].to_csv(path / "samples.csv", index=False)
        if probes is not None:
            probes[list(PROBE_COLUMNS)].to_csv(path / "probes.csv", index=False)
    else:
        write_samples(path, run_id, samples)
        _write_probes(path, run_id, probes)
    counts = {name: _offered(samples[samples["phase"] == name]) for name in _names(scenario)}
    _write_run_json(path, scenario, run_id, counts, len(samples), meta)
    return path


def write_chunked_run(
    path: Path, scenario: Scenario, chunks: Iterator[pd.DataFrame], probes: pd.DataFrame
) -> int:
    """A run directory written a chunk of samples at a time (a day's run, for the benchmark),
    as the kit writes it; the samples written."""
    path.mkdir(parents=True)
    counts: dict[str, dict[str, int]] = {name: {} for name in _names(scenario)}
    run_id = "synthetic"

    def counted() -> Iterator[pd.DataFrame]:
        for chunk in chunks:
            for (phase, workload), n in chunk.groupby(["phase", "workload"]).size().items():
                counts[phase][workload] = counts[phase].get(workload, 0) + int(n)
            yield chunk

    written = write_samples(path, run_id, *counted())
    _write_probes(path, run_id, probes)
    _write_run_json(path, scenario, run_id, counts, written, {})
    return written


def _names(scenario: Scenario) -> list[str]:
    return [p.name for p in scenario.phases]


def _offered(samples: pd.DataFrame) -> dict[str, int]:
    return {str(k): int(v) for k, v in samples["workload"].value_counts().items()}


def _write_probes(path: Path, run_id: str, probes: pd.DataFrame | None) -> None:
    if probes is not None:
        parts = PartWriter(path / PROBES.name, PROBES, run_id)
        parts.append({c: probes[c].to_numpy() for c in PROBE_COLUMNS})
        parts.close()


def _write_run_json(
    path: Path,
    scenario: Scenario,
    run_id: str,
    counts: dict[str, dict[str, int]],
    total: int,
    meta: dict[str, object],
) -> None:
    """run.json of a synthetic run whose phases offered ``counts`` (phase -> workload -> n)."""
    phases = schedule(scenario)
    for phase in phases:
        phase["offered"] = counts[phase["name"]]
        phase["offered_total"] = sum(phase["offered"].values())
    run = {
        "run_id": run_id,
        "started_at": "2026-11-29T14:23:00Z",
        "start_epoch": 1795000000.0,
        "ended_at": "2026-11-29T14:29:00Z",
        "duration_s": phases[-1]["end_s"],
        "scenario": scenario.to_dict(),
        "scale": 1.0,
        "phases": phases,
        "offered": total,
        "workers": 1,
        "connections": scenario.connections_needed(),
        "host": "http://127.0.0.1:8000",
        "topology": "test: synthetic samples",
        "machine": {"hostname": "test", "cpus": 2, "memory_gb": 24, "os": "Linux"},
        "probes": {"taken": ["api", "db", "generator"], "missing": {"stub": "not started"}},
        "stopped": "completed",
    }
    run.update(meta)
    (path / "run.json").write_text(json.dumps(run, indent=2))


def write_samples(
    path: Path, run_id: str, *chunks: pd.DataFrame, part_rows: int = PART_ROWS
) -> int:
    """Samples (frames in the columns of samples.csv, empty cells NaN) as the ``samples``
    dataset the master writes, a chunk at a time; the rows written."""
    parts = PartWriter(path / SAMPLES.name, SAMPLES, run_id, part_rows)
    for chunk in chunks:
        parts.append(
            {
                f.name: pa.array(column_of(chunk, f.name), from_pandas=True).cast(f.type)
                for f in SAMPLES.schema
            }
        )
    parts.close()
    return parts.rows


def column_of(chunk: pd.DataFrame, name: str) -> np.ndarray:
    """A column of synthetic samples; a streamed turn's later times are empty where a test's
    frame names none (a turn that measured only its first token)."""
    if name in STREAM_COLUMNS and name not in chunk:
        return np.full(len(chunk), np.nan)
    return chunk[name].to_numpy()


def golden_copy(path: Path) -> Path:
    """A writable copy of the hand-built golden run directory at ``path``."""
    shutil.copytree(GOLDEN, path)
    return path


def edit_run_json(path: Path, **changes: object) -> None:
    """Change top-level keys of a run directory's run.json (``scenario`` merged one level)."""
    run = json.loads((path / "run.json").read_text())
    scenario = changes.pop("scenario", None)
    if isinstance(scenario, dict):
        run["scenario"].update(scenario)
    run.update(changes)
    (path / "run.json").write_text(json.dumps(run))
