"""A whole run over TLS, as against a deployment behind a proxy with its company's own CA.

The reference platform sits behind a real TLS front (tests/support/tls_front.py)
serving a certificate signed by a CA made for the test. Told of that CA by
SSL_CERT_FILE alone (as the issue that asked for this found the run refusing with
"start the platform"), every connection the kit makes trusts it: the seed, the
preflight, the load's reads and chat WebSockets, the follow-up of accepted work
and the /metrics probe. The chat's per-turn connections resume the TLS session;
told nothing, the run refuses in one line before any load; --insecure runs and
its report says so.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from engine.dataset import FOLLOWUPS, PROBES, SAMPLES
from engine.followups import PROCESSED
from engine.run_record import INSECURE_WARNING
from engine.trust import CA_FILE_ENV
from stack.generator_runs import (
    GENEROUS_LIMITS,
    PASSWORD,
    QUICK_STUB,
    RUN_TIMEOUT_S,
    read_run,
    read_samples,
    read_table,
    write_scenario,
)
from stack.processes import ROOT, free_port, stop
from stack.reference_servers import stub_server, target_server
from tests.support.certificates import make_certificates
from tests.support.counting_server import CountingServer, started
from tests.support.generator_env import invalid_reasons

pytestmark = [pytest.mark.system, pytest.mark.slow]

# Every workload, so every client of the kit speaks TLS: reads, chat, runs, search, uploads
# and deliveries (followed after the run), at a rate a busy machine serves.
MIX = {
    "api_read": 4,
    "chat_stream": 3,
    "agent_run": 1,
    "rag_query": 1,
    "ingest": 1,
    "trigger_fire": 1,
}


@dataclass
class Deployment:
    """The platform as its users reach it: through the front, and the CA that signed it."""

    tmp: Path
    front: CountingServer
    fixture: Path
    ca: Path


def _env(**trust: str) -> dict[str, str]:
    """This machine's environment, with no CA named but ``trust`` (the machine may name its
    own bundle in SSL_CERT_FILE or REQUESTS_CA_BUNDLE, which the test CA is not in)."""
    return {**os.environ, **dict.fromkeys(CA_FILE_ENV, ""), "LOAD_PASSWORD": PASSWORD, **trust}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory) -> Iterator[Deployment]:
    tmp = tmp_path_factory.mktemp("tls-platform")
    certs = make_certificates(tmp / "certificates")
    env = {**GENEROUS_LIMITS, "TARGET_ADMIN_PASSWORD": PASSWORD}
    with contextlib.ExitStack() as stack:
        embedder = stack.enter_context(stub_server(tmp, name="embed-stub"))
        model = stack.enter_context(stub_server(tmp, *QUICK_STUB, name="model-stub"))
        target = stack.enter_context(target_server(tmp, embedder.url, env=env))
        cert, key = map(str, certs.loopback)
        port = str(urlsplit(target.url).port)
        front = stack.enter_context(started("tests.support.tls_front", port, cert, key))
        front.url = front.url.replace("http://", "https://")
        fixture = tmp / "fixture.json"
        seed = subprocess.run(
            [
                *(sys.executable, "-m", "loadkit", "seed", "--api-url", front.url),
                *("--stub-url", model.url, "--documents", "3", "--fixture", str(fixture)),
            ],
            cwd=ROOT,
            env=_env(SSL_CERT_FILE=str(certs.ca)),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert seed.returncode == 0, seed.stderr
        yield Deployment(tmp, front, fixture, certs.ca)


def _run(deployment: Deployment, name: str, *extra: str, **trust: str):
    (deployment.tmp / name).mkdir()
    # TLS is under test here, not timing: a busy machine's late dispatch does not void the run.
    lateness = {"late_after_ms": 100, "max_late_fraction": 1.0}
    scenario = write_scenario(
        deployment.tmp / name, [("sustain", 4.0, 8.0)], workloads=MIX, lateness=lateness
    )
    run_dir = deployment.tmp / name / "run"
    result = subprocess.run(
        [
            *(sys.executable, "-m", "locust", "-f", "locustfile.py", "--headless"),
            *("--only-summary", "--scenario", str(scenario), "--fixture", str(deployment.fixture)),
            *("--run-dir", str(run_dir), *extra),
        ],
        cwd=ROOT,
        env=_env(**trust),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    return result, run_dir


def _last_reading(run_dir: Path, metric: str) -> float:
    rows = [r for r in read_table(run_dir, PROBES) if r["probe"].startswith("generator.")]
    return max(float(r["value"]) for r in rows if r["metric"] == metric)


def test_told_of_the_ca_by_ssl_cert_file_alone_every_connection_trusts_it(deployment):
    before = deployment.front.counts()
    metrics = f"{deployment.front.url}/metrics"
    result, run_dir = _run(
        deployment, "told", "--metrics-url", metrics, SSL_CERT_FILE=str(deployment.ca)
    )
    assert result.returncode in (0, 1), invalid_reasons(run_dir, result)
    samples = read_samples(run_dir)
    outcomes = Counter((s["workload"], s["outcome"]) for s in samples)
    # Every workload answered over TLS: nothing failed for want of trust.
    assert {o for (_, o) in outcomes} <= {"ok", "cancelled"}, outcomes
    assert {w for (w, _) in outcomes} == set(MIX), outcomes
    run = read_run(run_dir)
    assert run["tls_verified"] is True
    assert run["tls_trust"] == f"the CA file {deployment.ca} (SSL_CERT_FILE)"
    # The follow-up of accepted work asked over TLS too, and found it done.
    states = Counter(row["state"] for row in read_table(run_dir, FOLLOWUPS))
    assert states and set(states) == {PROCESSED}, states
    # The /metrics probe read the platform through the front.
    assert any(row["probe"] == "metrics" for row in read_table(run_dir, PROBES))
    # One full handshake in the load process (its sign-in); every other connection, each
    # chat turn's own among them, resumed that session.
    turns = sum(n for (w, _), n in outcomes.items() if w == "chat_stream")
    assert _last_reading(run_dir, "tls_handshakes") == 1
    assert _last_reading(run_dir, "tls_resumed") >= turns
    grown = deployment.front.counts()
    assert grown["resumed"] - before.get("resumed", 0) >= turns
    report = (run_dir / "report.md").read_text()
    assert f"the CA file {deployment.ca} (SSL_CERT_FILE)" in report
    assert INSECURE_WARNING not in report


def test_told_nothing_the_run_refuses_in_one_line_before_any_load(deployment):
    before = deployment.front.counts()
    result, run_dir = _run(deployment, "untold")
    assert result.returncode == 2, result.stderr[-2000:]
    ours = [line for line in result.stderr.splitlines() if line.startswith("agent-loadkit: ")]
    assert ours == [
        f"agent-loadkit: {deployment.front.url}: its TLS certificate is not trusted (unable to "
        "get local issuer certificate): give the CA certificate it is signed by with --ca-file "
        "(or SSL_CERT_FILE), or pass --insecure to test without verifying"
    ]
    assert not (run_dir / SAMPLES.name).exists()
    # The one handshake the check made, refused: nothing was asked of the platform.
    grown = deployment.front.counts()
    assert grown["refused"] - before.get("refused", 0) == 1
    assert grown.get("connections", 0) == before.get("connections", 0)


def test_insecure_runs_without_verifying_and_the_report_says_so(deployment):
    result, run_dir = _run(deployment, "insecure", "--insecure")
    assert result.returncode in (0, 1), invalid_reasons(run_dir, result)
    assert INSECURE_WARNING in result.stderr
    assert read_run(run_dir)["tls_verified"] is False
    report = (run_dir / "report.md").read_text()
    assert INSECURE_WARNING in report
    assert {s["outcome"] for s in read_samples(run_dir)} <= {"ok", "cancelled"}


def test_a_worker_told_nothing_trusts_the_ca_the_master_sends(deployment):
    """A worker on another machine has no CA file: the master sends the certificates."""
    name = "distributed"
    (deployment.tmp / name).mkdir()
    lateness = {"late_after_ms": 100, "max_late_fraction": 1.0}
    scenario = write_scenario(
        deployment.tmp / name,
        [("sustain", 3.0, 6.0)],
        workloads={"api_read": 1, "chat_stream": 1},
        lateness=lateness,
    )
    run_dir = deployment.tmp / name / "run"
    port = str(free_port())
    locust = (sys.executable, "-m", "locust", "-f", "locustfile.py")
    master = subprocess.Popen(
        [
            *locust,
            *("--headless", "--only-summary", "--master", "--expect-workers", "1"),
            *("--master-bind-host", "127.0.0.1", "--master-bind-port", port),
            *("--scenario", str(scenario), "--fixture", str(deployment.fixture)),
            *("--run-dir", str(run_dir)),
        ],
        cwd=ROOT,
        env=_env(SSL_CERT_FILE=str(deployment.ca)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    worker = subprocess.Popen(
        [*locust, "--worker", "--master-host", "127.0.0.1", "--master-port", port],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _, err = master.communicate(timeout=RUN_TIMEOUT_S)
        worker.wait(timeout=30)
    finally:
        stop(worker)
        stop(master)
    result = subprocess.CompletedProcess(master.args, master.returncode, "", err)
    assert result.returncode in (0, 1), invalid_reasons(run_dir, result)
    samples = read_samples(run_dir)
    assert samples and {s["outcome"] for s in samples} <= {"ok", "cancelled"}
    assert _last_reading(run_dir, "tls_handshakes") == 1
