"""The agent's loop as the stub saw it: the stub's record joined to the samples (issue 28).

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

A run without the record (stub_calls.parquet, or a committed run's stub_calls.csv: a real
provider, a run from before the loop) has none of these columns filled, and the report says
the loop was not measured.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from engine.agent_plan import STUB_CALLS_FILE
from engine.dataset import STUB_CALLS, run_id_of
from inputs.agent import AGENT_WORKLOADS
from inputs.scenario import Scenario
from reports.dataset import Samples, quoted

MODEL_CALLS = "model_calls"
STUB_MS = "stub_ms"
STEP_OVERHEAD_MS = "step_overhead_ms"
HISTORY = "history"
_COLUMNS = ("run", "arrival", "step", "reply", "turns", "total_ms")


class StubCallsError(ValueError):
    """The stub's record breaks its contract; the message names the file and what is wrong."""


@dataclass(frozen=True)
class OffPlan:
    """Turns of one workload whose model calls were not the planned steps."""

    workload: str
    planned: int
    calls: int
    turns: int
    # A few of their arrival indexes, so a reader can find them in the samples.
    examples: tuple[int, ...]


def load_calls(samples: Samples, run_dir: Path, run_id: str) -> bool:
    """The stub's record as the table ``calls``, one row per arrival: its model calls, the
    stub's time for them (summed in file order, compensated, as pandas summed them) and the
    history its first call carried. False when the run has no record."""
    native = run_dir / f"{STUB_CALLS.name}.parquet"
    if native.exists():
        try:
            schema = pq.read_schema(native)
        except (pa.ArrowInvalid, OSError) as exc:
            raise StubCallsError(f"{native}: unreadable ({str(exc).splitlines()[0]})") from None
        missing = [c for c in _COLUMNS if c != "run" and c not in schema.names]
        if missing:
            raise StubCallsError(f"{native}: missing columns {', '.join(missing)}")
        # The master fetched this run's rows by its key, calls_key(run id, start).
        key = run_id_of(schema) or ""
        mine = "TRUE" if key.split("@", 1)[0] == run_id else "FALSE"
        rows = (
            f"SELECT arrival, step, turns, total_ms, file_row_number AS row "
            f"FROM read_parquet('{native}', file_row_number = true) WHERE {mine}"
        )
    elif (run_dir / STUB_CALLS_FILE).exists():
        frame = _read(run_dir / STUB_CALLS_FILE, run_id)
        samples.con.register(
            "calls_csv",
            frame[["arrival", "step", "turns", "total_ms"]].assign(row=np.arange(len(frame))),
        )
        rows = "SELECT * FROM calls_csv"
    else:
        return False
    kahan = (
        "list_reduce(list(CAST(total_ms AS DOUBLE) ORDER BY row), lambda acc, x: "
        "{'s': acc.s + (x - acc.c), 'c': ((acc.s + (x - acc.c)) - acc.s) - (x - acc.c)}, "
        "{'s': CAST(0 AS DOUBLE), 'c': CAST(0 AS DOUBLE)}).s"
    )
    samples.con.execute(
        f"CREATE TABLE calls AS SELECT arrival, CAST(count(*) AS DOUBLE) AS {MODEL_CALLS}, "
        f"{kahan} AS {STUB_MS}, CAST(arg_min(turns, row) AS DOUBLE) AS {HISTORY} "
        f"FROM ({rows}) GROUP BY arrival"
    )
    with contextlib.suppress(duckdb.CatalogException):
        samples.con.unregister("calls_csv")
    return True


def loop_columns(scenario: Scenario, calls: bool) -> tuple[str, str]:
    """The ``samples`` table's model_calls, stub_ms, history and step_overhead_ms (and the
    join they need): NULL without a record, and for workloads whose prompt carries no plan."""
    if not calls:
        return (
            ", ".join(
                f"CAST(NULL AS DOUBLE) AS {c}"
                for c in (MODEL_CALLS, STUB_MS, HISTORY, STEP_OVERHEAD_MS)
            ),
            "",
        )
    planned = f"r.workload IN ({quoted(AGENT_WORKLOADS)})"
    # A planned turn that was sent and that the stub never saw made no model call.
    model_calls = (
        f"CASE WHEN {planned} THEN coalesce(c.{MODEL_CALLS}, "
        f"CASE WHEN r.sent_s IS NOT NULL THEN CAST(0 AS DOUBLE) END) END"
    )
    steps = " ".join(f"WHEN {quoted([n])} THEN {scenario.agent(n).steps}" for n in AGENT_WORKLOADS)
    on_plan = f"{planned} AND ({model_calls}) = (CASE r.workload {steps} END) AND r.outcome = 'ok'"
    stub_ms = f"CASE WHEN {planned} THEN c.{STUB_MS} END"
    return (
        f"{model_calls} AS {MODEL_CALLS}, {stub_ms} AS {STUB_MS}, "
        f"CASE WHEN {planned} THEN c.{HISTORY} END AS {HISTORY}, "
        f"CASE WHEN {on_plan} THEN (r.latency_ms - ({stub_ms})) / ({model_calls}) END "
        f"AS {STEP_OVERHEAD_MS}",
        "LEFT JOIN calls c ON c.arrival = r.index",
    )


def measured(samples: Samples) -> bool:
    """Whether the run has the stub's record of its loop."""
    return bool(samples.one(f"SELECT count({MODEL_CALLS}) > 0 FROM samples")[0])


def off_plan(samples: Samples, scenario: Scenario) -> tuple[OffPlan, ...]:
    """Successful turns whose model calls were not their planned steps, by workload and
    count (a failed turn's calls say how far it got, not what the platform does)."""
    found = []
    for name in AGENT_WORKLOADS:
        planned = scenario.agent(name).steps
        groups = samples.rows(
            f"SELECT {MODEL_CALLS}, count(*), list(index ORDER BY seq)[1:5] FROM samples "
            f"WHERE workload = ? AND ok = 1 AND {MODEL_CALLS} IS NOT NULL "
            f"AND {MODEL_CALLS} <> ? GROUP BY {MODEL_CALLS} ORDER BY {MODEL_CALLS}",
            [name, planned],
        )
        found += [
            OffPlan(name, planned, int(count), int(turns), tuple(map(int, examples)))
            for count, turns, examples in groups
        ]
    return tuple(found)


def calls_per_turn(samples: Samples, workload: str) -> Counter[int]:
    """How many successful turns of ``workload`` made each number of model calls."""
    rows = samples.rows(
        f"SELECT {MODEL_CALLS}, count(*) FROM samples WHERE workload = ? AND ok = 1 "
        f"AND {MODEL_CALLS} IS NOT NULL GROUP BY ALL",
        [workload],
    )
    return Counter({int(calls): int(n) for calls, n in rows})


def model_calls_per_s(samples: Samples, workload: str, window: tuple[float, float]) -> float:
    """Model calls (steps) per second of the turns of ``workload`` that finished in window."""
    start, end = window
    (total,) = samples.one(
        f"SELECT sum({MODEL_CALLS}) FROM samples WHERE workload = ? "
        "AND finished_s >= ? AND finished_s < ?",
        [workload, start, end],
    )
    seconds = end - start
    return float(total or 0.0) / seconds if seconds > 0 else 0.0


def _read(file: Path, run_id: str) -> pd.DataFrame:
    """This run's rows of stub_calls.csv (a run from before the dataset)."""
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
    # The run id before the key's "@" (split, not partition: an empty file has no column 0).
    names = rows["run"].str.split("@", n=1).str[0]
    return rows[names == run_id]
