"""Probes read real processes and endpoints, and name what they could not read."""

from __future__ import annotations

import subprocess
import sys
import time

import gevent
import psycopg
import pytest
import requests

from engine.dataset import PROBES
from probes import ProbeOptions, start_probes
from stack.generator_runs import read_table
from stack.postgres import throwaway_postgres
from stack.processes import free_port, running, stop

pytestmark = pytest.mark.system

# A bounded CPU burner: it stops by itself even if the test dies.
BURN = "import time\nend = time.time() + 30\nwhile time.time() < end: pass\n"
EXPORTER = (
    "import sys, time\n"
    "from prometheus_client import Counter, Gauge, start_http_server\n"
    "Gauge('pool_checked_out', 'x').set(7)\n"
    "Counter('http_requests', 'x', ['status']).labels('200').inc(3)\n"
    "start_http_server(int(sys.argv[1]), addr='127.0.0.1')\n"
    "time.sleep(60)\n"
)


# The run the readings are written for (the table's metadata names it).
RUN = "probe-test"


def rows_of(path, probe):
    """The readings of ``probe`` in the probes table at ``path``, as its CSV spells them."""
    return [r for r in read_table(path.parent, PROBES) if r["probe"] == probe]


def wait_for_rows(path, probe, count, timeout=20.0):
    """Yield to the sampler greenlet until ``count`` readings of ``probe`` exist."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = rows_of(path, probe) if path.exists() else []
        if len({r["t_s"] for r in rows}) >= count:
            return rows
        gevent.sleep(0.05)
    raise AssertionError(f"fewer than {count} {probe} readings after {timeout} s")


@pytest.fixture
def busy_process():
    proc = subprocess.Popen([sys.executable, "-c", BURN])
    yield proc
    stop(proc)


def test_api_probe_measures_cpu_over_each_interval_and_memory(tmp_path, busy_process):
    path = tmp_path / PROBES.name
    run = start_probes(
        ProbeOptions(api_pid=busy_process.pid), path, "probe-test", time.time(), interval_s=0.5
    )
    wait_for_rows(path, "api", 4)
    result = run.stop()
    assert result.taken == ["machine", "api"]
    assert set(result.missing) == {"db", "metrics", "stub"}
    assert result.missing["db"] == "--database-url not given"
    rows = rows_of(path, "api")
    # The first reading sets the baseline; stop()'s last may come a moment after a tick.
    cpu = [float(r["value"]) for r in rows if r["metric"] == "cpu_percent"][1:-1]
    # A busy loop on a shared 2-core machine gets well over a fifth of a core.
    assert cpu and min(cpu) > 20
    assert all(float(r["value"]) > 0 for r in rows if r["metric"] == "rss_bytes")
    assert all(float(r["value"]) > 0 for r in rows if r["metric"] == "private_dirty_bytes")
    # Its wait for a CPU, from schedstat: never negative, and no more than one core's worth
    # per runnable thread (the busy loop is one).
    waits = [float(r["value"]) for r in rows if r["metric"] == "cpu_wait_percent"][1:]
    assert waits and all(0 <= w <= 100 * 1.05 for w in waits)
    # The machine as a whole was at least as busy as the loop, and has a load average.
    machine = rows_of(path, "machine")
    busy = [float(r["value"]) for r in machine if r["metric"] == "cpu_busy_cores"][1:]
    assert busy and max(busy) >= min(cpu) / 100
    assert all(float(r["value"]) >= 0 for r in machine if r["metric"] == "load_1m")


def test_prometheus_probe_keeps_every_gauge_and_counter_with_labels(tmp_path):
    port = free_port()
    with running(["-c", EXPORTER, str(port)], "/metrics", port, tmp_path / "exp.log") as exp:
        path = tmp_path / PROBES.name
        options = ProbeOptions(metrics_url=exp.url + "/metrics")
        run = start_probes(options, path, RUN, time.time(), interval_s=0.5)
        rows = wait_for_rows(path, "metrics", 2)
        result = run.stop()
    values = {r["metric"]: float(r["value"]) for r in rows}
    assert values["pool_checked_out"] == 7
    assert values['http_requests_total{status="200"}'] == 3
    assert result.taken == ["machine", "metrics"]


def test_probes_that_cannot_answer_are_named_and_write_no_rows(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    options = ProbeOptions(
        api_pid=gone.pid,
        database_url="postgresql://u:secret@127.0.0.1:1/db",
        metrics_url=f"http://127.0.0.1:{free_port()}/metrics",
        stub_url=f"http://127.0.0.1:{free_port()}",
    )
    path = tmp_path / PROBES.name
    run = start_probes(options, path, RUN, time.time(), interval_s=0.2)
    result = run.stop()  # stop() always takes one last reading, so each probe was tried
    # The machine's own probe needs no option and always answers.
    assert result.taken == ["machine"]
    assert result.missing["api"].startswith("--api-pid: NoSuchProcess")
    assert result.missing["db"].startswith("--database-url: ")
    assert "secret" not in result.missing["db"]
    assert result.missing["metrics"].startswith("never answered: ConnectionError")
    assert result.missing["stub"].startswith("never answered: ConnectionError")
    assert rows_of(path, "api") == rows_of(path, "metrics") == []


def test_stub_probe_reports_the_runs_own_numbers(tmp_path):
    """The stub counts across runs; the probe resets it first, so what earlier runs sent
    to it is not in this run's figures, and what this run sent is."""
    port = free_port()
    args = ["-m", "stub", "--port", str(port), "--first-token-ms", "0", "--tokens", "2"]
    body = {"model": "stub", "messages": [{"role": "user", "content": "hi"}]}
    with running(args, "/health", port, tmp_path / "stub.log") as stub:
        for _ in range(3):  # an earlier run's
            assert requests.post(stub.url + "/v1/chat/completions", json=body, timeout=10).ok
        path = tmp_path / PROBES.name
        run = start_probes(
            ProbeOptions(stub_url=stub.url), path, "probe-test", time.time(), interval_s=0.5
        )
        first = wait_for_rows(path, "stub", 1)
        assert requests.post(stub.url + "/v1/chat/completions", json=body, timeout=10).ok
        result = run.stop()
    chat = "requests./v1/chat/completions"
    at_start = {r["metric"]: float(r["value"]) for r in first}
    assert at_start[chat] == 0 and at_start["max_in_flight"] == 0
    final = {r["metric"]: float(r["value"]) for r in rows_of(path, "stub")}
    assert final[chat] == 1 and final["max_in_flight"] == 1
    assert "lateness.first_token.p99_ms" in final
    assert result.taken == ["machine", "stub"]


def test_db_probe_counts_connections_to_the_database(tmp_path):
    with throwaway_postgres(tmp_path) as url, psycopg.connect(url) as held:
        held.execute("SELECT 1")
        path = tmp_path / PROBES.name
        run = start_probes(
            ProbeOptions(database_url=url), path, "probe-test", time.time(), interval_s=0.5
        )
        rows = wait_for_rows(path, "db", 1)
        result = run.stop()
    values = {r["metric"]: float(r["value"]) for r in rows}
    # The test's own idle connection is counted; the probe's is left out.
    assert values["connections_total"] >= 1
    assert values["connections_active"] == 0
    assert result.taken == ["machine", "db"]
