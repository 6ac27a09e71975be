"""The "Verdict so far" tab tells the report's truth: validity so far, units, and the final verdict.

Rows are built from doctored run directories, as the tab builds them from a live
one: a run falling behind is invalid so far whatever its thresholds say; a run
that ended shows its report's verdict line; one interrupted before its report
says so.
"""

from __future__ import annotations

import shutil

import numpy as np

from bench.synthetic_runs import synthetic_samples, write_run_dir
from inputs.scenario import load_scenario
from reports.build import build_report
from tests.data import pool_runs
from tests.support.rundirs import golden_copy
from webui.verdict_tab import verdict_rows

SCENARIO = load_scenario().scaled(0.05)


def test_while_running_numbers_carry_units_and_the_reports_rounding(tmp_path):
    path = write_run_dir(tmp_path / "run", SCENARIO, stopped="not ended", ended_at=None)
    rows = verdict_rows(path, offered=400)
    assert rows[0]["workload"].startswith("so far: ") and "thresholds pass" in rows[0]["workload"]
    assert rows[1]["workload"].startswith("valid so far: 0 of ")
    api = next(r for r in rows if r["workload"] == "api_read")
    assert api["error_rate"] == "0.00%"
    assert api["p95_ms"].endswith(" ms") and len(api["p95_ms"].split(".")[1]) == len("1 ms")
    assert "error rate ≤ 0.10%: pass" in api["thresholds"]
    assert rows[-1]["workload"].startswith("all: offered 400, recorded ")
    # Due and not yet recorded is in flight; the row says what Locust's charts show instead of
    # users.
    recorded = sum(int(r["recorded"].replace(",", "")) for r in rows[2:-1])
    last = verdict_rows(path, offered=recorded + 7)[-1]["workload"]
    assert f"recorded {recorded:,}, in flight 7. Locust's charts: RPS is the completed" in last
    assert "Users shows the offered arrivals per second" in last


def test_a_driver_behind_its_schedule_is_invalid_so_far(tmp_path):
    samples = synthetic_samples(SCENARIO)
    late = np.arange(len(samples)) % 10 == 0  # 10% late, tolerance 1%
    samples.loc[late, "sent_s"] = samples.loc[late, "due_s"] + 0.5
    path = write_run_dir(tmp_path / "late", SCENARIO, samples, stopped="not ended", ended_at=None)
    rows = verdict_rows(path, offered=len(samples))
    assert rows[0]["workload"].startswith("so far: INVALID")
    assert rows[1]["workload"].startswith("INVALID: the driver fell behind")
    assert "tolerance 1.00%" in rows[1]["workload"]


def test_after_stop_the_reports_verdict_replaces_the_guess(tmp_path):
    path = golden_copy(tmp_path / "golden")
    assert build_report(path) == 1
    rows = verdict_rows(path, offered=None)
    assert rows[0]["workload"].startswith("final: FAIL (exit 1)")


def test_interrupted_before_its_report_says_so(tmp_path):
    path = write_run_dir(tmp_path / "stopped", SCENARIO, stopped="interrupted")
    rows = verdict_rows(path, offered=None)
    assert rows[0]["workload"] == "final: interrupted: invalid (a partial run is not a result)"
    assert build_report(path) == 2
    assert verdict_rows(path, offered=None)[0]["workload"].startswith("final: INVALID (exit 2)")


def test_accepted_work_nobody_verified_is_a_floor_in_the_tab_never_0_percent(tmp_path):
    path = shutil.copytree(pool_runs.DEFAULT, tmp_path / "pool")
    ingest = next(r for r in verdict_rows(path, offered=None) if r["workload"] == "ingest")
    assert ingest["error_rate"].startswith("at least ")
    assert ingest["error_rate"].endswith(" not verifiable")
