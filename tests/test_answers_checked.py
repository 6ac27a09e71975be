"""A 2xx is not success by itself: every answer is checked against the contract's shape.

Each workload's success body in every dialect is held to its Struct (a list's
``items`` a list and ``total`` an integer, ...), and a body of the wrong shape
reads as what was wrong. A hostile proxy (tests/support/garbage_proxy.py, a real
process) stands in front of the reference target and answers a share of list reads
and searches with 200 and a body the contract forbids. Every such answer must become
exactly one failed sample named by what was wrong, and nothing else may fail.
"""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections import Counter

import pytest

from engine.dialect_kit import WORDS_MAX
from inputs.fixture import Fixture
from stack.generator_runs import platform, read_run, read_samples, write_scenario
from stack.processes import free_port, running
from tests.support.garbage_proxy import STATS_PATH
from tests.support.generator_env import run_local
from tests.support.transport import dialect_at
from workloads.agenticos.dialect import error_frame, http_failure

# Garbage kind the proxy served -> the detail the sample must carry.
DETAIL_OF = {
    "list: html": "bad body: not JSON",
    "list: cut short": "bad body: not JSON",
    "list: no items": "bad body: no items",
    "list: no total": "bad body: no total",
    "search: html": "bad body: not JSON",
    "search: no results": "bad body: no results",
}


@pytest.mark.system
@pytest.mark.slow
def test_every_garbage_answer_is_one_failed_sample_named_by_what_was_wrong(tmp_path):
    scenario = write_scenario(
        tmp_path, [("sustain", 4.0, 20.0)], workloads={"api_read": 3, "rag_query": 1}
    )
    run_dir = tmp_path / "run"
    with platform(tmp_path / "platform") as plat:
        port = free_port()
        args = [
            "-m",
            "tests.support.garbage_proxy",
            "--upstream",
            plat.target.url,
            "--port",
            str(port),
        ]
        with running(args, "/api/v1/health", port, tmp_path / "proxy.log") as proxy:
            done = run_local(plat, scenario, run_dir, "--host", proxy.url)
            with urllib.request.urlopen(proxy.url + STATS_PATH, timeout=10) as resp:
                served = json.loads(resp.read())
    samples = read_samples(run_dir)
    assert read_run(run_dir)["offered"] == len(samples) == 80, done.stderr[-2000:]
    failed = [s for s in samples if s["outcome"] != "ok"]
    # Both kinds of garbage were served, and every one of them is one failed sample.
    assert served["by_kind"].get("list: no items") and served["by_kind"].get("search: no results")
    assert len(failed) == served["garbage"] > 0, (Counter(s["detail"] for s in failed), served)
    assert all(s["outcome"] == "failed" and s["status"] == "200" for s in failed)
    expected = Counter()
    for kind, count in served["by_kind"].items():
        expected[DETAIL_OF[kind]] += count
    assert Counter(s["detail"] for s in failed) == expected


def test_the_platforms_words_are_one_line_trimmed_and_grouped():
    """A message naming an id must not make every failure its own reason."""
    one = json.dumps(
        {"error": {"code": "not_found", "message": f"agent {uuid.uuid4()} not found"}}
    ).encode()
    two = json.dumps(
        {"error": {"code": "not_found", "message": f"agent {uuid.uuid4()} not found"}}
    ).encode()
    assert (
        http_failure(404, one)
        == http_failure(404, two)
        == "HTTP 404 not_found: agent <id> not found"
    )
    long = json.dumps({"error": {"code": "internal_error", "message": "x\n" * 200}}).encode()
    detail = http_failure(500, long)
    assert detail.startswith("HTTP 500 internal_error: x x") and detail.endswith("...")
    assert len(detail) == len("HTTP 500 internal_error: ") + WORDS_MAX and "\n" not in detail
    assert http_failure(502, b"<html>Bad Gateway</html>") == "HTTP 502"
    assert error_frame({"message": "model provider answered HTTP 500"}) == (
        "error frame: model provider answered HTTP 500"
    )
    assert error_frame({}) == "error frame"


# Each platform's own part of the fixture, as its seed would write it.
SEEDED = {
    "agenticos": {
        "org_id": "org",
        "agent_id": "agent",
        "model_profile_id": "profile",
        "collection_name": "c",
        "documents": 0,
    },
    "agno": {"agent_id": "agent", "collection_name": "c", "documents": 0},
    "langgraph": {"graph_id": "agent", "namespace": "c", "documents": 0},
}


def _dialects() -> dict:
    return {
        name: dialect_at(
            Fixture(api_url="http://127.0.0.1", stub_url="", platform=name, seeded=seeded),
            "http://127.0.0.1:9",
            "run",
        )
        for name, seeded in SEEDED.items()
    }


RUN = b'{"run_id": "r", "output": "4", "status": "completed", "input_tokens": 3}'
HIT = b'{"content": "c", "score": 0.5, "metadata": {}, "parent_doc_id": "d"}'
# (dialect, workload, arrival, status, body, the detail it must read as; "" is ok).
SHAPES = [
    ("agenticos", "api_read", 0, 200, b'{"items": [{"id": "a"}], "total": 1}', ""),
    ("agenticos", "api_read", 0, 200, b'{"items": "none", "total": "many"}', "items is str"),
    ("agenticos", "api_read", 1, 200, b'{"items": [], "total": 1.5}', "total is float, not int"),
    (
        "agenticos",
        "api_read",
        2,
        200,
        b'{"items": ["a"], "total": 1}',
        "items[] is str, not object",
    ),
    ("agenticos", "api_read", 0, 200, b'{"data": {"items": [], "total": 0}}', "no items"),
    ("agenticos", "api_read", 0, 200, b'[{"items": [], "total": 0}]', "not an object"),
    ("agenticos", "api_read", 0, 200, b'{"items": [], "total": 0', "not JSON"),
    ("agenticos", "agent_run", 0, 200, RUN, ""),
    ("agenticos", "agent_run", 0, 200, RUN.replace(b'"4"', b"4"), "output is int, not str"),
    ("agenticos", "agent_run", 0, 200, RUN.replace(b"completed", b"failed"), "run failed"),
    ("agenticos", "agent_run", 0, 200, b'{"run_id": "r", "status": "completed"}', "no output"),
    ("agenticos", "rag_query", 0, 200, b'{"results": [%s]}' % HIT, ""),
    ("agenticos", "rag_query", 0, 200, b'{"results": []}', "no results"),
    (
        "agenticos",
        "rag_query",
        0,
        200,
        b'{"results": [{"content": 1}]}',
        "results[].content is int",
    ),
    ("agenticos", "rag_query", 0, 200, b'{"results": {"content": "c"}}', "results is object"),
    ("agenticos", "ingest", 0, 202, b'{"id": "d1", "document_id": "d1", "status": "x"}', ""),
    ("agenticos", "ingest", 0, 202, b'{"id": ""}', "no document id"),
    ("agenticos", "ingest", 0, 202, b"[]", "not an object"),
    ("agenticos", "trigger_fire", 0, 202, b"", ""),
    ("agno", "api_read", 0, 200, b'[{"id": "agent"}]', ""),
    ("agno", "api_read", 0, 200, b'{"data": []}', "not an array"),
    ("agno", "api_read", 0, 200, b'[{"id": "a"}, "b"]', "item is str, not object"),
    ("agno", "api_read", 1, 200, b'{"data": [], "meta": {"page": 1}}', ""),
    ("agno", "api_read", 1, 200, b'[{"data": [], "meta": {}}]', "not an object"),
    ("agno", "api_read", 1, 200, b'{"data": "none", "meta": {}}', "data is str, not array"),
    ("agno", "agent_run", 0, 200, b'{"run_id": "r", "status": "COMPLETED"}', ""),
    ("agno", "agent_run", 0, 200, b'{"run_id": "r", "status": "ERROR"}', "run ERROR"),
    ("agno", "agent_run", 0, 200, b'{"run_id": "r"}', "no status"),
    ("agno", "rag_query", 0, 200, b'{"data": [{"content": "c"}], "meta": {}}', ""),
    ("agno", "rag_query", 0, 200, b'{"data": [], "meta": {}}', "no results"),
    ("agno", "rag_query", 0, 200, b'{"data": [{"id": "x"}], "meta": {}}', "no data[].content"),
    ("agno", "ingest", 0, 202, b'{"id": "c1", "status": "processing"}', ""),
    ("agno", "ingest", 0, 202, b'{"id": 7}', "id is int, not str"),
    ("agno", "trigger_fire", 0, 200, b'{"status": "processing"}', ""),
    ("agno", "trigger_fire", 0, 200, b'{"status": "ignored"}', "webhook ignored"),
    ("agno", "trigger_fire", 0, 200, b"[]", "not an object"),
    ("langgraph", "api_read", 0, 200, b'[{"thread_id": "t"}]', ""),
    ("langgraph", "api_read", 1, 200, b'{"items": []}', "not an array"),
    ("langgraph", "agent_run", 0, 200, b'{"messages": [{"type": "human"}, {"type": "ai"}]}', ""),
    (
        "langgraph",
        "agent_run",
        0,
        200,
        b'{"__error__": {"error": "E", "message": "boom"}}',
        "run error: boom",
    ),
    ("langgraph", "agent_run", 0, 200, b'{"messages": [{"type": "human"}]}', "no answer"),
    ("langgraph", "agent_run", 0, 200, b'{"messages": "none"}', "messages is str"),
    ("langgraph", "rag_query", 0, 200, b'{"items": [{"key": "k", "score": 0.5}]}', ""),
    ("langgraph", "rag_query", 0, 200, b'{"items": []}', "no results"),
    ("langgraph", "rag_query", 0, 200, b'{"items": [{"score": 0.5}]}', "no items[].key"),
    ("langgraph", "ingest", 0, 204, b"", ""),
    (
        "langgraph",
        "trigger_fire",
        0,
        200,
        b'{"run_id": "r", "thread_id": "t", "status": "pending"}',
        "",
    ),
    ("langgraph", "trigger_fire", 0, 200, b'{"run_id": "r", "status": "pending"}', "no thread_id"),
]


def test_every_workloads_answer_is_held_to_its_contracts_shape_in_every_dialect():
    """A 2xx of the wrong shape is one failed sample saying what was wrong, on each platform;
    one of the right shape is ok (and accepted work is noted for the follow-up)."""
    dialects = _dialects()
    for name, workload, k, status, body, detail in SHAPES:
        result = dialects[name].answer(workload, k, status, body)
        if not detail:
            assert (result.outcome, result.detail) == ("ok", ""), (name, workload, body, result)
            continue
        assert result.outcome == "failed" and result.status == status, (name, body, result)
        words = result.detail.removeprefix("bad body: ")
        assert words.startswith(detail), (name, workload, body, result.detail)
    assert [w for _, w, _ in dialects["agenticos"].take_accepted()] == ["ingest", "trigger_fire"]
    assert [w for _, w, _ in dialects["agno"].take_accepted()] == ["ingest", "trigger_fire"]
    assert dialects["langgraph"].take_accepted() == [(0, "trigger_fire", "t/r")]
