"""The seeder builds the fixture through the API, idempotently, and refuses with one line.

``python -m workloads.seed --platform agenticos`` runs as the operator would run it, against a real
stub and target; a second run must reuse everything but the trigger, which it
recreates so the derived secret is the one in force.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from inputs.fixture import Fixture, load_fixture
from platforms.reference.ingest import WIDTH_MISMATCH
from platforms.reference.settings import DEFAULT_ADMIN_PASSWORD
from stack.processes import ROOT, Server, free_port, running, stop
from stack.reference_servers import RELAXED_LIMITS, TARGET_HEALTH, stub_server, target_server
from tests.support.reference import signed_in
from workloads.agenticos.platform import PLATFORM as AGENTICOS
from workloads.agenticos.seed import (
    AGENT_NAME,
    KB_NAME,
    PROFILE_LABEL,
    TRIGGER_NAME,
    stub_base_url,
)
from workloads.agenticos.tool import CODE_EXECUTION
from workloads.setup_client import APIError

pytestmark = pytest.mark.system

DOCUMENTS = 6
# Seconds a seeding run may take here: six tiny documents index in well under one.
SEED_TIMEOUT_S = 120


@dataclass
class Seeded:
    stub: Server
    target: Server
    database_url: str
    first: Fixture
    second: Fixture
    second_path: Path
    logs: Path


def run_seed(*args: str, password: str | None = DEFAULT_ADMIN_PASSWORD):
    """``python -m workloads.seed --platform agenticos`` with LOAD_PASSWORD as ``password``
    (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != "LOAD_PASSWORD"}
    if password is not None:
        env["LOAD_PASSWORD"] = password
    return subprocess.run(
        [sys.executable, "-m", "workloads.seed", "--platform", "agenticos", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=SEED_TIMEOUT_S,
    )


def seed_args(stub_url: str, api_url: str, fixture: Path, documents: int = DOCUMENTS) -> list[str]:
    return [
        "--api-url", api_url,
        "--stub-url", stub_url,
        "--documents", str(documents),
        "--fixture", str(fixture),
    ]  # fmt: skip


def one_line_refusal(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 1, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> Seeded:
    logs = tmp_path_factory.mktemp("seed")
    database_url = f"sqlite:///{logs / 'target.sqlite3'}"
    with (
        stub_server(logs) as stub,
        target_server(logs, stub.url, database_url=database_url) as target,
    ):
        fixtures = []
        for name in ("first.json", "second.json"):
            done = run_seed(*seed_args(stub.url, target.url, logs / name))
            assert done.returncode == 0, done.stderr
            fixtures.append(load_fixture(logs / name))
        yield Seeded(stub, target, database_url, *fixtures, logs / "second.json", logs)


def test_seeding_twice_gives_the_same_fixture_and_one_trigger(seeded):
    first, second = asdict(seeded.first), asdict(seeded.second)
    assert first["seeded"].pop("trigger_id") and second["seeded"].pop("trigger_id")
    assert first == second
    own = AGENTICOS.seeded_from(seeded.second)
    assert own.documents == DOCUMENTS
    assert seeded.second.api_url == seeded.target.url
    assert seeded.second.stub_url == seeded.stub.url
    with signed_in(seeded.target.url) as client:
        client.org_id = own.org_id
        agent = client.get(f"/agents/{own.agent_id}")
        triggers = [
            t
            for t in client.list_all(f"/agents/{own.agent_id}/triggers")
            if t["name"] == TRIGGER_NAME
        ]
        collection = own.collection_name
        docs = list(client.list_all("/rag/documents", collection_name=collection))
        info = client.get(f"/rag/collections/{collection}/info")
    assert agent["status"] == "published"
    assert [t["id"] for t in triggers] == [own.trigger_id]
    assert len(docs) == DOCUMENTS, "a second run must not upload again"
    assert info["total_vectors"] >= DOCUMENTS


def test_the_agent_is_read_whole_and_its_name_taken_once(seeded):
    """AgenticOS's agent list carries no spec and a name's handle is unique: the reference
    platform shapes both so, and the seed reads the agent whole for its tool."""
    own = AGENTICOS.seeded_from(seeded.second)
    with signed_in(seeded.target.url) as client:
        client.org_id = own.org_id
        spec = client.get(f"/agents/{own.agent_id}")["draft_spec"]
        listed = next(a for a in client.list_all("/agents") if a["id"] == own.agent_id)
        with pytest.raises(APIError) as taken:
            client.post("/agents", {"spec": {**spec, "name": AGENT_NAME.upper()}})
    assert [c["id"] for c in spec["capabilities"]] == [CODE_EXECUTION]
    assert "spec" not in listed and listed["name"] == AGENT_NAME
    assert taken.value.status == 409


def test_an_agent_of_the_name_without_the_tool_is_refused_with_the_fix(tmp_path):
    with stub_server(tmp_path) as stub, target_server(tmp_path, stub.url) as target:
        stub_v1 = stub_base_url(stub.url)
        with signed_in(target.url) as client:
            client.org_id = client.get("/orgs")["items"][0]["id"]
            profile = client.post(
                "/providers/model-profiles",
                {"label": PROFILE_LABEL, "provider": "openai", "model": "m", "base_url": stub_v1},
            )
            client.post(
                "/agents",
                {"spec": {"name": AGENT_NAME, "model_profile_id": profile["id"]}},
            )
        done = run_seed(*seed_args(stub.url, target.url, tmp_path / "f.json"))
    line = one_line_refusal(done)
    assert f"does not bind capability {CODE_EXECUTION}" in line
    assert "delete that agent in the platform, then run make seed" in line
    assert not (tmp_path / "f.json").exists()


def test_the_fixture_file_holds_no_credential(seeded):
    text = seeded.second_path.read_text()
    assert DEFAULT_ADMIN_PASSWORD not in text
    assert "token" not in text and "secret" not in text
    # ``module`` is written only for a platform named by its module (--platform-module).
    assert set(json.loads(text)) == set(asdict(seeded.second)) - {"module"}
    assert stat.S_IMODE(seeded.second_path.stat().st_mode) == 0o600


def test_a_profile_pointing_elsewhere_is_refused_with_the_fix(seeded, tmp_path):
    elsewhere = f"http://127.0.0.1:{free_port()}"
    done = run_seed(*seed_args(elsewhere, seeded.target.url, tmp_path / "f.json"))
    line = one_line_refusal(done)
    assert f"points at {seeded.stub.url}/v1" in line
    assert f"--stub-url {seeded.stub.url}" in line
    assert not (tmp_path / "f.json").exists()


def test_a_wrong_or_missing_password_is_refused(seeded, tmp_path):
    args = seed_args(seeded.stub.url, seeded.target.url, tmp_path / "f.json")
    assert "LOAD_PASSWORD" in one_line_refusal(run_seed(*args, password="wrong"))
    assert "LOAD_PASSWORD: not set" in one_line_refusal(run_seed(*args, password=None))


def test_an_unreachable_api_is_refused(seeded, tmp_path):
    dead = f"http://127.0.0.1:{free_port()}"
    line = one_line_refusal(run_seed(*seed_args(seeded.stub.url, dead, tmp_path / "f.json")))
    assert "does not answer" in line and "make target" in line


def test_an_api_that_never_answers_is_waited_for_then_refused(tmp_path):
    dead = f"http://127.0.0.1:{free_port()}"
    args = [*seed_args(dead, dead, tmp_path / "f.json"), "--wait", "1.5"]
    started = time.monotonic()
    line = one_line_refusal(run_seed(*args))
    assert time.monotonic() - started >= 1.5
    assert "does not answer after 1.5 s" in line and "make target" in line
    assert not (tmp_path / "f.json").exists()


def test_an_api_that_starts_listening_late_is_waited_for(seeded, tmp_path):
    """A platform container that has started is not yet listening: the seed keeps asking."""
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    env = {**os.environ, "LOAD_PASSWORD": DEFAULT_ADMIN_PASSWORD}
    args = [*seed_args(seeded.stub.url, api, tmp_path / "f.json"), "--wait", "120"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "workloads.seed", "--platform", "agenticos", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Its first answer was a refused connection: only now does the platform start.
        assert proc.stdout.readline().startswith(
            f"seed: waiting up to 120 s for agenticos at {api}"
        )
        target = ["-m", "platforms.reference", "--port", str(port)]
        target += ["--database-url", f"sqlite:///{tmp_path / 'late.sqlite3'}"]
        late_env = {**RELAXED_LIMITS, "EMBEDDING_URL": seeded.stub.url}
        with running(target, TARGET_HEALTH, port, tmp_path / "late.log", env=late_env):
            _, err = proc.communicate(timeout=SEED_TIMEOUT_S)
    finally:
        stop(proc)
    assert proc.returncode == 0, err
    assert load_fixture(tmp_path / "f.json").api_url == api


def test_a_short_index_is_refused_with_numbers(seeded, tmp_path):
    """A target whose embedder is down accepts uploads that then fail to index: the seed
    follows its own uploads by id (not the collection's vector count, which the earlier
    seeds' documents already fill) and refuses in the platform's words."""
    own = AGENTICOS.seeded_from(seeded.second)
    collection = own.collection_name
    with signed_in(seeded.target.url) as client:
        client.org_id = own.org_id
        # What a load run leaves: documents of its own, indexed, in the same collection.
        for k in range(3):
            client.upload(collection, f"load-{k}.txt", f"uploaded by a load run {k}".encode())
        deadline = time.monotonic() + SEED_TIMEOUT_S
        while client.get(f"/rag/collections/{collection}/info")["total_vectors"] < DOCUMENTS + 3:
            assert time.monotonic() < deadline, "the load run's uploads were not indexed"
            time.sleep(0.1)
    dead_embedder = f"http://127.0.0.1:{free_port()}"
    with target_server(
        seeded.logs, dead_embedder, database_url=seeded.database_url, name="no_embedder"
    ) as target:
        done = run_seed(*seed_args(seeded.stub.url, target.url, tmp_path / "f.json", DOCUMENTS + 3))
        with signed_in(target.url) as client:
            client.org_id = own.org_id
            info = client.get(f"/rag/collections/{collection}/info")
            failed = [
                d
                for d in client.list_all("/rag/documents", collection_name=collection)
                if d["status"] == "error"
            ]
    line = one_line_refusal(done)
    assert info["total_vectors"] >= DOCUMENTS + 3, "the vector count would have said success"
    assert "of the 3 documents this seed uploaded, 3 error" in line
    assert f"the platform says: {failed[0]['error_message']}" in line
    assert "embedder" in line and "as the collection's" in line
    assert not (tmp_path / "f.json").exists()


def test_a_width_mismatch_is_named_with_the_width_wanted(tmp_path):
    """The collection was made at one width and the stub now answers another (restarted with
    --embedding-dim): every upload fails with AgenticOS's words, which do not name the width,
    and the seed names it by asking the stub its width for the collection's model."""
    database_url = f"sqlite:///{tmp_path / 'width.sqlite3'}"
    with (
        stub_server(tmp_path, name="wide_stub") as wide,
        target_server(tmp_path, wide.url, database_url=database_url, name="wide") as target,
        signed_in(target.url) as client,
    ):
        kb = client.post("/kb", {"name": KB_NAME, "scope": "org"})
    with (
        stub_server(tmp_path, "--embedding-dim", "32", name="narrow_stub") as narrow,
        target_server(tmp_path, narrow.url, database_url=database_url, name="narrow") as target,
    ):
        done = run_seed(*seed_args(narrow.url, target.url, tmp_path / "f.json", 2))
    line = one_line_refusal(done)
    assert "of the 2 documents this seed uploaded, 2 error" in line
    assert f"the platform says: {WIDTH_MISMATCH}" in line
    assert (
        f"the stub answers {kb['embedding_model']} with vectors 32 wide but collection "
        f"{kb['collection_name']!r} holds {kb['embedding_dim']}"
    ) in line
    assert f"--embedding-dim {kb['embedding_dim']}" in line and "worker runs" not in line


def test_a_document_stuck_in_processing_does_not_block_a_second_seed(seeded, tmp_path):
    """A platform whose embedder never answers leaves an upload ``processing``; the next
    seed uploads it again instead of waiting on it, and names it."""
    stuck = f"loadkit-doc-{DOCUMENTS:04d}.txt"
    with (
        stub_server(seeded.logs, "--timeout-rate", "1", name="holding_stub") as holding,
        target_server(
            seeded.logs, holding.url, database_url=seeded.database_url, name="holding"
        ) as hung,
    ):
        with signed_in(hung.url) as client:
            own = AGENTICOS.seeded_from(seeded.second)
            client.org_id = own.org_id
            collection = own.collection_name
            held = client.upload(collection, stuck, b"held by an embedder that never answers")
            states = [
                d["status"]
                for d in client.list_all("/rag/documents", collection_name=collection)
                if d["id"] == held["id"]
            ]
        assert states == ["processing"]
        done = run_seed(
            *seed_args(seeded.stub.url, seeded.target.url, tmp_path / "f.json", DOCUMENTS + 1)
        )
    assert done.returncode == 0, done.stderr
    assert f"1 document(s) still processing from an earlier seed ({stuck})" in done.stdout
    assert AGENTICOS.seeded_from(load_fixture(tmp_path / "f.json")).documents == DOCUMENTS + 1
