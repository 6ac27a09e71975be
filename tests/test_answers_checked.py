"""A 2xx is not success by itself: every answer is checked against the contract.

A hostile proxy (tests/garbage_proxy.py, a real process) stands in front of the
reference target and answers a share of list reads and searches with 200 and a
body the contract forbids. Every such answer must become exactly one failed
sample named by what was wrong, and nothing else may fail.
"""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections import Counter

from engine.seam import WORDS_MAX
from stack.processes import free_port, running
from tests.garbage_proxy import STATS_PATH
from tests.generator_env import platform, read_run, read_samples, run_local, write_scenario
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


def test_every_garbage_answer_is_one_failed_sample_named_by_what_was_wrong(tmp_path):
    scenario = write_scenario(
        tmp_path, [("sustain", 4.0, 20.0)], workloads={"api_read": 3, "rag_query": 1}
    )
    run_dir = tmp_path / "run"
    with platform(tmp_path / "platform") as plat:
        port = free_port()
        args = ["-m", "tests.garbage_proxy", "--upstream", plat.target.url, "--port", str(port)]
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
