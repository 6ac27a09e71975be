"""The repository's scenario, short, against a real LangGraph Agent Server (in-memory runtime).

The stack the demo uses (stub + platforms/langgraph on loopback, seeded through
its API) and one short run: every offered arrival leaves one sample, every
workload is offered and answered as workloads/langgraph/CONTRACT.md says on a
healthy stub, chat turns stream and cancel through the run-cancel endpoint,
background runs are followed to ``success`` after the run, and the report names
the platform. The server runs from its own environment, built by ``make
langgraph-venv`` (.ci/run builds it first); the test skips, saying why, only
when that cannot install.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections import Counter

import pytest

from engine.dataset import FOLLOWUPS
from engine.seam import Attempt
from inputs.fixture import load_fixture
from stack.demo import locust_command
from stack.generator_runs import read_samples, read_table
from stack.langgraph import LANGGRAPH, start_stack
from stack.local import PlatformUnavailable, StackOptions, child_env, password
from stack.processes import ROOT
from tests.support.transport import signed_dialect

WORKLOADS = {"api_read", "chat_stream", "agent_run", "rag_query", "ingest", "trigger_fire"}
# The repository's scenario at 4% of its length: about 14 s of load and 190 arrivals.
SCALE = 0.04
# A quick model: a turn is 8 tokens, so a cancel after the first lands mid-answer.
STUB_ARGS = ("--first-token-ms", "20", "--token-ms", "20", "--tokens", "8")
# Installing from cold, the load, the drain and the reports, on a busy 2-core machine.
RUN_TIMEOUT_S = 600
pytestmark = [pytest.mark.system, pytest.mark.slow, pytest.mark.timeout(2 * RUN_TIMEOUT_S)]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """The server on the stub, seeded, for the module."""
    try:
        LANGGRAPH.interpreter()
    except PlatformUnavailable as exc:
        pytest.skip(f"LangGraph's environment cannot install here: {exc}")
    base = tmp_path_factory.mktemp("langgraph")
    options = StackOptions(workdir=base / "stack", documents=6, stub_args=STUB_ARGS)
    with start_stack(options) as started:
        yield started


@pytest.fixture(scope="module")
def run(stack, tmp_path_factory):
    """One finished run directory against the server, with the Locust result."""
    run_dir = tmp_path_factory.mktemp("langgraph") / "run"
    result = subprocess.run(
        [*locust_command(stack, run_dir, SCALE), "--only-summary"],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert (run_dir / "summary.json").exists(), f"no report\n{result.stderr[-2000:]}"
    samples = read_samples(run_dir)
    return run_dir, result, samples


def test_every_offered_arrival_left_one_sample_of_every_workload(run):
    run_dir, result, samples = run
    summary = json.loads((run_dir / "summary.json").read_text())
    record = json.loads((run_dir / "run.json").read_text())
    assert result.returncode == summary["exit_code"]
    assert record["stopped"] == "completed"
    assert record["skipped"] == {}
    counts = summary["counts"]
    assert counts["offered"] == counts["recorded"] == record["offered"] == len(samples)
    assert len({int(r["index"]) for r in samples}) == len(samples)
    assert {r["workload"] for r in samples} == WORKLOADS
    assert counts["abandoned"] == 0


def test_a_healthy_server_passes_every_answer_check(run):
    """Reads, waited runs, searches, puts and background runs all answered as the contract
    says: a dialect check that refuses a good answer fails here."""
    _, _, samples = run
    failed = Counter((r["workload"], r["detail"]) for r in samples if r["outcome"] != "ok")
    assert not {k: n for k, n in failed.items() if k[0] != "chat_stream"}, failed


def test_chat_turns_stream_and_cancel_for_real(run):
    """Every turn ended as asked: answers carried all their tokens, cancels ended the stream
    after the first token (the server's 202, then the stream's end without the answer)."""
    _, _, samples = run
    chats = [r for r in samples if r["workload"] == "chat_stream"]
    assert {r["outcome"] for r in chats} == {"ok", "cancelled"}, Counter(
        (r["outcome"], r["detail"]) for r in chats
    )
    assert all(int(r["tokens"]) == 8 for r in chats if r["outcome"] == "ok")
    assert all(int(r["tokens"]) >= 1 for r in chats if r["outcome"] == "cancelled")
    assert all(r["ttft_ms"] for r in chats)


def test_background_runs_are_followed_to_success_after_the_run(run):
    run_dir, _, samples = run
    accepted = {int(r["index"]) for r in samples if r["workload"] == "trigger_fire"}
    followups = read_table(run_dir, FOLLOWUPS)
    assert {int(r["index"]) for r in followups} == accepted
    assert {r["state"] for r in followups} == {"processed"}, followups
    n = len(accepted)
    assert f"| trigger_fire | {n} | {n} | 0 | 0 | 0 |" in (run_dir / "report.md").read_text()


def test_the_report_names_the_platform_that_ran_and_what_each_workload_became(run):
    run_dir, _, _ = run
    record = json.loads((run_dir / "run.json").read_text())
    assert record["platform"]["name"] == "langgraph"
    assert "LangGraph Agent Server" in record["topology"]
    report = (run_dir / "report.md").read_text().splitlines()
    assert "| platform | langgraph |" in report
    chat = next(line for line in report if line.startswith("| chat_stream | 20.0% |"))
    assert "POST /threads/{id}/runs/stream (SSE)" in chat


# -- the same server over A2A (issue 42): langgraph-api serves the graph's assistant at
# /a2a/{assistant_id}, its card and routes guarded by the deployment's key in x-api-key.


def _assistant(stack) -> str:
    """The graph's system assistant's id, which A2A names the agent by (not the graph's name)."""
    request = urllib.request.Request(
        stack.target.url + "/assistants/search",
        data=json.dumps({"graph_id": "loadkit-agent"}).encode(),
        headers={"x-api-key": password(), "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())[0]["assistant_id"]


def _a2a_args(stack) -> list[str]:
    return [
        "--api-url",
        stack.target.url,
        "--stub-url",
        stack.stub.url,
        "--agent",
        _assistant(stack),
        "--key-header",
        "x-api-key",
    ]


def test_its_a2a_interface_is_reached_from_the_card_and_answers_every_offered_workload(stack):
    done = subprocess.run(
        [sys.executable, "-m", "loadkit", "check-platform", "a2a", *_a2a_args(stack)],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "A2A 1.0 jsonrpc at /a2a/" in done.stdout and "key in x-api-key" in done.stdout
    assert done.stdout.count(" ok in ") == 3


def test_a_cancel_over_a2a_is_confirmed_though_the_stream_says_completed(stack, tmp_path):
    """LangGraph's stream ends TASK_STATE_COMPLETED after a cancel it carried out; GetTask
    says canceled, and that is what the turn is judged by (platforms/a2a/WIRE.md)."""
    fixture = tmp_path / "a2a.json"
    seeded = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadkit",
            "seed",
            "--platform",
            "a2a",
            *_a2a_args(stack),
            "--fixture",
            str(fixture),
        ],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert seeded.returncode == 0, seeded.stderr
    dialect = signed_dialect(load_fixture(fixture), stack.target.url, password())
    attempt = Attempt(1, True, time.monotonic, time.monotonic)
    result = dialect.chat_turn(attempt, 60.0)
    assert (result.outcome, result.detail) == ("cancelled", ""), result
    assert result.tokens >= 1
