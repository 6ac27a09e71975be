"""The reference target speaks the contract: paths, codes, shapes and the one error body.

One real stub and one real target (SQLite) for the module; every request goes
over a socket. Waits for background work (indexing, routine runs) poll the API
with a bounded deadline, never a fixed sleep.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass

import pytest
import requests

from stack.processes import Server, free_port
from stack.reference_servers import FAST_STUB_DIM, stub_server, target_server
from tests.support.reference import make_agent, run_raw, signed_in
from workloads.agenticos.client import AgenticOSClient
from workloads.agenticos.login import token_of
from workloads.setup_client import APIError, signature

pytestmark = pytest.mark.system

# Seconds background work may take on a busy 2-core machine before a test fails:
# indexing one small document or running one routine takes well under one.
BACKGROUND_DEADLINE_S = 20.0


@dataclass
class Platform:
    stub: Server
    target: Server
    client: AgenticOSClient
    profile_id: str
    agent_id: str


@pytest.fixture(scope="module")
def platform(tmp_path_factory) -> Platform:
    logs = tmp_path_factory.mktemp("target_api")
    with stub_server(logs) as stub, target_server(logs, stub.url) as target:
        client = signed_in(target.url)
        profile_id, agent_id = make_agent(client, stub.url + "/v1")
        yield Platform(stub, target, client, profile_id, agent_id)
        client.close()


def refusal(call, status: int) -> APIError:
    """The APIError ``call`` raises, checked for status and the contract's error body."""
    with pytest.raises(APIError) as caught:
        call()
    assert caught.value.status == status, caught.value
    assert caught.value.message
    return caught.value


def error_body(resp: requests.Response) -> dict:
    body = resp.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    return body["error"]


def wait_for(fetch, done, what: str):
    """Poll ``fetch()`` until ``done(value)``; fail naming ``what`` after the deadline."""
    deadline = time.monotonic() + BACKGROUND_DEADLINE_S
    while True:
        value = fetch()
        if done(value):
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not reached within {BACKGROUND_DEADLINE_S} s: last {value}")
        time.sleep(0.05)


def test_health_and_metrics_answer_without_sign_in(platform):
    health = requests.get(platform.target.url + "/api/v1/health", timeout=5)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    metrics = requests.get(platform.target.url + "/metrics", timeout=5)
    assert metrics.status_code == 200
    assert metrics.headers["content-type"].startswith("text/plain")
    for series in (
        "http_requests_in_flight",
        "pool_size 5.0",
        "pool_checked_out",
        "pool_overflow",
        "pool_waiting",
        "ingest_queue_depth",
        "runs_in_progress",
        'http_requests_total{status="200"}',
    ):
        assert series in metrics.text


def test_sign_in_answers_tokens_and_refuses_bad_passwords(platform):
    url = platform.target.url + "/api/v1/auth/login"
    good = requests.post(url, data={"username": "admin@loadkit.local", "password": "loadkit-admin"})
    assert good.status_code == 200
    assert {"access_token", "refresh_token", "token_type"} <= set(good.json())
    bad = requests.post(url, data={"username": "admin@loadkit.local", "password": "nope"})
    assert bad.status_code == 401 and error_body(bad)["code"] == "unauthorized"
    missing = requests.post(url, data={"username": "admin@loadkit.local"})
    assert missing.status_code == 422
    assert "body.password" in error_body(missing)["details"]["fields"]


def test_requests_need_a_valid_token_and_a_known_org(platform):
    url = platform.target.url + "/api/v1/agents"
    assert requests.get(url, timeout=5).status_code == 401
    forged = requests.get(url, headers={"Authorization": "Bearer abc.def"}, timeout=5)
    assert forged.status_code == 401 and error_body(forged)["code"] == "unauthorized"
    platform.client.org_id = str(uuid.uuid4())
    try:
        refusal(lambda: platform.client.get("/agents"), 404)
    finally:
        platform.client.org_id = None


def test_orgs_list_the_personal_org(platform):
    orgs = platform.client.get("/orgs")
    assert orgs["total"] == len(orgs["items"]) >= 1
    personal = [o for o in orgs["items"] if o["is_personal"]]
    assert personal and {"id", "name", "slug", "role"} <= set(personal[0])


def test_lists_read_rows_and_bound_the_page(platform):
    client = platform.client
    before = client.get("/agents", limit=20)["total"]
    _profile, agent_id = make_agent(client, platform.stub.url + "/v1", publish=False)
    after = client.get("/agents", limit=100)
    assert after["total"] == before + 1
    assert any(a["id"] == agent_id and a["status"] == "draft" for a in after["items"])
    # Paged with skip, as on AgenticOS: the pages hold every row once.
    pages = [client.get("/agents", limit=1, skip=k)["items"] for k in range(after["total"])]
    assert sorted(p[0]["id"] for p in pages) == sorted(a["id"] for a in after["items"])
    for path in ("/agents", "/runs", "/conversations"):
        page = client.get(path, limit=1)
        assert set(page) == {"items", "total"} and len(page["items"]) <= 1
        refusal(lambda path=path: client.get(path, limit=101), 422)


def test_limit_above_100_names_the_field(platform):
    resp = requests.get(
        platform.target.url + "/api/v1/runs?limit=101",
        headers={"Authorization": f"Bearer {token_of(platform.client.auth)}"},
        timeout=5,
    )
    assert resp.status_code == 422
    assert "query.limit" in error_body(resp)["details"]["fields"]


def test_agent_run_writes_a_run_row_before_and_after(platform):
    client = platform.client
    run = run_raw(client, platform.agent_id, "say something")
    assert run["status"] == "completed" and run["output"]
    assert run["output_tokens"] == 8 and run["input_tokens"] > 0
    assert {"run_id", "cost_usd"} <= set(run)
    rows = {r["id"]: r for r in client.get("/runs", limit=100)["items"]}
    row = rows[run["run_id"]]
    assert row["status"] == "completed" and row["surface"] == "api"
    assert row["started_at"] and row["ended_at"] >= row["started_at"]


def test_agent_run_refusals(platform):
    client = platform.client
    _profile, draft = make_agent(client, platform.stub.url + "/v1", publish=False)
    refusal(lambda: run_raw(client, draft, "hi"), 400)
    refusal(lambda: run_raw(client, str(uuid.uuid4()), "hi"), 404)
    refusal(lambda: client.post(f"/agents/{platform.agent_id}/run", {}), 422)
    missing_profile = {"spec": {"name": "x", "model_profile_id": str(uuid.uuid4())}}
    refusal(lambda: client.post("/agents", missing_profile), 422)
    published = client.post(f"/agents/{draft}/publish", {"note": "now"})
    assert published["status"] == "published"


def test_a_model_failure_is_500_and_a_failed_run_row(platform):
    client = platform.client
    dead = f"http://127.0.0.1:{free_port()}/v1"
    _profile, agent_id = make_agent(client, dead)
    err = refusal(lambda: run_raw(client, agent_id, "hi"), 500)
    assert "unreachable" in err.message
    failed = [r for r in client.get("/runs", limit=100)["items"] if r["agent_id"] == agent_id]
    assert len(failed) == 1 and failed[0]["status"] == "failed"
    assert "unreachable" in failed[0]["error"]


def test_secrets_and_model_profiles(platform):
    client = platform.client
    name = f"key-{uuid.uuid4().hex[:6]}"
    body = {"name": name, "purpose": "openai", "value": {"kind": "api_key", "api_key": "sk-x"}}
    secret = client.post("/secrets", body)
    assert "sk-x" not in json.dumps(secret) and secret["name"] == name
    refusal(lambda: client.post("/secrets", body), 409)
    assert any(s["id"] == secret["id"] for s in client.list_all("/secrets"))
    profile = {
        "label": f"p-{name}",
        "provider": "openai",
        "model": "m",
        "secret_id": secret["id"],
        "base_url": platform.stub.url + "/v1",
    }
    created = client.post("/providers/model-profiles", profile)
    assert created["base_url"] == profile["base_url"] and created["secret_id"] == secret["id"]
    refusal(lambda: client.post("/providers/model-profiles", profile), 409)
    labels = [p["label"] for p in client.list_all("/providers/model-profiles")]
    assert profile["label"] in labels


def test_upload_is_accepted_then_indexed_and_searchable(platform):
    client = platform.client
    kb = client.post("/kb", {"name": f"Docs {uuid.uuid4().hex[:6]}", "scope": "org"})
    assert kb["embedding_dim"] == FAST_STUB_DIM
    name = kb["collection_name"]
    refusal(lambda: client.post("/kb", {"name": kb["name"], "scope": "org"}), 409)
    texts = {f"doc-{i}.txt": f"document {i} about topic {i * 31}" for i in range(3)}
    for filename, text in texts.items():
        accepted = client.upload(name, filename, text.encode())
        assert accepted["status"] == "processing" and accepted["collection"] == name
        assert {"id", "document_id", "filename", "message"} <= set(accepted)
    docs = wait_for(
        lambda: list(client.list_all("/rag/documents", collection_name=name)),
        lambda docs: all(d["status"] == "done" for d in docs) and len(docs) == 3,
        "three documents done",
    )
    assert {d["filename"] for d in docs} == set(texts)
    info = client.get(f"/rag/collections/{name}/info")
    assert info["total_vectors"] == 3 and info["dim"] == FAST_STUB_DIM
    # The stub's vectors are a hash of the text, so the exact text ranks first at cosine 1.
    body = {"query": texts["doc-1.txt"], "collection_name": name, "limit": 2}
    results = client.post("/rag/search", body)["results"]
    assert len(results) == 2
    assert results[0]["content"] == texts["doc-1.txt"]
    assert results[0]["score"] == pytest.approx(1.0, abs=1e-4)
    assert results[1]["score"] < results[0]["score"]
    assert {"content", "score", "metadata", "parent_doc_id"} <= set(results[0])


def test_upload_refusals_and_a_document_that_fails_to_index(platform):
    client = platform.client
    kb = client.post("/kb", {"name": f"Bad {uuid.uuid4().hex[:6]}", "scope": "org"})
    name = kb["collection_name"]
    refusal(lambda: client.upload(name, "image.png", b"\x89PNG"), 400)
    refusal(lambda: client.upload(name, "huge.txt", b"a" * (10 * 1024 * 1024 + 1)), 413)
    refusal(lambda: client.upload("no_such_collection", "a.txt", b"x"), 404)
    missing = {"query": "x", "collection_name": "no_such_collection", "limit": 4}
    refusal(lambda: client.post("/rag/search", missing), 404)
    client.upload(name, "latin1.txt", "caf\xe9".encode("latin-1"))
    [doc] = wait_for(
        lambda: list(client.list_all("/rag/documents", collection_name=name)),
        lambda docs: docs and docs[0]["status"] != "processing",
        "the undecodable document settled",
    )
    assert doc["status"] == "error" and "UTF-8" in doc["error_message"]
    assert "error" not in doc and doc["completed_at"]


def test_webhook_signatures_dedupe_and_routine_runs(platform):
    client, agent_id = platform.client, platform.agent_id
    secret = "s" * 32
    trigger_body = {
        "name": "hook",
        "prompt": "handle it",
        "trigger_type": "event",
        "event_source": "webhook",
        "event_secret": secret,
    }
    refusal(
        lambda: client.post(
            f"/agents/{agent_id}/triggers", {**trigger_body, "event_secret": "short"}
        ),
        422,
    )
    trigger = client.post(f"/agents/{agent_id}/triggers", trigger_body)
    assert trigger["webhook_url"].endswith(f"/api/v1/webhooks/triggers/webhook/{trigger['id']}")
    assert secret not in json.dumps(trigger)
    assert trigger["id"] in [t["id"] for t in client.list_all(f"/agents/{agent_id}/triggers")]
    url = f"{platform.target.url}/api/v1/webhooks/triggers/webhook/{trigger['id']}"
    body = b'{"event": "ping"}'

    unsigned = requests.post(url, data=body, timeout=5)
    assert unsigned.status_code == 403 and error_body(unsigned)["code"] == "forbidden"
    forged = requests.post(url, data=body, headers={"X-Signature-256": signature("x" * 32, body)})
    assert forged.status_code == 403
    array = requests.post(url, data=b"[1]", headers={"X-Signature-256": signature(secret, b"[1]")})
    assert array.status_code == 400
    unknown = requests.post(url.replace(trigger["id"], str(uuid.uuid4())), data=body, timeout=5)
    assert unknown.status_code == 202 and unknown.content == b""

    headers = {"X-Signature-256": signature(secret, body), "X-Delivery-Id": "delivery-1"}
    for _ in range(2):
        accepted = requests.post(url, data=body, headers=headers, timeout=5)
        assert accepted.status_code == 202 and accepted.content == b""

    log_id = trigger["conversation_id"]

    def trigger_runs():
        return client.get("/runs", conversation_id=log_id, limit=100)["items"]

    runs = wait_for(
        trigger_runs, lambda rs: rs and rs[0]["status"] == "completed", "the routine run completed"
    )
    assert len(runs) == 1, "the repeated delivery id must not run twice"
    # As AgenticOS lists a routine's fire: surface "schedule", neither prompt nor output.
    assert runs[0]["surface"] == "schedule" and runs[0]["ended_at"]
    assert not {"prompt", "output"} & set(runs[0])
    # Its transcript echoes the delivery, as AgenticOS's does: that is how a fire is named.
    turns = client.get(f"/runs/{runs[0]['id']}/transcript")["items"]
    assert turns[0]["role"] == "user" and turns[0]["run_id"] == runs[0]["id"]
    assert turns[0]["content"].endswith('A webhook delivery arrived.\n\n{\n  "event": "ping"\n}')
    # The run log AgenticOS keeps: the trigger list names its conversation, the fire is there.
    listed = client.get(f"/agents/{agent_id}/triggers", limit=1)
    assert listed["total"] == len(listed["items"]) >= 1, "the trigger list is not paged"
    shown = next(t for t in listed["items"] if t["id"] == trigger["id"])
    assert shown["conversation_id"] == log_id == runs[0]["conversation_id"]
    assert shown["last_run_id"] == runs[0]["id"] and shown["last_fired_at"]
    assert shown["is_active"] and secret not in json.dumps(listed)
    # No GET of one trigger on AgenticOS 0.0.247: its path has other methods, so 405.
    refusal(lambda: client.request("GET", f"/agents/{agent_id}/triggers/{trigger['id']}"), 405)
    log = client.get("/runs", conversation_id=log_id, started_from="2000-01-01")
    assert [r["id"] for r in log["items"]] == [runs[0]["id"]] and log["total"] == 1
    assert client.get("/runs", conversation_id=log_id, status="failed,cancelled")["total"] == 0
    later = client.get("/runs", conversation_id=log_id, started_from="2999-01-01")
    assert later["total"] == 0

    client.delete(f"/agents/{agent_id}/triggers/{trigger['id']}")
    assert trigger["id"] not in [t["id"] for t in client.list_all(f"/agents/{agent_id}/triggers")]
    gone = requests.post(url, data=body, headers={"X-Signature-256": signature(secret, body)})
    assert gone.status_code == 202
    refusal(lambda: client.request("DELETE", f"/agents/{agent_id}/triggers/{trigger['id']}"), 404)
