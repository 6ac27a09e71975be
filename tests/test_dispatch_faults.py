"""Faults become named samples: 500s, held requests, a dead target, 429s, and confirmed cancels.

Each test gets a platform whose stub (or target) misbehaves the way it states;
the stub's faults are seeded so that preflight's own model requests pass and the
run's are what fails. Every arrival must still leave exactly one sample.
"""

import subprocess
import sys
import time
from collections import Counter

import pytest

from engine.mix import Mix
from inputs.scenario import load_scenario
from stack.generator_runs import (
    GENEROUS_LIMITS,
    QUICK_STUB,
    RUN_TIMEOUT_S,
    load_env,
    locust_args,
    platform,
    read_run,
    read_samples,
    write_scenario,
)
from stack.processes import ROOT, stop
from tests.support.generator_env import clean_start_seed, expected_counts, run_local, written

pytestmark = [pytest.mark.system, pytest.mark.slow]

PHASES = [("ramp", 2.0, 6.0), ("sustain", 3.0, 12.0)]
# Model-bound workloads only, so that most arrivals meet the fault.
MODEL_MIX = {"agent_run": 2, "chat_stream": 1, "rag_query": 1, "api_read": 1}


def _by_outcome(samples):
    return Counter((s["workload"], s["outcome"], s["detail"]) for s in samples)


def _complete(run_dir, scenario):
    samples = read_samples(run_dir)
    assert read_run(run_dir)["offered"] == len(samples) == expected_counts(scenario)[0].total()
    assert len({s["index"] for s in samples}) == len(samples)
    return samples


def test_model_errors_are_failures_named_by_their_status(tmp_path):
    knobs = (*QUICK_STUB, "--error-rate", "0.5", "--seed", clean_start_seed(error_rate=0.5))
    scenario = write_scenario(tmp_path, PHASES, workloads=MODEL_MIX)
    with platform(tmp_path / "platform", knobs) as plat:
        run_local(plat, scenario, tmp_path / "run")
    samples = _complete(tmp_path / "run", scenario)
    outcomes = _by_outcome(samples)
    # The platform's own words: error.code and error.message, the chat error frame's message.
    runs = [d for w, o, d in outcomes.elements() if (w, o) == ("agent_run", "failed")]
    turns = [d for w, o, d in outcomes.elements() if (w, o) == ("chat_stream", "failed")]
    assert len(runs) >= 3 and len(turns) >= 1, outcomes
    assert all(d.startswith("HTTP 500 internal_error: the run failed: ") for d in runs), outcomes
    assert all(d.startswith("error frame: ") and len(d) > 14 for d in turns), outcomes
    assert all(len(d) <= len("HTTP 500 internal_error: ") + 80 for d in runs + turns)
    # Stable enough to group: no run id in the words, so one reason per kind of fault.
    assert len(set(runs)) == 1 and len(set(turns)) == 1, outcomes
    for s in samples:
        assert (s["ok"] == "1") == (s["detail"] == ""), s
    failures = (tmp_path / "run" / "locust_failures.csv").read_text()
    assert "HTTP 500 internal_error" in failures


def test_held_requests_time_out_at_the_workloads_timeout(tmp_path):
    timeout_s = 1.5
    knobs = (*QUICK_STUB, "--timeout-rate", "0.5", "--seed", clean_start_seed(timeout_rate=0.5))
    timeouts = {"default_s": timeout_s, "chat_stream_s": timeout_s, "agent_run_s": timeout_s}
    scenario = write_scenario(tmp_path, PHASES, workloads=MODEL_MIX, timeouts=timeouts)
    with platform(tmp_path / "platform", knobs) as plat:
        run_local(plat, scenario, tmp_path / "run")
    samples = _complete(tmp_path / "run", scenario)
    timed_out = [s for s in samples if s["outcome"] == "timeout"]
    assert len(timed_out) >= 5, _by_outcome(samples)
    for s in timed_out:
        assert s["detail"] == "timed out" and s["status"] == "0" and s["ok"] == "0"
        # At the timeout, counted from when the request left; 400 ms of scheduling slack.
        assert timeout_s * 1000 <= float(s["latency_ms"]) < timeout_s * 1000 + 400, s
    # The drain waited for them: nothing was left to abandon.
    assert not [s for s in samples if s["outcome"] == "abandoned"]


def test_a_target_killed_mid_run_still_leaves_one_failed_sample_per_arrival(tmp_path):
    error_rate = {"workload": "api_read", "metric": "error_rate", "limit": 0.01}
    scenario = write_scenario(
        tmp_path, [("ramp", 2.0, 5.0), ("sustain", 4.0, 10.0)], thresholds=[error_rate]
    )
    run_dir = tmp_path / "run"
    with platform(tmp_path / "platform") as plat:
        args = [sys.executable, *locust_args(plat, scenario, run_dir, "--headless")]
        locust = subprocess.Popen(
            args, cwd=ROOT, env=load_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.monotonic() + RUN_TIMEOUT_S
            while _rows(run_dir) < 10 and time.monotonic() < deadline and locust.poll() is None:
                time.sleep(0.05)
            plat.target.proc.kill()
            killed_at = time.time()
            locust.wait(timeout=RUN_TIMEOUT_S)
        finally:
            stop(locust)
    samples = _complete(run_dir, scenario)
    start = read_run(run_dir)["start_epoch"]
    after = [s for s in samples if s["sent_s"] and start + float(s["sent_s"]) > killed_at + 0.2]
    assert len(after) >= 10
    assert all(s["outcome"] == "failed" for s in after), _by_outcome(after)
    assert {s["detail"] for s in after} <= {"ConnectionRefusedError", "ConnectionResetError"}
    # The verdict is the exit code: sustain's api_read error rate failed its threshold.
    assert locust.returncode == 1


def test_the_platforms_429_is_recorded_as_shed(tmp_path):
    limits = {**GENEROUS_LIMITS, "RATE_LIMIT_RUN_PER_MINUTE": "3"}
    scenario = write_scenario(tmp_path, [("sustain", 2.0, 6.0)], workloads={"agent_run": 1})
    with platform(tmp_path / "platform", limits=limits) as plat:
        run_local(plat, scenario, tmp_path / "run")
    samples = _complete(tmp_path / "run", scenario)
    shed = [s for s in samples if s["outcome"] == "shed"]
    # Preflight spent one of the three runs a minute allows (two, if a minute turned).
    assert len(shed) >= len(samples) - 5, _by_outcome(samples)
    # It says whether the platform asked to come back later (AgenticOS's limiter does).
    assert all(s["detail"].startswith("HTTP 429, Retry-After ") for s in shed), shed
    assert all(s["ok"] == "0" and s["status"] == "429" for s in shed)
    assert all(s["outcome"] in ("ok", "shed") for s in samples)


def test_the_cancelled_share_is_stopped_and_each_stop_is_confirmed(tmp_path):
    tokens = 20
    knobs = ("--first-token-ms", "50", "--token-ms", "100", "--tokens", str(tokens))
    scenario = write_scenario(tmp_path, [("sustain", 3.0, 8.0)], workloads={"chat_stream": 1})
    with platform(tmp_path / "platform", knobs) as plat:
        run_local(plat, scenario, tmp_path / "run")
    samples = _complete(tmp_path / "run", scenario)
    mix = Mix.from_scenario(load_scenario(scenario))
    meant = {int(s["index"]) for s in samples if mix.cancels(int(s["index"]))}
    assert 0.1 * len(samples) <= len(meant) <= 0.3 * len(samples)
    for s in samples:
        if int(s["index"]) in meant:
            # complete with stopped: true arrived, after at least one token and well before all.
            assert s["outcome"] == "cancelled" and s["ok"] == "1", s
            assert 1 <= int(s["tokens"]) < tokens
        else:
            assert s["outcome"] == "ok" and int(s["tokens"]) == tokens, s


def _rows(run_dir) -> int:
    return written(run_dir)
