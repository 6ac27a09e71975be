"""A real Prometheus scrapes a real distributed run's master, and saw every sample.

Debian's prometheus (``.ci/run`` installs it) runs on 127.0.0.1 with a config this
test writes (scrape every second) and its own storage in tmp_path. The run is the
generator tests' short one, master + 2 workers, with ``--prometheus``. Through
Prometheus's HTTP query API, at its last successful scrape of the master, the
Grafana dashboard's own queries (read from deploy/grafana/loadkit.json, so the two
cannot drift) must say what the run directory says: samples.csv's rows, run.json's
offered, the report's late count, nothing in flight. Around it: the linger serves the
final values and a signal cuts it short keeping the run's exit code, a port in use is
one line and exit 2, and a web-UI run the operator stopped is served to its last sample.
"""

import json
import math
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pandas as pd
import pytest
from prometheus_client.parser import text_string_to_metric_families

from reports.rundir import load_run
from stack.generator_runs import (
    RUN_TIMEOUT_S,
    load_env,
    locust_args,
    read_run,
    read_samples,
    run_distributed,
    write_scenario,
)
from stack.processes import ROOT, free_port, stop, wait_ready
from tests.support.generator_env import invalid_reasons, wait_for_rows, written

pytestmark = [pytest.mark.system, pytest.mark.slow]

PROMETHEUS = shutil.which("prometheus")
DASHBOARD = ROOT / "deploy" / "grafana" / "loadkit.json"
PHASES = [("ramp", 2.0, 8.0), ("sustain", 3.0, 16.0)]
LATENESS = {"late_after_ms": 250.0, "max_late_fraction": 0.05}
# Prometheus scrapes every second; the master serves its final values five scrapes long.
SCRAPE_S = 1
LINGER_S = 5
# What Grafana puts for the dashboard's variables: this run, every phase, a rate window of
# a few scrapes, every job.
VARIABLES = {"$__rate_interval": "5s", "$run": "{run}", "$phase": ".*", "$job": ".*"}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    return write_scenario(tmp_path_factory.mktemp("scenario"), PHASES, lateness=LATENESS)


@pytest.fixture
def prometheus(tmp_path):
    """(Prometheus's base URL, the port it scrapes the master at), running until the test ends."""
    if PROMETHEUS is None:
        pytest.skip("no prometheus binary (Debian's package; .ci/run installs it)")
    target, web = free_port(), free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        json.dumps(
            {
                "global": {"scrape_interval": f"{SCRAPE_S}s", "scrape_timeout": f"{SCRAPE_S}s"},
                "scrape_configs": [
                    {
                        "job_name": "loadkit",
                        "static_configs": [{"targets": [f"127.0.0.1:{target}"]}],
                    }
                ],
            }
        )
    )
    with (tmp_path / "prometheus.log").open("wb") as log:
        proc = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{web}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{web}"
    try:
        wait_ready(f"{url}/-/ready", proc)
        yield url, target
    finally:
        stop(proc)


def _api(url: str, path: str, **params) -> dict:
    query = urllib.parse.urlencode(params)
    with urllib.request.urlopen(f"{url}/api/v1/{path}?{query}", timeout=10) as resp:
        body = json.load(resp)
    assert body["status"] == "success", body
    return body["data"]


def _last_scrape_of_the_master(url: str) -> float:
    """When Prometheus last scraped the master successfully (``up`` was 1)."""
    series = _api(url, "query", query='up{job="loadkit"}[10m]')["result"]
    times = [float(t) for t, value in series[0]["values"] if value == "1"]
    assert times, "Prometheus never scraped the master"
    return max(times)


def _dashboard_queries(run_id: str) -> dict[str, list[str]]:
    """Each panel's title and its queries, with Grafana's variables filled in for this run."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    queries = {}
    for panel in panels:
        exprs = []
        for target in panel["targets"]:
            expr = target["expr"]
            for name, value in VARIABLES.items():
                expr = expr.replace(name, value.format(run=run_id))
            exprs.append(expr)
        queries[panel["title"]] = exprs
    return queries


def _value(url: str, expr: str, at: float) -> float:
    result = _api(url, "query", query=expr, time=f"{at:.3f}")["result"]
    assert len(result) == 1, (expr, result)
    return float(result[0]["value"][1])


def test_prometheus_saw_every_sample_and_every_offered_arrival(
    plat, scenario, tmp_path, prometheus
):
    url, port = prometheus
    run_dir = tmp_path / "run"
    serve = ("--prometheus", f"127.0.0.1:{port}")
    # The workers are given the master's address too (as the k8s operator's shared args
    # would): one that tried to serve would find the port taken and leave the run.
    result = run_distributed(
        plat,
        scenario,
        run_dir,
        2,
        *serve,
        "--prometheus-linger-s",
        str(LINGER_S),
        worker_extra=serve,
    )
    assert result.returncode == 0, invalid_reasons(run_dir, result)
    samples = pd.DataFrame(read_samples(run_dir))
    summary = json.loads((run_dir / "summary.json").read_text())
    record = read_run(run_dir)
    offered = record["offered"]
    assert record["workers"] == 2
    assert len(samples) == offered > 0

    at = _last_scrape_of_the_master(url)
    run_id = record["run_id"]
    queries = _dashboard_queries(run_id)
    # Every query of the dashboard is one Prometheus answers.
    for title, exprs in queries.items():
        for expr in exprs:
            assert _api(url, "query", query=expr, time=f"{at:.3f}")["resultType"] == "vector", title
    assert _value(url, queries["Samples recorded"][0], at) == len(samples)
    assert _value(url, queries["Arrivals offered"][0], at) == offered
    assert _value(url, queries["In flight"][0], at) == 0
    assert _value(url, queries["Late dispatches"][0], at) == summary["validity"]["late"]

    # The histogram is over successes, and its p95 falls in the bucket of the report's
    # nearest-rank p95 (every latency limit is an edge, so a limit is judged the same).
    with load_run(run_dir) as loaded:
        timed = loaded.samples.frame("SELECT workload, latency_ms FROM samples WHERE timed")
    count = f'sum(loadkit_latency_seconds_count{{run_id="{run_id}"}})'
    assert _value(url, count, at) == len(timed)
    p95 = queries["p95 latency by workload over the phase so far"][0]
    for row in _api(url, "query", query=p95, time=f"{at:.3f}")["result"]:
        workload = row["metric"]["workload"]
        estimate = float(row["value"][1])
        latencies = sorted(timed.loc[timed["workload"] == workload, "latency_ms"] / 1000)
        if not latencies:
            assert math.isnan(estimate)
            continue
        nearest_rank = latencies[math.ceil(0.95 * len(latencies)) - 1]
        edges = _edges(url, run_id, workload, at)
        upper = next(e for e in edges if nearest_rank <= e)
        lower = max([0.0, *(e for e in edges if e < upper)])
        assert lower <= estimate <= upper, (workload, nearest_rank, estimate)


def _edges(url: str, run_id: str, workload: str, at: float) -> list[float]:
    expr = f'loadkit_latency_seconds_bucket{{run_id="{run_id}", workload="{workload}"}}'
    result = _api(url, "query", query=expr, time=f"{at:.3f}")["result"]
    return sorted({float(r["metric"]["le"]) for r in result} - {math.inf})


def _start_local(plat, scenario, run_dir, *extra) -> subprocess.Popen:
    command = [sys.executable, *locust_args(plat, scenario, run_dir, "--headless", *extra)]
    return subprocess.Popen(
        command, cwd=ROOT, env=load_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def test_a_signal_cuts_the_linger_short_and_keeps_the_runs_exit_code(plat, scenario, tmp_path):
    port = free_port()
    run_dir = tmp_path / "run"
    proc = _start_local(plat, scenario, run_dir, "--prometheus", str(port))
    try:
        for line in proc.stderr:
            if b"serving the final metrics for 15 s more" in line:
                break
        else:
            pytest.fail(f"exited {proc.wait()} without lingering")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            served = resp.read().decode()
        recorded = sum(
            sample.value
            for family in text_string_to_metric_families(served)
            for sample in family.samples
            if sample.name == "loadkit_samples_total"
        )
        assert recorded == written(run_dir) > 0
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=RUN_TIMEOUT_S)
        assert time.monotonic() - signalled < 10
    finally:
        stop(proc)
    assert code == json.loads((run_dir / "summary.json").read_text())["exit_code"]


def test_a_port_in_use_is_one_line_and_exit_2_before_any_load(plat, scenario, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _start_local(plat, scenario, tmp_path / "run", "--prometheus", f"127.0.0.1:{port}")
        _, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    ours = [line for line in err.decode().splitlines() if line.startswith("agent-loadkit: ")]
    assert proc.returncode == 2
    assert len(ours) == 1 and ours[0].startswith("agent-loadkit: --prometheus: "), err[-1500:]
    assert not (tmp_path / "run").exists()


def _scraped(url: str) -> dict[str, float]:
    """Each loadkit_* sample name summed over its labels, from one scrape."""
    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode()
    sums: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            sums[sample.name] = sums.get(sample.name, 0.0) + sample.value
    return sums


def test_a_web_ui_run_stopped_by_the_operator_is_served_to_its_last_sample(
    plat, scenario, tmp_path
):
    web, metrics = free_port(), free_port()
    run_dir = tmp_path / "run"
    command = [sys.executable, *locust_args(plat, scenario, run_dir)]
    command += ["--web-host", "127.0.0.1", "--web-port", str(web), "--prometheus", str(metrics)]
    proc = subprocess.Popen(
        command, cwd=ROOT, env=load_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    base = f"http://127.0.0.1:{web}"
    try:
        wait_ready(base + "/arrival-rate", proc)
        before = _scraped(f"http://127.0.0.1:{metrics}/metrics")
        assert "loadkit_samples_total" not in before  # no run yet, no series
        form = urllib.parse.urlencode({"rate": "10", "host": plat.target.url}).encode()
        urllib.request.urlopen(urllib.request.Request(base + "/swarm", data=form), timeout=30)
        wait_for_rows(run_dir, 20, proc)
        urllib.request.urlopen(urllib.request.Request(base + "/stop", data=b""), timeout=30)
        # The report is written after the metrics take run.json's offered.
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while not (run_dir / "summary.json").exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        served = _scraped(f"http://127.0.0.1:{metrics}/metrics")
    finally:
        stop(proc)
    record = read_run(run_dir)
    assert record["stopped"] == "stopped by the operator"
    assert served["loadkit_samples_total"] == written(run_dir)
    assert served["loadkit_offered_total"] == record["offered"]
    assert served["loadkit_in_flight"] == 0
