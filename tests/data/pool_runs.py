"""Two committed runs shaped like issue 18's pair on the real AgenticOS: its pool at the
default 5+10, then raised to 20+30. ``python -m tests.data.pool_runs`` rewrites them.

``pool_default`` is the broken run: a third or more of every workload failing in
sustain (chat_stream 64%, its few successes slow: whole-turn p95 about 51 s, first
token about 15 s), worse in burst and recover; ingest failing 51.4% of its own
arrivals in sustain and 83.3% in recover, where of the uploads accepted with 202
half failed after it and the other half could not be verified (the follower's read
answered 405). Its last recover window is mostly accepted uploads, so a verdict
that counted only failed samples called ingest "recovered".

``pool_raised`` is the same scenario with the pool raised: no errors in sustain or
recover, slower whole turns (p95 about 70 s: more turns get through and queue at
the model), first token about 1.2 s, a still-exhausted burst.

Workloads follow the kit's own mix (engine/mix.py) on the plan's indexes, and
outcomes and latencies come from a seeded generator, so the files are the same
every time they are written; tests/test_reports_pool_runs.py checks they are.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from engine.followups import COLUMNS as FOLLOWUP_COLUMNS
from engine.followups import FAILED_AFTER, NOT_VERIFIABLE, PROCESSED
from engine.mix import Mix
from engine.samples import COLUMNS as SAMPLE_COLUMNS
from engine.samples import STREAM_COLUMNS
from engine.schedule import Plan
from inputs.scenario import scenario_from_dict

HERE = Path(__file__).parent
DEFAULT = HERE / "pool_default"
RAISED = HERE / "pool_raised"

SCENARIO = {
    "name": "pool-exhaustion",
    "workloads": {
        "api_read": {"share": 40, "description": "An authenticated list"},
        "chat_stream": {"share": 30, "description": "A chat turn over the WebSocket"},
        "ingest": {"share": 30, "description": "A document uploaded, accepted with 202"},
    },
    "chat_cancel_share": 0.2,
    "phases": [
        {"name": "ramp", "duration_s": 5, "rate": 4, "reason": "A cold cache"},
        {"name": "sustain", "duration_s": 40, "rate": 12, "reason": "Judged here"},
        {"name": "burst", "duration_s": 5, "rate": 36, "reason": "Three times the rate"},
        {"name": "recover", "duration_s": 20, "rate": 12, "reason": "Back to sustain's rate"},
    ],
    "timeouts": {"default_s": 60, "chat_stream_s": 90, "agent_run_s": 90},
    "thresholds": [
        {"workload": "api_read", "metric": "p95_ms", "limit": 300},
        {"workload": "api_read", "metric": "error_rate", "limit": 0.001},
        {"workload": "chat_stream", "metric": "p95_ttft_ms", "limit": 1500},
        {"workload": "chat_stream", "metric": "error_rate", "limit": 0.01},
        {"workload": "ingest", "metric": "error_rate", "limit": 0},
    ],
}

POOL_ERROR = "HTTP 500: QueuePool limit of size 5 overflow 10 reached, connection timed out"
FOLLOW_405 = "GET /agents/{id}/triggers/{tid} answered 405: the follower gave up"
INDEX_FAILED = "indexing failed: QueuePool limit of size 5 overflow 10 reached"

# Share of each (phase, workload) that fails, per run.
FAILING = {
    "pool_default": {
        "api_read": {"ramp": 0.0, "sustain": 0.38, "burst": 0.80, "recover": 0.85},
        "chat_stream": {"ramp": 0.0, "sustain": 0.64, "burst": 0.85, "recover": 0.88},
    },
    "pool_raised": {
        "api_read": {"ramp": 0.0, "sustain": 0.0, "burst": 0.10, "recover": 0.0},
        "chat_stream": {"ramp": 0.0, "sustain": 0.0, "burst": 0.20, "recover": 0.0},
    },
}
# Whole-turn latency (s) and first token (s) of a chat success, as uniform ranges per run.
TURN_S = {"pool_default": (20.0, 53.0), "pool_raised": (25.0, 72.0)}
FIRST_TOKEN_S = {"pool_default": (2.0, 15.5), "pool_raised": (0.3, 1.25)}


def _scenario():
    return scenario_from_dict(SCENARIO)


def _arrivals() -> pd.DataFrame:
    """Every arrival of the plan: index, workload (the kit's mix), phase, due time, cancel."""
    scenario = _scenario()
    plan, mix = Plan.from_scenario(scenario), Mix.from_scenario(scenario)
    rows = [
        (k, mix.pick(k), plan.segments[n].name, plan.segments[n].due_s(k - first), mix.cancels(k))
        for n, k in plan.indexes_before()
        for first in (plan.segments[n].first_index,)
    ]
    return pd.DataFrame(rows, columns=["index", "workload", "phase", "due_s", "cancels"])


# Known failed share of ingest (failed POSTs and uploads lost after 202) in the broken run.
INGEST_FAILING = {"sustain": 0.514, "burst": 0.9, "recover": 0.833}
# Arrivals in the last recovery window, and how many of them were accepted.
LAST_WINDOW, LAST_ACCEPTED = 20, 16


def _ingest_plan(run: str, phase: str, n: int) -> list[str]:
    """Each ingest arrival's fate in due order: 'failed' (the POST), or accepted with 202 and
    then 'lost' (failed after it), 'unverified' or 'processed'.

    In the broken run a known share k/n fails with every other accepted upload lost:
    2(n - k) accepted and 2k - n failed POSTs. Recover puts its failed POSTs first, so its
    last window holds LAST_ACCEPTED accepted uploads and only four failed POSTs.
    """
    if run == "pool_raised":
        failed = round(n * 0.3) if phase == "burst" else 0
        return ["failed"] * failed + ["processed"] * (n - failed)
    if phase not in INGEST_FAILING:
        return ["processed"] * n
    known = round(INGEST_FAILING[phase] * n)
    failed, accepted = 2 * known - n, 2 * (n - known)
    if phase != "recover":
        return ["failed"] * failed + ["lost", "unverified"] * (accepted // 2)
    early = ["failed"] * (failed - (LAST_WINDOW - LAST_ACCEPTED))
    early += ["lost", "unverified"] * ((accepted - LAST_ACCEPTED) // 2)
    late = ["failed"] * (LAST_WINDOW - LAST_ACCEPTED) + ["lost", "unverified"] * (
        LAST_ACCEPTED // 2
    )
    return early + late


def samples_and_followups(run: str, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run's samples.csv and followups.csv as frames."""
    rng = np.random.default_rng(seed)
    arrivals = _arrivals()
    sent = arrivals["due_s"] + rng.uniform(0.0, 0.004, len(arrivals)).round(4)
    latency = np.zeros(len(arrivals))
    ttft = np.full(len(arrivals), np.nan)
    tokens = np.zeros(len(arrivals), dtype=int)
    status = np.full(len(arrivals), 200)
    outcome = np.full(len(arrivals), "ok", dtype=object)
    detail = np.full(len(arrivals), "", dtype=object)
    follow: list[tuple] = []
    for (phase, workload), group in arrivals.groupby(["phase", "workload"], sort=False):
        rows = group.index.to_numpy()
        if workload == "ingest":
            fates = _ingest_plan(run, phase, len(rows))
            for row, fate in zip(rows, fates, strict=True):
                latency[row] = rng.uniform(40.0, 400.0)
                if fate == "failed":
                    status[row], outcome[row], detail[row] = 500, "failed", POOL_ERROR
                    continue
                status[row] = 202
                state, said = {
                    "lost": (FAILED_AFTER, INDEX_FAILED),
                    "unverified": (NOT_VERIFIABLE, FOLLOW_405),
                    "processed": (PROCESSED, "done"),
                }[fate]
                index = int(arrivals.at[row, "index"])
                follow.append((index, "ingest", f"doc-{index}", state, said))
            continue
        failing = np.zeros(len(rows), dtype=bool)
        share = FAILING[run][workload][phase]
        failing[rng.choice(len(rows), round(share * len(rows)), replace=False)] = True
        for row, fails in zip(rows, failing, strict=True):
            if workload == "api_read":
                latency[row] = rng.lognormal(np.log(60.0), 0.4)
                if fails:
                    status[row], outcome[row], detail[row] = 500, "failed", POOL_ERROR
                continue
            status[row] = 101
            if fails:
                if rng.random() < 0.5:
                    latency[row], outcome[row], detail[row] = 90_000.0, "timeout", "timed out"
                else:
                    latency[row] = rng.uniform(1_000.0, 30_000.0)
                    outcome[row], detail[row] = "failed", f"error frame: {POOL_ERROR}"
                continue
            ttft[row] = rng.uniform(*FIRST_TOKEN_S[run]) * 1000.0
            if arrivals.at[row, "cancels"]:
                latency[row], outcome[row], tokens[row] = ttft[row] + 50.0, "cancelled", 1
            else:
                latency[row] = max(ttft[row] + 500.0, rng.uniform(*TURN_S[run]) * 1000.0)
                tokens[row] = 40
    latency = latency.round(1)
    finished = (sent + latency / 1000.0).round(4)
    samples = pd.DataFrame(
        {
            "run_id": run,
            "worker": 0,
            "index": arrivals["index"],
            "workload": arrivals["workload"],
            "phase": arrivals["phase"],
            "due_s": arrivals["due_s"].round(6),
            "sent_s": sent,
            "finished_s": finished,
            "latency_ms": latency,
            "latency_due_ms": ((finished - arrivals["due_s"]) * 1000.0).round(1),
            "ttft_ms": np.round(ttft, 1),
            "tokens": tokens,
            "status": status,
            "ok": np.isin(outcome, ("ok", "cancelled")).astype(int),
            "outcome": outcome,
            "detail": detail,
            "bytes": 512,
        }
    )
    # The committed runs are from before streams were timed token by token.
    written = [c for c in SAMPLE_COLUMNS if c not in STREAM_COLUMNS]
    return samples[written], pd.DataFrame(follow, columns=list(FOLLOWUP_COLUMNS))


def run_json(run: str, samples: pd.DataFrame) -> dict:
    """run.json for the samples: the scenario as run and what each phase offered."""
    scenario = _scenario()
    plan = Plan.from_scenario(scenario)
    phases = []
    for segment in plan.segments:
        mine = samples[samples["phase"] == segment.name]
        offered = {name: int((mine["workload"] == name).sum()) for name in scenario.mix}
        phases.append(
            {
                "name": segment.name,
                "rate": segment.rate,
                "start_s": segment.start_s,
                "end_s": segment.end_s,
                "reason": segment.reason,
                "offered": offered,
                "offered_total": len(mine),
            }
        )
    return {
        "run_id": run,
        "started_at": "2026-12-02T10:00:00Z",
        "start_epoch": 1796205600.0,
        "ended_at": "2026-12-02T10:03:10Z",
        "duration_s": plan.end_s,
        "scenario": scenario.to_dict(),
        "scale": 1.0,
        "phases": phases,
        "offered": len(samples),
        "workers": 1,
        "connections": scenario.connections_needed(),
        "host": "http://127.0.0.1:18000",
        "topology": "committed samples shaped like issue 18's AgenticOS 0.0.247 runs",
        "machine": {"hostname": "lab", "cpus": 2, "memory_gb": 24, "os": "Linux"},
        "probes": {"taken": [], "missing": {"all": "not probed: built from committed samples"}},
        "stopped": "completed",
        "mode": "open arrival",
    }


def files(run: str, seed: int) -> dict[str, str]:
    """Each file of the run directory and its text."""
    samples, follow = samples_and_followups(run, seed)
    return {
        "run.json": json.dumps(run_json(run, samples), indent=2) + "\n",
        "samples.csv": samples.to_csv(index=False),
        "followups.csv": follow.to_csv(index=False),
    }


RUNS = {DEFAULT: ("pool_default", 18), RAISED: ("pool_raised", 25)}


def write() -> None:
    """Rewrite both run directories."""
    for path, (run, seed) in RUNS.items():
        path.mkdir(exist_ok=True)
        for name, text in files(run, seed).items():
            (path / name).write_text(text)


if __name__ == "__main__":
    write()
