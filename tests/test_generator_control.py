"""The operator's controls: refusals before load, the web UI's arrival rate, and stopping early.

A refusal is one line naming the option or field, a non-zero exit and no run
directory. A rate changed at /arrival-rate takes effect at the same arrival index
for the rest of the run. A run stopped early (web UI, Ctrl-C, SIGTERM) still
records one sample per arrival it offered and says it was interrupted.
"""

import itertools
import json
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter

import pytest

from engine.samples import OPERATOR_STOP
from reports.build import build_report
from stack.generator_runs import (
    RUN_TIMEOUT_S,
    load_env,
    locust_args,
    ran_scenario,
    read_run,
    read_samples,
    write_scenario,
)
from stack.processes import ROOT, free_port, stop, wait_ready
from tests.support.generator_env import start_local, wait_for_rows

pytestmark = pytest.mark.system

# Long enough that every early stop lands mid-run.
LONG = [("ramp", 4.0, 5.0), ("sustain", 60.0, 10.0)]


@pytest.fixture(scope="module")
def long_scenario(tmp_path_factory):
    return write_scenario(tmp_path_factory.mktemp("scenario"), LONG)


def _refusal(plat, tmp_path, *args, env=None):
    run_dir = tmp_path / "run"
    result = subprocess.run(
        [
            sys.executable,
            *locust_args(plat, write_scenario(tmp_path, LONG), run_dir, "--headless", *args),
        ],
        cwd=ROOT,
        env=env or load_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    ours = [line for line in result.stderr.splitlines() if line.startswith("agent-loadkit: ")]
    return result, ours, run_dir


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (("--scale", "0"), "--scale"),
        (("--connections", "many"), "--connections"),
        (("--follow-up-grace", "-5"), "--follow-up-grace"),
        (("--fixture", "/nonexistent/fixture.json"), "fixture"),
        (("--scenario", "/nonexistent/scenario.yaml"), "scenario"),
    ],
)
def test_bad_options_are_refused_in_one_line_before_any_load(plat, tmp_path, args, names):
    result, ours, run_dir = _refusal(plat, tmp_path, *args)
    assert result.returncode != 0
    assert len(ours) == 1 and names in ours[0], result.stderr[-1500:]
    assert not run_dir.exists()


def test_a_limit_for_a_platform_the_kit_does_not_speak_is_refused_before_load(plat, tmp_path):
    """A misspelt platform under per_platform would leave its limit silently unused."""
    threshold = {
        "workload": "chat_stream",
        "metric": "p95_ttft_ms",
        "limit": 1500,
        "per_platform": {"langraph": {"limit": 2500, "why": "its queue"}},
    }
    (tmp_path / "misspelt").mkdir()
    misspelt = write_scenario(tmp_path / "misspelt", LONG, thresholds=[threshold])
    result, ours, run_dir = _refusal(plat, tmp_path, "--scenario", str(misspelt))
    assert result.returncode == 2
    assert len(ours) == 1 and ours[0].startswith("agent-loadkit: scenario: per_platform"), ours
    assert "'langraph'" in ours[0] and "langgraph" in ours[0].split("use one of")[1]
    assert not run_dir.exists()


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (("-r", "2"), "-r/--spawn-rate"),
        (("--database-url", "postgresql://u:s3cret-pw@127.0.0.1:1/db"), "--database-url"),
        (("--database-url-file", "/nonexistent/db-url"), "--database-url-file"),
    ],
)
def test_a_spawn_rate_without_users_and_a_password_in_argv_are_refused(plat, tmp_path, args, names):
    result, ours, run_dir = _refusal(plat, tmp_path, *args)
    assert result.returncode == 2
    assert len(ours) == 1 and ours[0].startswith(f"agent-loadkit: {names}:"), result.stderr[-1500:]
    assert "s3cret-pw" not in result.stderr + result.stdout
    assert not run_dir.exists()


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_a_run_dir_that_cannot_be_made_is_refused_before_preflight(plat, tmp_path, where):
    blocker = tmp_path / "taken"
    blocker.write_text("not a directory")
    run_dir = blocker if where == "a file" else blocker / "run"
    # A wrong password too: had preflight run first, the refusal would be about sign-in.
    env = {**load_env(), "LOAD_PASSWORD": "not-the-password"}
    result, ours, _ = _refusal(plat, tmp_path, "--run-dir", str(run_dir), env=env)
    assert result.returncode == 2
    assert len(ours) == 1 and ours[0].startswith("agent-loadkit: --run-dir:"), result.stderr
    assert "Traceback" not in result.stderr


def _master_waiting(plat, tmp_path, *args) -> subprocess.Popen:
    """A headless master expecting two workers that never come."""
    scenario = write_scenario(tmp_path, LONG)
    command = [sys.executable, *locust_args(plat, scenario, tmp_path / "run", "--headless")]
    command += ["--master", "--master-bind-host", "127.0.0.1"]
    command += ["--master-bind-port", str(free_port()), "--expect-workers", "2", *args]
    return subprocess.Popen(
        command, cwd=ROOT, env=load_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def test_workers_that_never_come_end_the_wait_with_one_line_and_exit_2(plat, tmp_path):
    proc = _master_waiting(plat, tmp_path, "--expect-workers-max-wait", "2")
    try:
        _, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        stop(proc)
    err = err.decode()
    ours = [line for line in err.splitlines() if line.startswith("agent-loadkit: ")]
    assert proc.returncode == 2, err[-1500:]
    assert ours == [
        "agent-loadkit: --expect-workers: 0 of 2 workers connected within 2 s; start the rest, "
        "or lower --expect-workers (--expect-workers-max-wait sets the wait)"
    ]
    assert "Traceback" not in err and not (tmp_path / "run").exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_waiting_for_workers_is_a_clean_exit_2(plat, tmp_path, sig):
    proc = _master_waiting(plat, tmp_path)
    try:
        _wait_for_line(proc, "waiting up to 120 s for 2 workers")
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        stop(proc)
    err = err.decode()
    assert proc.returncode == 2, err[-1500:]
    assert f"agent-loadkit: {sig.name} before load started; no run made" in err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def _wait_for_line(proc: subprocess.Popen, text: str) -> None:
    """Read the process's stderr until a line holds ``text`` (or fail when it exits)."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        line = proc.stderr.readline().decode()
        if text in line:
            return
        assert line or proc.poll() is None, f"exited before saying {text!r}"
    raise TimeoutError(f"never said {text!r}")


def test_the_makefile_never_puts_the_database_password_in_argv():
    result = subprocess.run(
        ["make", "-n", "load-test", "DATABASE_URL=postgresql://u:s3cret-pw@127.0.0.1/db"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "loadkit run" in result.stdout, result.stderr
    assert "s3cret-pw" not in result.stdout


def test_the_kits_options_are_listed_with_locusts():
    result = subprocess.run(
        [sys.executable, "-m", "runner", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0
    ours = result.stdout.split("agent-loadkit (open arrival")[1]
    for option in ("--rate", "--scenario", "--scale", "--run-dir", "--database-url-file"):
        assert option in ours
    assert "--expect-workers-max-wait" in result.stdout and "exit 2" in result.stdout


def test_a_missing_password_is_refused_and_never_taken_from_the_command_line(plat, tmp_path):
    env = {k: v for k, v in load_env().items() if k != "LOAD_PASSWORD"}
    result, ours, run_dir = _refusal(plat, tmp_path, env=env)
    assert result.returncode != 0
    assert len(ours) == 1 and "LOAD_PASSWORD" in ours[0]
    assert not run_dir.exists()


def test_a_wrong_password_is_refused_by_preflight_and_never_written(plat, tmp_path):
    env = {**load_env(), "LOAD_PASSWORD": "not-the-password"}
    result, ours, run_dir = _refusal(plat, tmp_path, env=env)
    assert result.returncode == 2
    assert len(ours) == 1 and "sign-in" in ours[0], result.stderr[-1500:]
    assert not run_dir.exists()
    assert "not-the-password" not in result.stderr + result.stdout


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
@pytest.mark.slow
def test_stopping_a_headless_run_early_leaves_an_interrupted_complete_record(
    plat, long_scenario, tmp_path, sig
):
    """A stop signal ends the run at once, recorded; the report (which can take longer than a
    CI timeout's grace on a busy machine) is left to ``loadkit report``, and builds from the
    record alone."""
    run_dir = tmp_path / "run"
    proc = start_local(plat, long_scenario, run_dir)
    try:
        wait_for_rows(run_dir, 20, proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        stop(proc)
    record, samples = read_run(run_dir), read_samples(run_dir)
    assert record["stopped"] == "interrupted" and record["ended_at"]
    assert record["offered"] == len(samples) >= 20
    assert record["duration_s"] < 30
    assert proc.returncode == 2
    assert f"{signal.Signals(sig).name}: run" in err.decode() and "loadkit report" in err.decode()
    assert not (run_dir / "report.md").exists()
    # Nothing arrives after the stop: every sample finished by the time the run ended.
    assert max(float(s["finished_s"]) for s in samples) <= record["duration_s"] + 0.5
    assert build_report(run_dir) == 2 and (run_dir / "report.md").exists()


def test_the_web_ui_sets_the_arrival_rate_and_changes_it_while_it_runs(
    plat, long_scenario, tmp_path
):
    port = free_port()
    run_dir = tmp_path / "run"
    args = [
        sys.executable,
        *locust_args(plat, long_scenario, run_dir),
    ]
    args += ["--web-host", "127.0.0.1", "--web-port", str(port)]
    proc = subprocess.Popen(
        args, cwd=ROOT, env=load_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base + "/arrival-rate", proc)
        # The page is linked from Locust's own UI, and a start without a rate is refused in
        # the form with the reason (not a test that stops at once, the reason in a terminal).
        assert "./arrival-rate" in urllib.request.urlopen(base + "/").read().decode()
        empty = urllib.parse.urlencode({"rate": "", "host": plat.target.url}).encode()
        refused = json.loads(urllib.request.urlopen(base + "/swarm", data=empty).read())
        assert not refused["success"]
        assert refused["message"].startswith("Arrival rate: set how many arrivals to offer")
        # The start form, as a client without its block posts it: the rate alone (the block
        # adds load_mode=rate; without it the shape running takes the rate).
        form = urllib.parse.urlencode({"rate": "5", "host": plat.target.url}).encode()
        urllib.request.urlopen(urllib.request.Request(base + "/swarm", data=form))
        wait_for_rows(run_dir, 5, proc)
        page = urllib.request.urlopen(base + "/arrival-rate").read().decode()
        assert "<b>5</b> arrivals per second" in page
        _post(base + "/arrival-rate", {"rate": 20})
        wait_for_rows(run_dir, 40, proc)
        _post(base + "/stop", None)
        record = _wait_for_end(run_dir, proc)
        # A second test of the same session gets a run directory of its own, beside the first.
        wait_for_report(run_dir, proc)
        urllib.request.urlopen(urllib.request.Request(base + "/swarm", data=form))
        second_dir = run_dir.with_name(run_dir.name + "-2")
        wait_for_rows(second_dir, 5, proc)
        _post(base + "/stop", None)
        assert _wait_for_end(second_dir, proc)["stopped"] == OPERATOR_STOP
    finally:
        proc.send_signal(signal.SIGTERM)
        stop(proc)
    samples = read_samples(run_dir)
    assert record["stopped"] == OPERATOR_STOP and record["offered"] == len(samples)
    # The Stop is the operator's choice: the verdict says so, at when, and blames nothing else.
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["exit_code"] == 2 and summary["findings"] == []
    at = f"t = {record['duration_s']:.1f} s"
    assert summary["invalid_reasons"] == [
        f"stopped by the operator at {at}; a partial run is not a result"
    ]
    first, second = record["phases"]
    assert (first["rate"], second["rate"]) == (5.0, 20.0)
    assert first["end_s"] == second["start_s"]
    by_phase = Counter(s["phase"] for s in samples)
    assert by_phase[first["name"]] == first["offered_total"] == round(first["end_s"] * 5 + 0.4999)
    dues = sorted(float(s["due_s"]) for s in samples if s["phase"] == second["name"])
    assert dues[0] == pytest.approx(second["start_s"], abs=1e-6)
    assert all(b - a == pytest.approx(0.05, abs=1e-6) for a, b in itertools.pairwise(dues))
    # The scenario as run has the rates as its phases, so reports can judge it.
    assert [p["name"] for p in record["scenario"]["phases"]] == [first["name"], second["name"]]
    assert (run_dir / "report.md").exists()


def _post(url: str, payload: dict | None) -> dict:
    body = json.dumps(payload).encode() if payload is not None else b""
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(request).read())


def wait_for_report(run_dir, proc) -> None:
    """Until the run's report is written (the web UI's session goes on after a test)."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while not (run_dir / "summary.json").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "no report was written"
        time.sleep(0.05)


def _wait_for_end(run_dir, proc) -> dict:
    """Until run.json records an end."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        record = read_run(run_dir)
        if record["ended_at"]:
            return record
        time.sleep(0.05)
    raise TimeoutError("the run did not end")


def test_a_fixture_without_a_trigger_runs_without_trigger_fire_and_says_so(plat, tmp_path):
    fixture = json.loads(plat.fixture.read_text())
    fixture["seeded"]["trigger_id"] = None
    (tmp_path / "fixture.json").write_text(json.dumps(fixture))
    scenario = write_scenario(tmp_path, [("sustain", 2.0, 20.0)])
    run_dir = tmp_path / "run"
    args = locust_args(
        plat, scenario, run_dir, "--headless", "--fixture", str(tmp_path / "fixture.json")
    )
    subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=load_env(),
        capture_output=True,
        timeout=RUN_TIMEOUT_S,
    )
    record, samples = read_run(run_dir), read_samples(run_dir)
    assert "trigger" in record["skipped"]["trigger_fire"]
    assert ran_scenario(run_dir).mix["trigger_fire"] == 0
    assert record["offered"] == len(samples) == 40
    assert "trigger_fire" not in {s["workload"] for s in samples}


def test_a_constant_rate_with_a_run_time_ends_and_drains_by_itself(plat, long_scenario, tmp_path):
    run_dir = tmp_path / "run"
    args = locust_args(
        plat, long_scenario, run_dir, "--headless", "--rate", "10", "--run-time", "2s"
    )
    result = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=load_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    record, samples = read_run(run_dir), read_samples(run_dir)
    assert record["stopped"] == "completed", result.stderr[-1500:]
    assert "will be ignored" not in result.stderr
    assert record["offered"] == len(samples) == 20
    assert [(p["name"], p["rate"], p["end_s"]) for p in record["phases"]] == [
        ("rate1@10/s", 10.0, 2.0)
    ]
    assert {s["outcome"] for s in samples} <= {"ok", "cancelled"}
    # Reports judge a constant-rate run too (its rates are the scenario's phases as run),
    # and the process exits with their verdict.
    summary = json.loads((run_dir / "summary.json").read_text())
    assert result.returncode == summary["exit_code"]


def test_every_scenario_problem_is_its_own_line_before_any_load(plat, tmp_path):
    """Scenario validation reports every problem at once, one line each, then exit 2."""
    scenario = write_scenario(tmp_path, [("sustain", float("inf"), 1e12)], chat_cancel_share=2)
    result = subprocess.run(
        [sys.executable, *locust_args(plat, scenario, tmp_path / "run", "--headless")],
        cwd=ROOT,
        env=load_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    ours = [line for line in result.stderr.splitlines() if line.startswith("agent-loadkit: ")]
    fields = [line.removeprefix("agent-loadkit: ").split(":")[0] for line in ours]
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert fields == ["phases.sustain.duration_s", "phases.sustain.rate", "chat_cancel_share"]
    assert not (tmp_path / "run").exists()
