"""The loop in the report, on a synthetic run: the platform's time per step is the turn's
latency minus the stub's time for its calls, over the calls; turns off plan are named and
left out; a threshold can hold the time per step; no record, not measured."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from bench.synthetic_runs import synthetic_samples, write_run_dir
from engine.agent_plan import STUB_CALLS_FILE
from inputs.scenario import load_scenario, scenario_from_dict
from reports.build import write_report
from reports.loop import MODEL_CALLS, STEP_OVERHEAD_MS, OffPlan, off_plan
from reports.rundir import load_run

STEPS = 3
# The stub's time for each of a turn's three calls.
STUB_MS = (100.0, 120.0, 80.0)


def _scenario(limit: float | None = None):
    raw = load_scenario().scaled(0.1).to_dict()
    for name in ("chat_stream", "agent_run"):
        raw["workloads"][name]["steps"] = STEPS
    raw["judging"]["min_counts"] = {key: 1 for key in raw["judging"]["min_counts"]}
    for threshold in raw["thresholds"]:
        threshold.pop("min_count")
    if limit is not None:
        raw["thresholds"].append(
            {
                "workload": "agent_run",
                "metric": "p95_step_overhead_ms",
                "limit": limit,
                "why": "The platform's own share of a step",
            }
        )
    return scenario_from_dict(raw, as_run=True)


def _run_dir(tmp_path, scenario, short: int = 1, record: bool = True):
    """A run dir whose planned arrivals each made STEPS calls at the stub, but the first
    ``short`` successful chat turns, which made one."""
    samples = synthetic_samples(scenario, "loop-run")
    path = write_run_dir(tmp_path / "run", scenario, samples)
    planned = samples[samples["workload"].isin(["chat_stream", "agent_run"])]
    chats = planned[(planned["workload"] == "chat_stream") & (planned["outcome"] == "ok")]
    stopped = set(chats["index"].head(short))
    if record:
        with (path / STUB_CALLS_FILE).open("w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(
                ["run", "arrival", "step", "steps", "reply", "tool_calls", "turns",
                 "prompt_tokens", "started_at", "first_ms", "total_ms", "outcome"]
            )  # fmt: skip
            for k in planned["index"]:
                made = 1 if k in stopped else STEPS
                for step in range(1, made + 1):
                    reply = "answer" if step == made else "tool_calls"
                    writer.writerow(
                        ["loop-run", k, step, STEPS, reply, 1, 1, 10, 0.0, 20.0,
                         STUB_MS[step - 1], "ok"]
                    )  # fmt: skip
            writer.writerow(["another-run", 0, 1, 1, "answer", 0, 1, 1, 0.0, 1.0, 1.0, "ok"])
    return path, samples, stopped


def test_time_per_step_is_the_turns_latency_less_the_stubs_over_its_calls(tmp_path):
    path, _, stopped = _run_dir(tmp_path, _scenario())
    run = load_run(path)
    joined = run.samples.frame("SELECT * FROM samples ORDER BY seq").set_index("index")
    runs = joined[(joined["workload"] == "agent_run") & (joined["outcome"] == "ok")]
    expected = (runs["latency_ms"] - sum(STUB_MS)) / STEPS
    assert len(runs) > 10
    assert np.allclose(runs[STEP_OVERHEAD_MS], expected)
    assert (runs[MODEL_CALLS] == STEPS).all()
    # The turn that stopped short is named and left out of the time per step.
    assert joined.loc[sorted(stopped), STEP_OVERHEAD_MS].isna().all()
    (stray,) = off_plan(run.samples, run.scenario)
    assert stray == OffPlan("chat_stream", STEPS, 1, 1, tuple(sorted(stopped)))
    # Workloads without a plan carry none.
    assert joined.loc[joined["workload"] == "api_read", MODEL_CALLS].isna().all()


def test_the_report_names_the_turns_off_plan_and_a_threshold_holds_the_time_per_step(tmp_path):
    slowest = float((synthetic_samples(_scenario(), "loop-run")["latency_ms"]).max())
    path, _, stopped = _run_dir(tmp_path, _scenario(limit=slowest))
    code, _ = write_report(path)
    text = (path / "report.md").read_text()
    assert "The agent's loop" in text
    assert f"arrivals {min(stopped)}" in text and "stopped short" in text
    assert "p95 step overhead" in text
    assert code == 0, text
    tight, _, _ = _run_dir(tmp_path / "tight", _scenario(limit=1.0))
    assert write_report(tight)[0] == 1


def test_without_the_stubs_record_the_loop_is_not_measured(tmp_path):
    path, _, _ = _run_dir(tmp_path, _scenario(), record=False)
    write_report(path)
    assert (
        "Not measured: the run directory has no stub call record"
        in (path / "report.md").read_text()
    )


@pytest.mark.parametrize(
    "damage", ["arrival\n1\n", "run,arrival,step,reply,turns,total_ms\nr,x,1,a,1,1\n"]
)
def test_a_broken_record_is_one_line_naming_the_file(tmp_path, damage):
    path, _, _ = _run_dir(tmp_path, _scenario(), record=False)
    (path / STUB_CALLS_FILE).write_text(damage)
    with pytest.raises(ValueError, match=STUB_CALLS_FILE):
        load_run(path)


def test_a_record_of_no_calls_reads_as_none(tmp_path):
    # A run whose workloads make no model call (reads only) leaves the header alone.
    path, _, _ = _run_dir(tmp_path, _scenario(), record=False)
    (path / STUB_CALLS_FILE).write_text(
        "run,arrival,step,steps,reply,tool_calls,turns,prompt_tokens,started_at,first_ms,"
        "total_ms,outcome\n"
    )
    with load_run(path) as run:
        assert run.samples.count
