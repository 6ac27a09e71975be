"""Nearest-rank percentiles and the counting rules, by hand and as hypothesis properties.

Properties: a percentile is always a value that was observed (and the one the
textbook nearest-rank rule picks); counts add up across phases, workloads and
outcomes; and a workload without samples never passes a threshold.
"""

import math
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inputs.scenario import WORKLOADS, scenario_from_dict
from reports.rundir import OK_OUTCOMES, OUTCOMES, load_run
from reports.stats import percentile_table, percentiles_of, run_stats
from reports.system import system_stats
from reports.verdict import PASS, judge
from tests.support.rundirs import write_run_dir


def textbook(values: list[float], p: int) -> float:
    """Nearest rank as defined: the ceil(p/100 * n)-th smallest value."""
    ordered = sorted(values)
    return ordered[math.ceil(p / 100 * len(ordered)) - 1]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([7.0], (7.0, 7.0, 7.0, 7.0)),
        ([2.0, 1.0], (1.0, 2.0, 2.0, 2.0)),  # p50 of two is the lower: rank ceil(1.0) = 1
        ([3.0, 1.0, 2.0], (2.0, 3.0, 3.0, 3.0)),
        ([5.0, 5.0, 5.0, 1.0], (5.0, 5.0, 5.0, 5.0)),  # ties: rank 2 of 1,5,5,5
        (list(range(1, 101)), (50.0, 95.0, 99.0, 100.0)),  # exact ranks, no interpolation
        (list(range(1, 21)), (10.0, 19.0, 20.0, 20.0)),  # p95 of 20: rank 19, not 19.05
    ],
)
def test_nearest_rank_by_hand(values, expected):
    result = percentiles_of(pd.Series(values, dtype="float64"))
    assert (result.p50, result.p95, result.p99, result.max) == expected
    assert result.count == len(values)


def test_empty_cells_are_skipped_and_nothing_is_not_zero():
    assert percentiles_of(pd.Series([np.nan, 4.0, np.nan])).p50 == 4.0
    none = percentiles_of(pd.Series([np.nan]))
    assert (none.count, none.p50, none.max) == (0, None, None)


@given(
    st.lists(
        st.tuples(st.sampled_from("abc"), st.floats(0, 1e6, allow_nan=False)),
        min_size=1,
        max_size=200,
    )
)
def test_grouped_percentiles_are_observed_values(rows):
    frame = pd.DataFrame(rows, columns=["group", "value"])
    table = percentile_table(frame, ["group"], "value")
    for group, row in table.iterrows():
        values = frame.loc[frame["group"] == group, "value"].tolist()
        assert row["count"] == len(values)
        for p in (50, 95, 99):
            assert row[f"p{p}"] in values
            assert row[f"p{p}"] == textbook(values, p)
        assert row["p50"] <= row["p95"] <= row["p99"] <= row["max"] == max(values)


PHASES = [
    {"name": "ramp", "duration_s": 2.0, "rate": 2.0},
    {"name": "sustain", "duration_s": 4.0, "rate": 3.0},
    {"name": "burst", "duration_s": 2.0, "rate": 6.0},
    {"name": "recover", "duration_s": 4.0, "rate": 3.0},
]
START = {"ramp": 0.0, "sustain": 2.0, "burst": 6.0, "recover": 8.0}

arrival = st.tuples(
    st.sampled_from(WORKLOADS[:4]),
    st.sampled_from([p["name"] for p in PHASES]),
    st.sampled_from(OUTCOMES),
    st.floats(1.0, 5000.0),
    st.floats(0.0, 0.5),
)


def samples_of(rows: list[tuple]) -> pd.DataFrame:
    """Contract-shaped samples from (workload, phase, outcome, latency_ms, lateness_s)."""
    frame = pd.DataFrame(rows, columns=["workload", "phase", "outcome", "latency_ms", "late_s"])
    frame["due_s"] = frame["phase"].map(START) + np.arange(len(frame)) * 1e-3
    never_sent = frame["outcome"] == "abandoned"
    frame["sent_s"] = np.where(never_sent, np.nan, frame["due_s"] + frame["late_s"])
    frame["finished_s"] = frame["due_s"] + frame["late_s"] + frame["latency_ms"] / 1000
    ok = frame["outcome"].isin(OK_OUTCOMES)
    stream = frame["workload"] == "chat_stream"
    return frame.assign(
        run_id="prop",
        worker=0,
        index=np.arange(len(frame)),
        latency_ms=np.where(never_sent, np.nan, frame["latency_ms"]),
        latency_due_ms=(frame["finished_s"] - frame["due_s"]) * 1000,
        ttft_ms=np.where(ok & stream, frame["latency_ms"] / 3, np.nan),
        tokens=0,
        status=np.where(ok, 200, 500),
        ok=ok.astype(int),
        detail=np.where(ok, "", "HTTP 500"),
        bytes=0,
    )


def scenario_with(thresholds: list[dict]):
    return scenario_from_dict(
        {
            "name": "prop",
            "workloads": {w: 1 for w in WORKLOADS},
            "phases": PHASES,
            "thresholds": thresholds,
        }
    )


def built(rows: list[tuple], thresholds: list[dict] | None = None):
    scenario = scenario_with(thresholds or [])
    with tempfile.TemporaryDirectory() as tmp:
        run = load_run(write_run_dir(Path(tmp) / "run", scenario, samples_of(rows)))
    stats = run_stats(run)
    return run, stats, judge(run, stats, system_stats(run))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(arrival, min_size=1, max_size=60))
def test_counts_add_up_across_phases_workloads_and_outcomes(rows):
    _, stats, _ = built(rows)
    assert stats.whole.total.calls == len(rows) == stats.lateness.recorded
    assert sum(p.recorded for p in stats.phases) == len(rows)
    for w in stats.whole.workloads:
        per_phase = [p.by_offer.workload(w.workload).counts for p in stats.phases]
        assert sum(c.calls for c in per_phase) == w.counts.calls
        assert sum(c.errors for c in per_phase) == w.counts.errors
        c = w.counts
        assert c.ok + c.failed + c.shed + c.cancelled + c.timeouts + c.abandoned == c.calls
        assert c.errors == c.calls - c.successes  # shed counts by default
    for part in [stats.whole, *(p.by_offer for p in stats.phases)]:
        assert sum(w.counts.calls for w in part.workloads) == part.total.calls
        assert sum(f.count for f in part.failures) == part.total.calls - part.total.successes
    timed = [r[3] for r in rows if r[2] == "ok" or (r[2] == "cancelled" and r[0] != "chat_stream")]
    observed = {round(v, 9) for v in timed}
    for w in stats.whole.workloads:
        for value in (w.latency.p50, w.latency.p95, w.latency.p99, w.latency.max):
            assert value is None or round(value, 9) in observed


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(arrival, min_size=1, max_size=40),
    st.sampled_from(["p95_ms", "p50_ttft_ms", "error_rate", "max_ms"]),
    st.sampled_from([p["name"] for p in PHASES]),
)
def test_a_workload_without_samples_is_never_a_pass(rows, metric, phase):
    # ingest is never generated by `arrival`, so it has no samples at all.
    limit = {"workload": "ingest", "metric": metric, "limit": 1e9, "phase": phase}
    _, _, verdict = built(rows, [limit])
    mine = [t for t in verdict.thresholds if t.workload == "ingest"]
    assert mine and all(t.status != PASS for t in mine)
    assert verdict.exit_code != 0
