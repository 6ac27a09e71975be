"""Preflight passes a working deployment and refuses each broken one with one line and the fix.

One real stub and target, seeded once; each broken case is the fixture
pointing at something that is not right (a dead API, a draft agent, an empty
collection, a model the platform cannot reach, a model stub injecting faults),
never a mocked answer.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from engine.seam import PreflightError, PreflightResult, SeedSetup
from inputs.fixture import Fixture
from platforms.reference.settings import DEFAULT_ADMIN_EMAIL, DEFAULT_ADMIN_PASSWORD
from stack.processes import ROOT, free_port
from stack.reference_servers import FAST_STUB, stub_server, target_server
from stub import app as stub_app
from stub.config import StubConfig
from stub.faults import FaultPlan
from tests.support.reference import make_agent, signed_in
from workloads.agenticos.client import AgenticOSClient
from workloads.agenticos.platform import PLATFORM as AGENTICOS
from workloads.agenticos.preflight import INJECTED_FAULT_MARKER, PROBE_ATTEMPTS
from workloads.preflight import ALWAYS, preflight
from workloads.seed import seeded

# Seconds the CLI may take: one cold interpreter plus one run against the fast stub.
CLI_TIMEOUT_S = 60


@dataclasses.dataclass
class Deployment:
    fixture: Fixture
    client: AgenticOSClient
    stub_url: str


def run_preflight(
    fixture: Fixture, email: str, password: str, offered: frozenset[str] = ALWAYS
) -> PreflightResult:
    """The kit's preflight of the fixture's AgenticOS deployment."""
    return preflight(AGENTICOS, fixture, email, password, offered)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory) -> Deployment:
    logs = tmp_path_factory.mktemp("preflight")
    with stub_server(logs) as stub, target_server(logs, stub.url) as target:
        setup = SeedSetup(target.url, stub.url, 4, DEFAULT_ADMIN_EMAIL, DEFAULT_ADMIN_PASSWORD, 0)
        fixture = seeded(AGENTICOS, setup, None)
        client = signed_in(target.url)
        client.org_id = AGENTICOS.seeded_from(fixture).org_id
        yield Deployment(fixture, client, stub.url)
        client.close()


def refused(fixture: Fixture, password: str = DEFAULT_ADMIN_PASSWORD) -> str:
    """Preflight's refusal for ``fixture``, checked to be one line."""
    with pytest.raises(PreflightError) as caught:
        run_preflight(fixture, DEFAULT_ADMIN_EMAIL, password)
    message = str(caught.value)
    assert "\n" not in message
    return message


def changed(fixture: Fixture, **fields: object) -> Fixture:
    """The fixture with fields of its AgenticOS part (or its api_url, stub_url) changed."""
    common = {k: fields.pop(k) for k in ("api_url", "stub_url") if k in fields}
    return dataclasses.replace(fixture, seeded={**fixture.seeded, **fields}, **common)


@pytest.mark.system
def test_a_seeded_deployment_passes(deployment):
    result = run_preflight(deployment.fixture, DEFAULT_ADMIN_EMAIL, DEFAULT_ADMIN_PASSWORD)
    assert result.ready == ("trigger_fire",) and not result.skipped
    search, run = result.seen
    assert search.startswith("search found ") and int(search.split()[-1]) >= 1
    run_id = run.split()[1]
    runs = {r["id"]: r for r in deployment.client.get("/runs", limit=100)["items"]}
    assert runs[run_id]["status"] == "completed"


@pytest.mark.system
def test_an_api_that_does_not_answer(deployment):
    fixture = changed(deployment.fixture, api_url=f"http://127.0.0.1:{free_port()}")
    message = refused(fixture)
    assert "does not answer" in message and "make target" in message


@pytest.mark.system
def test_a_wrong_password(deployment):
    message = refused(deployment.fixture, password="wrong")
    assert "HTTP 401" in message and "LOAD_PASSWORD" in message


@pytest.mark.system
def test_an_organisation_the_user_is_not_in(deployment):
    fixture = changed(deployment.fixture, org_id="00000000-0000-0000-0000-000000000000")
    assert "make seed" in refused(fixture)


@pytest.mark.system
def test_an_unknown_or_unpublished_agent(deployment):
    _, draft = make_agent(deployment.client, deployment.stub_url + "/v1", publish=False)
    message = refused(changed(deployment.fixture, agent_id=draft))
    assert "not published" in message and "make seed" in message
    gone = changed(deployment.fixture, agent_id="00000000-0000-0000-0000-000000000000")
    assert "does not exist" in refused(gone)


@pytest.mark.system
def test_an_empty_or_missing_collection(deployment):
    empty = deployment.client.post("/kb", {"name": "empty for preflight", "scope": "org"})
    fixture = changed(deployment.fixture, collection_name=empty["collection_name"])
    message = refused(fixture)
    assert "is empty" in message and "make seed" in message
    missing = changed(deployment.fixture, collection_name="no_such_collection")
    assert "does not exist" in refused(missing)


@pytest.mark.system
def test_a_model_the_platform_cannot_reach(deployment):
    dead = f"http://127.0.0.1:{free_port()}"
    _, agent_id = make_agent(deployment.client, dead + "/v1")
    fixture = changed(deployment.fixture, agent_id=agent_id, stub_url=dead)
    message = refused(fixture)
    assert "agent run failed (HTTP 500" in message and "make stub" in message


@pytest.mark.system
def test_a_missing_trigger_is_a_skip_not_a_refusal(deployment):
    none = changed(deployment.fixture, trigger_id=None)
    result = run_preflight(none, DEFAULT_ADMIN_EMAIL, DEFAULT_ADMIN_PASSWORD)
    assert not result.ready and "make seed" in result.skipped["trigger_fire"]
    deleted = changed(deployment.fixture, trigger_id="00000000-0000-0000-0000-000000000000")
    result = run_preflight(deleted, DEFAULT_ADMIN_EMAIL, DEFAULT_ADMIN_PASSWORD)
    assert not result.ready and "no longer exists" in result.skipped["trigger_fire"]


def test_a_run_checks_only_the_workloads_it_offers(deployment):
    """A reads-only run neither runs the agent nor searches nor fires the trigger: a model
    the platform cannot reach, an empty collection and a missing trigger are all fine."""
    dead = f"http://127.0.0.1:{free_port()}"
    _, agent_id = make_agent(deployment.client, dead + "/v1")
    broken = changed(
        deployment.fixture,
        agent_id=agent_id,
        stub_url=dead,
        collection_name="no_such_collection",
        trigger_id=None,
    )
    reads = frozenset({"api_read"})
    result = run_preflight(broken, DEFAULT_ADMIN_EMAIL, DEFAULT_ADMIN_PASSWORD, reads)
    assert (result.seen, result.ready, result.skipped) == ((), (), {})
    assert result.summary().endswith(
        "not checked, not offered: agent_run, chat_stream, ingest, rag_query, trigger_fire"
    )
    # What it offers is still checked: the same fixture refuses a run that offers agent_run.
    with pytest.raises(PreflightError, match="agent run failed"):
        run_preflight(broken, DEFAULT_ADMIN_EMAIL, DEFAULT_ADMIN_PASSWORD, reads | {"agent_run"})


def run_cli(fixture_path, password: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workloads.preflight", "--fixture", str(fixture_path)],
        cwd=ROOT,
        env={**os.environ, "LOAD_PASSWORD": password},
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )


@pytest.mark.system
def test_the_command_line_exits_zero_or_one_with_one_line(deployment, tmp_path):
    path = tmp_path / "fixture.json"
    deployment.fixture.save(path)
    passed = run_cli(path, DEFAULT_ADMIN_PASSWORD)
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.startswith("preflight: ok") and "trigger_fire ready" in passed.stdout
    failed = run_cli(path, "wrong")
    assert failed.returncode == 1
    assert len(failed.stderr.strip().splitlines()) == 1 and "LOAD_PASSWORD" in failed.stderr
    missing = run_cli(tmp_path / "absent.json", DEFAULT_ADMIN_PASSWORD)
    assert missing.returncode == 1 and "make seed" in missing.stderr


def _seed_whose_first_requests_fault(faults: int, **rates: float) -> str:
    """A stub seed whose first ``faults`` model requests are injected faults and the next is not."""
    for number in range(10_000):
        plan = FaultPlan(StubConfig(seed=number, **rates))
        drawn = [plan.next_fault() for _ in range(faults + 1)]
        if all(drawn[:faults]) and drawn[faults] is None:
            return str(number)
    raise AssertionError(f"no seed faults {faults} times first at {rates}")


def test_the_stub_marks_every_fault_it_injects():
    assert INJECTED_FAULT_MARKER in stub_app.ERROR_MESSAGE
    assert INJECTED_FAULT_MARKER in stub_app.RATE_LIMIT_MESSAGE


@pytest.mark.system
def test_injected_faults_do_not_refuse_a_fault_injection_run(deployment, tmp_path):
    # The agent run's first two model calls draw injected 500s; preflight tries again.
    faulted = _seed_whose_first_requests_fault(2, error_rate=0.5)
    with stub_server(tmp_path, *FAST_STUB, "--error-rate", "0.5", "--seed", faulted) as faulty:
        _, agent_id = make_agent(deployment.client, faulty.url + "/v1")
        fixture = changed(deployment.fixture, agent_id=agent_id, stub_url=faulty.url)
        result = run_preflight(fixture, DEFAULT_ADMIN_EMAIL, DEFAULT_ADMIN_PASSWORD)
    assert any(seen.startswith("run ") and " completed in " in seen for seen in result.seen)


@pytest.mark.system
def test_a_stub_that_faults_every_time_is_named_as_the_cause(deployment, tmp_path):
    with stub_server(tmp_path, *FAST_STUB, "--error-rate", "1") as faulty:
        _, agent_id = make_agent(deployment.client, faulty.url + "/v1")
        fixture = changed(deployment.fixture, agent_id=agent_id, stub_url=faulty.url)
        message = refused(fixture)
    assert f"all {PROBE_ATTEMPTS} attempts" in message and "injected" in message
    assert "--seed" in message and "make stub" not in message


@pytest.mark.system
def test_check_platform_leaves_the_fixtures_trigger_alone(deployment):
    """``loadkit check-platform --api-url`` seeds as a check: AgenticOS's seed recreates its
    trigger, and a check's must not be the one a run's fixture names (found on the real
    AgenticOS: the run after a check skipped trigger_fire, its trigger deleted)."""
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadkit",
            "check-platform",
            "agenticos",
            "--api-url",
            deployment.fixture.api_url,
            "--stub-url",
            deployment.stub_url,
        ],
        cwd=ROOT,
        env={**os.environ, "LOAD_PASSWORD": DEFAULT_ADMIN_PASSWORD},
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    result = run_preflight(deployment.fixture, DEFAULT_ADMIN_EMAIL, DEFAULT_ADMIN_PASSWORD)
    assert result.ready == ("trigger_fire",) and not result.skipped
