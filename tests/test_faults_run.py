"""Fault windows in a real run (runner/faults.py, runner/fault_guard.py): refused before load when
the run cannot apply them, and nothing left frozen however the run ends.

A freeze window stops a process the test starts for it (a sleeper: freezing it harms
nothing, and /proc says whether it is stopped); the run is then stopped as a terminal's
Ctrl-C (SIGINT), a CI timeout (SIGTERM) or a kill of the master (SIGKILL), and the sleeper
must be running again within THAWED_WITHIN_S, by the guard that outlives the master.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.fault_record import FAULTS_DIR, GUARD_EVENTS, read_events
from stack.generator_runs import write_scenario
from stack.processes import stop
from tests.support.generator_env import run_local, start_local

pytestmark = pytest.mark.system

# The guard sees its pipe end at once, and thaws before anything else.
THAWED_WITHIN_S = 5.0
# A headless start on a busy machine: preflight, the lead, the window's first second.
FROZEN_WITHIN_S = 60.0


def _state(pid: int) -> str:
    """A process's state letter from /proc (T: stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def _wait(ok, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not ok():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_frozen_process_is_thawed_however_the_run_ends(plat, tmp_path, sleeper, signum):
    freeze = {"name": "pause", "phase": "sustain", "kind": "freeze", "pid": sleeper.pid}
    freeze |= {"start_s": 1, "duration_s": 50}
    scenario = write_scenario(tmp_path, [("sustain", 60, 2)], faults=[freeze])
    run_dir = tmp_path / "run"
    load = start_local(plat, scenario, run_dir)
    try:
        _wait(
            lambda: _state(sleeper.pid) == "T" or load.poll() is not None,
            FROZEN_WITHIN_S,
            "the window never froze the process",
        )
        assert load.poll() is None, load.stderr.read().decode() if load.stderr else ""
        load.send_signal(signum)
        _wait(lambda: _state(sleeper.pid) != "T", THAWED_WITHIN_S, "left frozen")
    finally:
        stop(load)
    events = [e for e in read_events(run_dir) if e.fault == "pause"]
    assert [e.event for e in events] == ["applied", "undone"], events
    assert events[1].detail == f"SIGCONT of PID {sleeper.pid}"
    # The guard's record is written as it acts, whatever happened to the master.
    assert (run_dir / FAULTS_DIR / GUARD_EVENTS).exists()


def test_windows_the_run_cannot_apply_are_refused_before_load(plat, tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    faults = [
        {"phase": "sustain", "kind": "freeze", "pid": gone.pid, "duration_s": 1},
        {"phase": "sustain", "kind": "command", "at_start": ["/no/such/chaos-tool"]},
        {"phase": "sustain", "kind": "outage", "duration_s": 1},
    ]
    scenario = write_scenario(tmp_path, [("sustain", 5, 2)], faults=faults)
    # The target is no stub: it answers GET /faults with a 404.
    done = run_local(plat, scenario, tmp_path / "run", "--stub-url", plat.target.url)
    assert done.returncode == 2, done.stderr
    refused = [line for line in done.stderr.splitlines() if line.startswith("agent-loadkit: ")]
    assert refused == [
        f"agent-loadkit: faults: GET {plat.target.url}/faults answered 404: the model's windows "
        "need the kit's stub (python -m stub) at --stub-url",
        f"agent-loadkit: faults[0] (freeze@sustain).pid: no process {gone.pid} is running; give "
        "the platform's PID",
        "agent-loadkit: faults[1] (command@sustain): /no/such/chaos-tool is not a program here; "
        "give its full path",
    ]
    assert not (tmp_path / "run" / "samples").exists()


def test_windows_are_applied_undone_and_recorded_in_a_run(plat, tmp_path):
    faults = [
        {"name": "down", "phase": "sustain", "kind": "outage", "start_s": 2, "duration_s": 2},
        {
            "name": "chaos",
            "phase": "sustain",
            "kind": "command",
            "start_s": 1,
            "duration_s": 3,
            "at_start": "echo started",
            "at_end": ["sh", "-c", "echo ended; exit 3"],
        },
    ]
    scenario = write_scenario(tmp_path, [("sustain", 8, 4)], faults=faults)
    run_dir = tmp_path / "run"
    done = run_local(plat, scenario, run_dir)
    assert done.returncode in (0, 1, 2), done.stderr
    events = read_events(run_dir)
    stub = [(e.event, e.by) for e in events if e.fault == "down"]
    assert stub == [("applied", stub[0][1]), ("undone", stub[0][1])]
    assert stub[0][1].startswith("stub process 0")
    chaos = [(e.event, e.detail) for e in events if e.fault == "chaos"]
    assert chaos == [
        ("applied", "at_start exited 0 (output in chaos.at_start.log)"),
        ("undo failed", "at_end exited 3 (output in chaos.at_end.log)"),
    ]
    assert (run_dir / FAULTS_DIR / "chaos.at_start.log").read_text() == "started\n"
    assert (run_dir / FAULTS_DIR / "chaos.at_end.log").read_text() == "ended\n"


def test_a_restarted_reference_platform_honours_tokens_signed_with_its_configured_key():
    from platforms.reference.auth import TokenSigner
    from platforms.reference.settings import load_settings

    settings = load_settings([], {"TARGET_SECRET_KEY": "k" * 64})
    token = TokenSigner(settings.secret_key).issue("user-1", "access")
    assert TokenSigner(settings.secret_key).user_id(token) == "user-1"
    # Without one, each process has a key of its own: a restart refuses every token.
    assert TokenSigner().user_id(TokenSigner().issue("user-1", "access")) is None
    assert "k" * 64 not in repr(settings)
