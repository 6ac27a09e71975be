"""The agent's loop as the stub saw it: stub_calls.csv joined to the samples (issue 28).

The kit planned each chat turn's and agent run's model calls in its prompt, and the
stub kept a row per call (stub/calls.py) that the master fetched after the drain.
Joined to the samples by arrival index, they say what the run did, not what it
asked for:

- ``model_calls``: the calls a turn made. A turn whose count is not its planned
  ``steps`` (the platform stopped short, was offered no tool, or looped further) is
  *off plan*: it is named in the report with its count and never averaged in.
- ``stub_ms``: the stub's own time for those calls, arrival to last frame, so
- ``step_overhead_ms`` = (the turn's latency - stub_ms) / model_calls is the
  platform's own time per step (sockets, auth, its loop, the tool, journaling),
  over successful turns on plan, whose latency counts (a planned cancel's does not).
- ``history``: the user turns the platform sent the model in the turn's first call
  (1 for a new conversation), the history it really replayed.

A run without stub_calls.csv (a real provider, a run from before the loop) has
none of these columns filled, and the report says the loop was not measured.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from engine.agent_plan import STUB_CALLS_FILE
from inputs.agent import AGENT_WORKLOADS
from inputs.scenario import Scenario

MODEL_CALLS = "model_calls"
STUB_MS = "stub_ms"
STEP_OVERHEAD_MS = "step_overhead_ms"
HISTORY = "history"
_COLUMNS = ("run", "arrival", "step", "reply", "turns", "total_ms")


class StubCallsError(ValueError):
    """stub_calls.csv breaks its contract; the message names the file and what is wrong."""


@dataclass(frozen=True)
class OffPlan:
    """Turns of one workload whose model calls were not the planned steps."""

    workload: str
    planned: int
    calls: int
    turns: int
    # A few of their arrival indexes, so a reader can find them in samples.csv.
    examples: tuple[int, ...]


def attach_calls(run_dir: Path, samples: pd.DataFrame, scenario: Scenario) -> pd.DataFrame:
    """The samples with model_calls, stub_ms, step_overhead_ms and history (empty without
    a record, and for workloads whose prompt carries no plan)."""
    calls = _read(run_dir / STUB_CALLS_FILE, samples)
    empty = pd.Series(np.nan, index=samples.index, dtype="float64")
    if calls is None:
        return samples.assign(
            **{MODEL_CALLS: empty, STUB_MS: empty, STEP_OVERHEAD_MS: empty, HISTORY: empty}
        )
    per_arrival = calls.groupby("arrival").agg(
        model_calls=("step", "size"), stub_ms=("total_ms", "sum"), history=("turns", "first")
    )
    planned = samples["workload"].isin(AGENT_WORKLOADS)
    model_calls = samples["index"].map(per_arrival[MODEL_CALLS]).astype("float64")
    # A planned turn that was sent and that the stub never saw made no model call.
    unseen = planned & model_calls.isna() & samples["sent_s"].notna()
    model_calls = model_calls.mask(unseen, 0.0).where(planned)
    stub_ms = samples["index"].map(per_arrival[STUB_MS]).where(planned)
    history = samples["index"].map(per_arrival[HISTORY]).where(planned).astype("float64")
    steps = samples["workload"].map({name: scenario.agent(name).steps for name in AGENT_WORKLOADS})
    on_plan = planned & (model_calls == steps) & _timed(samples)
    overhead = ((samples["latency_ms"] - stub_ms) / model_calls).where(on_plan)
    return samples.assign(
        **{MODEL_CALLS: model_calls, STUB_MS: stub_ms, STEP_OVERHEAD_MS: overhead, HISTORY: history}
    )


def measured(samples: pd.DataFrame) -> bool:
    """Whether the run has the stub's record of its loop."""
    return MODEL_CALLS in samples.columns and bool(samples[MODEL_CALLS].notna().any())


def off_plan(samples: pd.DataFrame, scenario: Scenario) -> tuple[OffPlan, ...]:
    """Successful turns whose model calls were not their planned steps, by workload and
    count (a failed turn's calls say how far it got, not what the platform does)."""
    found = []
    for name in AGENT_WORKLOADS:
        mine = samples[(samples["workload"] == name) & (samples["ok"] == 1)]
        calls = mine[MODEL_CALLS].dropna() if MODEL_CALLS in mine.columns else mine["ok"][:0]
        planned = scenario.agent(name).steps
        for count, group in calls[calls != planned].groupby(calls[calls != planned]):
            indexes = mine.loc[group.index, "index"].head(5)
            found.append(OffPlan(name, planned, int(count), len(group), tuple(map(int, indexes))))
    return tuple(found)


def calls_per_turn(samples: pd.DataFrame, workload: str) -> Counter[int]:
    """How many successful turns of ``workload`` made each number of model calls."""
    mine = samples[(samples["workload"] == workload) & (samples["ok"] == 1)]
    return Counter(int(c) for c in mine[MODEL_CALLS].dropna())


def model_calls_per_s(samples: pd.DataFrame, workload: str, window: tuple[float, float]) -> float:
    """Model calls (steps) per second of the turns of ``workload`` that finished in window."""
    start, end = window
    mine = samples[
        (samples["workload"] == workload)
        & (samples["finished_s"] >= start)
        & (samples["finished_s"] < end)
    ]
    seconds = end - start
    return float(mine[MODEL_CALLS].sum()) / seconds if seconds > 0 else 0.0


def _timed(samples: pd.DataFrame) -> pd.Series:
    """Turns whose whole latency counts: ok (a cancelled turn is short by design)."""
    return samples["outcome"] == "ok"


def _read(file: Path, samples: pd.DataFrame) -> pd.DataFrame | None:
    """This run's rows of stub_calls.csv, or None when the run has none."""
    if not file.exists():
        return None
    try:
        rows = pd.read_csv(file, dtype={"run": str}, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise StubCallsError(f"{file}: not readable as CSV ({exc})") from None
    missing = [c for c in _COLUMNS if c not in rows.columns]
    if missing:
        raise StubCallsError(f"{file}: missing columns {', '.join(missing)}")
    for column in ("arrival", "step", "turns"):
        if len(rows) and not pd.api.types.is_integer_dtype(rows[column]):
            raise StubCallsError(f"{file}: {column} must be whole numbers")
    if len(rows) and not pd.api.types.is_numeric_dtype(rows["total_ms"]):
        raise StubCallsError(f"{file}: total_ms must be numbers")
    # The master fetched this run's rows by its key, calls_key(run id, start); a file put
    # together otherwise keeps only rows of the samples' run.
    run_ids = set(samples["run_id"].astype(str)) if len(samples) else set()
    # The run id before the key's "@" (split, not partition: an empty file has no column 0).
    names = rows["run"].str.split("@", n=1).str[0]
    return rows[names.isin(run_ids)] if run_ids else rows
