"""Nothing the kit starts outlives its operator, and no load is offered after it is told to stop.

Each wrapper an operator or a CI job starts (``make demo``, ``make ui``, ``loadkit demo``,
``loadkit ui``, ``loadkit run``) is signalled mid-sustain as a CI timeout (SIGTERM), a
terminal's Ctrl-C (SIGINT) or a closed terminal (SIGHUP) would, or killed outright
(SIGKILL, for the wrappers that start a stack). Then every process it started must be gone
within GONE_WITHIN_S, run.json must say ``interrupted``, and the platform's own request log
(the reference target's TARGET_REQUEST_LOG, one line per request as it arrives) must show no
arrival after the signal beyond the in-flight allowance below.

A terminal delivers SIGINT and SIGHUP to its whole foreground process group, so those go to
the wrapper's group; make passes SIGTERM on to its recipe itself, so that goes to make alone.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from stack.generator_runs import write_scenario
from stack.local import StackOptions
from stack.platforms import local_stack
from stack.processes import ROOT, free_port, stop

pytestmark = [pytest.mark.system, pytest.mark.slow]

# The promise: every process a wrapper started is gone this long after the signal.
GONE_WITHIN_S = 5.0
# Arrivals may still reach the platform after the signal for this long at the phase's rate:
# the signal reaches the load through one hop (the wrapper sends SIGTERM to Locust, a
# process switch), Locust stops its dispatchers on its event loop's next turn, and a request
# written just before is logged by the platform once its head is read. Each is microseconds
# on an idle machine and can be a few hundred milliseconds on a loaded 2-core one; the load
# these tests catch ran on for the rest of its phases (12/s for tens of seconds).
IN_FLIGHT_ALLOWANCE_S = 0.5
# Requests that are not arrivals: the probes' reads of the platform, and health checks.
NOT_ARRIVALS = ("/metrics", "/api/v1/health")
# Starting stub, target and seed, then reaching sustain, on a busy machine.
START_TIMEOUT_S = 240.0
# Long enough that every signal lands mid-sustain: 6 s of ramp at 4/s, then 18 s of sustain at
# 12/s, of which a test waits about 1 s (12 arrivals) before it signals.
SCALE = "0.1"
SUSTAIN_RATE = 12.0
# The web UI's test runs at this rate (arrivals per second).
UI_RATE = 10.0


@dataclass
class Wrapper:
    """A wrapper process started for a test, with its output captured in a file."""

    proc: subprocess.Popen
    output: Path
    requests: Path

    def text(self) -> str:
        return self.output.read_text(errors="replace")

    def wait_for(self, pattern: str) -> re.Match:
        """The first match of ``pattern`` in the wrapper's output, once it appears."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            found = re.search(pattern, self.text())
            if found:
                return found
            assert self.proc.poll() is None, (
                f"exited {self.proc.returncode}:\n{self.text()[-3000:]}"
            )
            time.sleep(0.1)
        raise TimeoutError(f"never said {pattern!r}:\n{self.text()[-3000:]}")


def _env(requests: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "TARGET_REQUEST_LOG": str(requests),
        "PYTHONUNBUFFERED": "1",
        "SCALE": SCALE,
        **extra,
    }


@contextmanager
def started(command: list[str], tmp_path: Path, **env: str) -> Iterator[Wrapper]:
    """``command`` from the repository root in a session of its own (so a test can signal its
    group as a terminal would), output to a file; stopped, with all it started, at the end."""
    output, requests = tmp_path / "output.log", tmp_path / "requests.log"
    with output.open("wb") as out:
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env=_env(requests, **env),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        yield Wrapper(proc, output, requests)
    finally:
        for child in _descendants(proc.pid):
            child.kill()
        stop(proc)


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _arrivals_after(requests: Path, after: float) -> list[str]:
    """Requests the platform logged after the epoch ``after``, probes and health left out."""
    later = []
    for line in requests.read_text().splitlines():
        epoch, _, path = line.split(" ", 2)
        if float(epoch) > after and not path.startswith(NOT_ARRIVALS):
            later.append(line)
    return later


def _wait_for_arrivals(wrapper: Wrapper, count: int) -> None:
    """Until the platform has logged ``count`` more arrivals than when the run's start was
    picked (load is flowing): the preflight's requests come before it and are not load."""
    wrapper.wait_for(r"load process\(es\), \d+ connections")
    start = len(_arrivals_after(wrapper.requests, 0.0)) if wrapper.requests.exists() else 0
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        logged = wrapper.requests.exists() and len(_arrivals_after(wrapper.requests, 0.0))
        if logged and logged >= start + count:
            return
        assert wrapper.proc.poll() is None, wrapper.text()[-3000:]
        time.sleep(0.05)
    raise TimeoutError("no load reached the platform")


def _signal_and_check(wrapper: Wrapper, sig: signal.Signals, group: bool, rate: float) -> int:
    """Send ``sig`` (to the wrapper's group, as a terminal does, or to the wrapper alone) and
    hold the promise: all gone within GONE_WITHIN_S, no arrival after it beyond the allowance.
    Returns the wrapper's exit status."""
    started_here = [psutil.Process(wrapper.proc.pid), *_descendants(wrapper.proc.pid)]
    assert len(started_here) >= 4, [p.cmdline() for p in started_here]
    sent = time.time()
    if group:
        os.killpg(wrapper.proc.pid, sig)
    else:
        os.kill(wrapper.proc.pid, sig)
    gone, alive = psutil.wait_procs(started_here, timeout=GONE_WITHIN_S)
    took = time.time() - sent
    assert not alive, f"alive {took:.1f} s after {sig.name}: {alive}\n{wrapper.text()[-3000:]}"
    late = _arrivals_after(wrapper.requests, sent)
    allowance = math.ceil(rate * IN_FLIGHT_ALLOWANCE_S)
    assert len(late) <= allowance, f"{len(late)} arrivals after {sig.name}: {late[:20]}"
    # psutil reaped the wrapper, so its exit status is psutil's to tell, not Popen's.
    return next(p.returncode for p in gone if p.pid == wrapper.proc.pid)


def _interrupted(run_dir: Path) -> None:
    record = json.loads((run_dir / "run.json").read_text())
    assert record["stopped"] == "interrupted", record["stopped"]


# -- make demo and loadkit demo ------------------------------------------------------------


# loadkit's wrapper takes SIGTERM, SIGINT and SIGHUP through one handler (STOP_SIGNALS), so
# one of them stands for all three here; make's cases differ in who receives the signal.
DEMO_CASES = [
    ("loadkit", signal.SIGTERM, False),
    ("loadkit", signal.SIGKILL, False),
    ("make", signal.SIGTERM, False),
    ("make", signal.SIGINT, True),
    ("make", signal.SIGHUP, True),
]


@pytest.mark.parametrize(("how", "sig", "group"), DEMO_CASES)
def test_a_signalled_demo_stops_its_load_and_everything_it_started(tmp_path, how, sig, group):
    if how == "make":
        command = ["make", "--no-print-directory", "demo"]
    else:
        command = [sys.executable, "-m", "loadkit", "demo", "--run-dir", str(tmp_path / "run")]
    with started(command, tmp_path) as demo:
        where = demo.wait_for(r"demo: starting stub and reference target, seeding \((.+)/stack\)")
        run_dir = Path(where.group(1))
        try:
            demo.wait_for(r"phase sustain")
            _wait_for_arrivals(demo, 12)
            status = _signal_and_check(demo, sig, group, SUSTAIN_RATE)
            _interrupted(run_dir)
            if how == "loadkit" and sig != signal.SIGKILL:
                assert status == 2, demo.text()[-2000:]
            if how == "make":
                # The recipe exits 2; make then ends itself by the signal it got (GNU make).
                assert "Error 2" in demo.text() and status in (2, -sig), status
        finally:
            if how == "make":
                shutil.rmtree(run_dir, ignore_errors=True)


# -- make ui and loadkit ui ------------------------------------------------------------------


UI_CASES = [
    ("loadkit", signal.SIGINT, True),
    ("loadkit", signal.SIGKILL, False),
    ("make", signal.SIGTERM, False),
    ("make", signal.SIGHUP, True),
]


@contextmanager
def _ui_swarming(tmp_path: Path, how: str) -> Iterator[tuple[Wrapper, Path]]:
    """A web UI session with a rate entered (its run directory removed after)."""
    port = free_port()
    if how == "make":
        command = ["make", "--no-print-directory", "ui"]
    else:
        command = [sys.executable, "-m", "loadkit", "ui"]
    with started(command, tmp_path, WEB_PORT=str(port)) as ui:
        where = ui.wait_for(r"ui: starting stub and reference target, seeding \((.+)/stack\)")
        run_dir = Path(where.group(1))
        try:
            ui.wait_for(r"ui: open http://127\.0\.0\.1:\d+/")
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + START_TIMEOUT_S
            while True:
                try:
                    urllib.request.urlopen(base + "/arrival-rate", timeout=2)
                    break
                except OSError:
                    assert time.monotonic() < deadline and ui.proc.poll() is None, ui.text()
                    time.sleep(0.2)
            form = urllib.parse.urlencode({"rate": str(UI_RATE)}).encode()
            urllib.request.urlopen(urllib.request.Request(base + "/swarm", data=form))
            yield ui, run_dir
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)


@pytest.mark.parametrize(("how", "sig", "group"), UI_CASES)
def test_a_signalled_web_ui_session_stops_its_load_and_everything_it_started(
    tmp_path, how, sig, group
):
    with _ui_swarming(tmp_path, how) as (ui, run_dir):
        _wait_for_arrivals(ui, 10)
        _signal_and_check(ui, sig, group, UI_RATE)
        _interrupted(run_dir)


def test_a_web_ui_session_signalled_before_its_first_arrival_records_that_nothing_ran(tmp_path):
    """A signal in the start's lead (the master picked t = 0 a moment ahead) ends a run that
    offered nothing: run.json says interrupted with no phases, and its report says why in one
    line, where the wrap-up once failed on a phase that ended where it began."""
    with _ui_swarming(tmp_path, "loadkit") as (ui, run_dir):
        ui.wait_for(r"load process\(es\), \d+ connections")
        sent = time.time()
        _signal_and_check(ui, signal.SIGINT, True, UI_RATE)
        record = json.loads((run_dir / "run.json").read_text())
        if sent >= record["start_epoch"]:
            pytest.skip(f"the signal landed {sent - record['start_epoch']:.2f} s after t = 0")
        assert (record["stopped"], record["phases"], record["offered"]) == ("interrupted", [], 0)
        report = subprocess.run(
            [sys.executable, "-m", "loadkit", "report", str(run_dir)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert report.returncode == 2, report.stderr
        assert "before its first arrival was due: nothing was offered" in report.stderr


# -- loadkit run -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """Stub + reference target, seeded, with the target's request log on."""
    tmp = tmp_path_factory.mktemp("stack")
    requests = tmp / "requests.log"
    previous = os.environ.get("TARGET_REQUEST_LOG")
    os.environ["TARGET_REQUEST_LOG"] = str(requests)
    try:
        with local_stack(StackOptions(workdir=tmp)) as local:
            yield local, requests
    finally:
        if previous is None:
            os.environ.pop("TARGET_REQUEST_LOG", None)
        else:
            os.environ["TARGET_REQUEST_LOG"] = previous


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signalled_loadkit_run_stops_at_once_and_exits_2(stack, tmp_path, sig):
    local, requests = stack
    scenario = write_scenario(tmp_path, [("ramp", 2.0, 4.0), ("sustain", 60.0, SUSTAIN_RATE)])
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "loadkit",
        "run",
        *local.locust_options(),
        "--scenario",
        str(scenario),
        "--run-dir",
        str(run_dir),
    ]
    with started(command, tmp_path, **local.locust_env()) as run:
        run.requests = requests
        run.wait_for(r"phase sustain")
        _wait_for_arrivals(run, 12)
        sent = time.time()
        os.kill(run.proc.pid, sig)
        assert run.proc.wait(GONE_WITHIN_S) == 2, run.text()[-2000:]
        assert time.time() - sent <= GONE_WITHIN_S
        late = _arrivals_after(requests, sent)
        assert len(late) <= math.ceil(SUSTAIN_RATE * IN_FLIGHT_ALLOWANCE_S), late
        _interrupted(run_dir)
        assert "loadkit report" in run.text()
