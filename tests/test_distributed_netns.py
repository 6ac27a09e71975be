"""Master and two workers on three "hosts": Linux network namespaces the test makes itself.

The platform and the master share one namespace; each worker has its own, and all
three meet on a bridge in a fourth, so every message between master and workers
crosses a real link: with ``tc netem`` delay and loss where the kernel has it, and
through a relay that delays every byte 25 ms each way in any case.
A run across them must be valid with offered == recorded, and a worker whose link
is cut mid-run must be detected and named with the arrivals it took. Skipped, with
the reason, where namespaces cannot be made (no root, no ``ip``).
"""

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from stack.generator_runs import (
    RUN_TIMEOUT_S,
    read_run,
    read_samples,
    run_distributed,
    start_distributed,
    write_scenario,
)
from stack.processes import ROOT, stop
from tests.support import netns
from tests.support.generator_env import invalid_reasons, written

ROLES = ["master", "worker0", "worker1"]
# 50 ms between master and each worker (25 ms each way), and a lossy link.
NETEM = "delay 25ms loss 1%"
# Without netem: a relay in the hub delays every byte 25 ms each way (no loss).
RELAY_DELAY_MS = "25"
# The master's port for its workers (the namespaces are empty: any port is free there).
MASTER_PORT = 5557
# The relay's port for the target (workers and the master's preflight go through it).
RELAYED_TARGET_PORT = 8000
# The platform's start and seed, in a namespace, on a busy machine.
PLATFORM_TIMEOUT_S = 120
# Tolerance of a machine shared by many test runs; this test is about accounting, not speed.
LATENESS = {"late_after_ms": 250.0, "max_late_fraction": 0.05}

_why_not = netns.unavailable()
pytestmark = [
    pytest.mark.system,
    pytest.mark.slow,
    pytest.mark.netns,
    pytest.mark.skipif(_why_not is not None, reason=f"no namespaces: {_why_not}"),
]


def _netem_or_skip(link: str) -> str:
    if link != "netem":
        return ""
    why = netns.netem_unavailable()
    if why:
        pytest.skip(f"no delay or loss on the links: {why} (the relay variant runs instead)")
    return NETEM


@pytest.fixture(params=["plain", "netem", "relay"])
def hosts(request, tmp_path):
    """The topology and the platform in the master's namespace; all removed afterwards.

    "relay": the workers reach the master and the target through a relay in the hub that
    delays every byte 25 ms each way, for kernels without netem.
    """
    with netns.topology(ROLES, _netem_or_skip(request.param)) as topology:
        directory = tmp_path / "platform"
        directory.mkdir()
        command = [sys.executable, "-m", "tests.support.netns_platform", str(directory)]
        proc = subprocess.Popen(
            [*topology.run_in("master"), *command],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=(directory / "platform.err").open("w"),
        )
        try:
            ready = directory / "platform.json"
            deadline = time.monotonic() + PLATFORM_TIMEOUT_S
            while not ready.exists():
                assert proc.poll() is None, (directory / "platform.err").read_text()[-1500:]
                assert time.monotonic() < deadline, "the platform did not start"
                time.sleep(0.1)
            info = json.loads(ready.read_text())
            master = topology.addresses["master"]
            where = {"bind_host": master, "prefix": topology.run_in, "port": MASTER_PORT}
            host = f"http://{master}:{info['port']}"
            with contextlib.ExitStack() as relay:
                if request.param == "relay":
                    hub = topology.addresses["hub"]
                    relay.enter_context(
                        _relay(
                            topology,
                            tmp_path,
                            f"{hub}:{MASTER_PORT}={master}:{MASTER_PORT}",
                            f"{hub}:{RELAYED_TARGET_PORT}={master}:{info['port']}",
                        )
                    )
                    where["reach_at"] = hub
                    host = f"http://{hub}:{RELAYED_TARGET_PORT}"
                yield SimpleNamespace(
                    topology=topology,
                    plat=SimpleNamespace(fixture=Path(info["fixture"])),
                    host=host,
                    where=where,
                    # 25 ms each way on every link but "plain": a round trip is at least 50.
                    least_round_trip_ms=0.0 if request.param == "plain" else 50.0,
                )
        finally:
            # Closing stdin asks the platform to stop what it started; a SIGTERM before it
            # has done so would leave its stubs and target running outside any namespace.
            proc.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(PLATFORM_TIMEOUT_S)
            stop(proc)


@contextlib.contextmanager
def _relay(topology, tmp_path, *pairs: str):
    """tests/support/delay_relay.py in the hub namespace until the block ends (stopped by PID)."""
    command = [
        sys.executable,
        "-m",
        "tests.support.delay_relay",
        "--delay-ms",
        RELAY_DELAY_MS,
        *pairs,
    ]
    proc = subprocess.Popen(
        [*topology.run_in("hub"), *command],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "relay.err").open("w"),
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "ready", (tmp_path / "relay.err").read_text()
        yield proc
    finally:
        stop(proc)


def _where(hosts) -> dict:
    return hosts.where


def test_a_run_across_three_hosts_is_valid_and_records_every_arrival(hosts, tmp_path):
    scenario = write_scenario(tmp_path, [("sustain", 4.0, 10.0)], lateness=LATENESS)
    run_dir = tmp_path / "run"
    result = run_distributed(
        hosts.plat, scenario, run_dir, 2, "--host", hosts.host, **_where(hosts)
    )
    assert result.returncode == 0, invalid_reasons(run_dir, result)
    record, samples = read_run(run_dir), read_samples(run_dir)
    assert record["offered"] == len(samples) == 40 and record["lost"] == []
    assert {int(s["worker"]) for s in samples} == {0, 1}
    start = record["start"]
    # The master measured the link and started far enough ahead for it.
    assert min(start["round_trip_ms"].values()) >= hosts.least_round_trip_ms, start
    for process in start["processes"].values():
        assert process["plan_ahead_ms"] > 0, start


def test_a_worker_cut_off_mid_run_is_detected_and_named(hosts, tmp_path):
    scenario = write_scenario(tmp_path, [("sustain", 10.0, 10.0)], lateness=LATENESS)
    run_dir = tmp_path / "run"
    where = _where(hosts)
    with start_distributed(hosts.plat, scenario, run_dir, 2, "--host", hosts.host, **where) as run:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while written(run_dir) < 10:
            assert time.monotonic() < deadline and run.master.poll() is None
            time.sleep(0.1)
        hosts.topology.cut_off("worker1")
        _, err = run.master.communicate(timeout=RUN_TIMEOUT_S)
    record = read_run(run_dir)
    assert run.master.returncode == 2, err[-1500:]
    [lost] = record["lost"]
    assert record["stopped"] == f"incomplete: load process {lost['slot']} ({lost['worker']}) lost"
    assert lost["missing"] > 0 and lost["missing_ranges"]
    assert all(a % 2 == lost["slot"] for a, _ in lost["missing_ranges"])
