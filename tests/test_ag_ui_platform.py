"""AG-UI (issue 44) against two real servers and a hostile one, each reached by a URL and a path.

The demo's stack (stub + agno 3.1.10's AgentOS, its AG-UI interface at /agui behind the
bearer key) seeded by ``loadkit seed --platform ag-ui``, and one short four-phase run on
one load process: every offered arrival one sample, the workloads AG-UI does not offer
left out with their reasons while the others keep the scenario's rates, agent runs make
their three model calls, and each cancelled turn (the stream closed at its first token,
AG-UI having no cancel message) is confirmed at the stub: agno stopped the model (the call
``abandoned``), or, as it sometimes does, ran it to the end for nobody (``ok``). Then
ag-ui-langgraph 0.0.47 over the kit's LangGraph graph (its key in x-api-key, its agent at
/): every offered workload answers, a conversation continues by its thread on both
servers, and the same cancel is named where it costs every time: ag-ui-langgraph runs the
model to the end of an answer nobody reads. A hostile server
(tests/support/hostile_ag_ui_server.py) breaks runs one way per path, and each break is
one failed sample named by what happened, on both workloads; the seed refuses a URL that
does not answer AG-UI in one line, exit 1, nothing written. The servers run from their own
environments (``make agno-venv``, ``make langgraph-venv``; .ci/run builds both); the
module skips, saying why, only when those cannot install.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.dataset import STUB_CALLS
from engine.dialect_kit import BAD_FRAME, STREAM_ENDED
from engine.samples import CANCELLED, FAILED, OK
from engine.seam import Attempt, Conversation
from inputs.fixture import Fixture, load_fixture
from inputs.scenario import load_scenario
from stack.ag_ui import AG_UI, start_stack
from stack.demo import locust_command
from stack.generator_runs import ran_scenario, read_samples, read_table
from stack.langgraph import LANGGRAPH
from stack.local import PlatformUnavailable, StackOptions, child_env, password
from stack.processes import ROOT, Server, free_port, running
from tests.support import hostile_ag_ui_server as hostile
from tests.support.counting_server import CountingServer, started
from tests.support.transport import signed_dialect, signed_setup_of
from workloads.ag_ui.stream import NO_TEXT

OFFERED = {"chat_stream", "agent_run"}
NOT_OFFERED = {"api_read", "rag_query", "ingest", "trigger_fire"}
# The repository's scenario at 4% of its length: about 14 s of load.
SCALE = 0.04
# A model whose 8 tokens take 0.7 s after the first: a turn closed at its first token leaves
# a server that stops its model time to notice, even while the burst keeps it busy.
TOKENS, TOKEN_MS = 8, 100
STUB_ARGS = ("--first-token-ms", "20", "--token-ms", str(TOKEN_MS), "--tokens", str(TOKENS))
# The load, the drain and the reports, on a busy 2-core machine.
RUN_TIMEOUT_S = 600
# Waiting for the stub's record of a call that ends after the client left.
WAIT_S = 20.0
pytestmark = [pytest.mark.system, pytest.mark.slow, pytest.mark.timeout(2 * RUN_TIMEOUT_S)]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """The demo's stack: the stub and agno's AgentOS, seeded as an AG-UI agent."""
    try:
        AG_UI.interpreter()
    except PlatformUnavailable as exc:
        pytest.skip(f"agno's environment cannot install here: {exc}")
    options = StackOptions(workdir=tmp_path_factory.mktemp("ag-ui") / "stack", stub_args=STUB_ARGS)
    with start_stack(options) as started_stack:
        yield started_stack


@pytest.fixture(scope="module")
def run(stack, tmp_path_factory) -> Path:
    """One finished four-phase run on one load process."""
    run_dir = tmp_path_factory.mktemp("run") / "run"
    result = subprocess.run(
        [*locust_command(stack, run_dir, SCALE), "--only-summary"],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert (run_dir / "summary.json").exists(), f"no report\n{result.stderr[-2000:]}"
    return run_dir


@pytest.fixture(scope="module")
def langgraph(stack, tmp_path_factory) -> Iterator[Server]:
    """ag-ui-langgraph over the kit's graph on the stack's stub, its key the run's password."""
    try:
        python = LANGGRAPH.interpreter()
    except PlatformUnavailable as exc:
        pytest.skip(f"LangGraph's environment cannot install here: {exc}")
    port = free_port()
    env = {**child_env(), "LOADKIT_API_KEY": password(), "LANGGRAPH_STUB_URL": stack.stub.url}
    log = tmp_path_factory.mktemp("ag-ui-langgraph") / "server.log"
    args = ["-m", "platforms.langgraph.ag_ui", "--port", str(port)]
    with running(args, "/health", port, log, env, python=python, ready_timeout=120) as server:
        yield server


def _seed(api_url: str, stub_url: str, fixture: Path, *own: str, env=None):
    command = [sys.executable, "-m", "loadkit", "seed", "--platform", "ag-ui"]
    command += ["--api-url", api_url, "--stub-url", stub_url, "--fixture", str(fixture), *own]
    return subprocess.run(
        command,
        cwd=ROOT,
        env=child_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )


@pytest.fixture(scope="module")
def langgraph_fixture(stack, langgraph, tmp_path_factory) -> Path:
    fixture = tmp_path_factory.mktemp("ag-ui-langgraph") / "fixture.json"
    own = ("--path", "/", "--key-header", "x-api-key")
    seeded = _seed(langgraph.url, stack.stub.url, fixture, *own)
    assert seeded.returncode == 0, seeded.stderr
    assert json.loads(fixture.read_text())["seeded"] == {"path": "/", "key_header": "x-api-key"}
    return fixture


def _stub_calls(stub_url: str, run_key: str, arrivals: int) -> dict[int, list[dict]]:
    """The stub's record of ``run_key``'s model calls by arrival, once every one of
    ``arrivals`` has one (a call is recorded when it ends, after its client may have left)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        with urllib.request.urlopen(f"{stub_url}/calls?run={run_key}", timeout=10) as answer:
            rows = list(csv.DictReader(answer.read().decode().splitlines()))
        calls: dict[int, list[dict]] = {}
        for row in rows:
            calls.setdefault(int(row["arrival"]), []).append(row)
        if len(calls) >= arrivals:
            return calls
        assert time.monotonic() < deadline, rows
        time.sleep(0.05)


# -- agno's AG-UI interface, the demo's stack, four phases -------------------------------


def test_the_seed_found_the_agent_and_the_key_it_wants(stack):
    seeded = json.loads(stack.fixture.read_text())
    assert seeded["platform"] == "ag-ui"
    assert seeded["seeded"] == {"path": "/agui", "key_header": "Authorization"}
    assert password() not in stack.fixture.read_text()


def test_every_offered_arrival_is_one_sample_and_each_run_ends_as_ag_ui_says(run):
    record = json.loads((run / "run.json").read_text())
    summary = json.loads((run / "summary.json").read_text())
    samples = read_samples(run)
    counts = summary["counts"]
    assert record["stopped"] == "completed" and record["platform"]["name"] == "ag-ui"
    assert counts["offered"] == counts["recorded"] == record["offered"] == len(samples) > 0
    assert len({s["index"] for s in samples}) == len(samples)
    assert {s["workload"] for s in samples} == OFFERED
    outcomes = Counter((s["workload"], s["outcome"]) for s in samples)
    assert set(outcomes) == {
        ("agent_run", OK),
        ("chat_stream", OK),
        ("chat_stream", CANCELLED),
    }, Counter((s["workload"], s["detail"]) for s in samples if s["outcome"] != OK)
    chats = [s for s in samples if s["workload"] == "chat_stream"]
    assert all(int(s["tokens"]) == TOKENS for s in chats if s["outcome"] == OK)
    assert all(int(s["tokens"]) == 1 for s in chats if s["outcome"] == CANCELLED)
    assert all(s["ttft_ms"] for s in chats)


def test_what_ag_ui_does_not_offer_is_left_out_and_the_rest_keep_their_rates(run):
    ran = ran_scenario(run)
    written = load_scenario()
    total = sum(w.share for w in written.workloads)
    kept = sum(w.share for w in written.workloads if w.name in OFFERED) / total
    for phase, stated in zip(ran.phases, written.phases, strict=True):
        assert phase.rate == pytest.approx(stated.rate * kept)
    offered = {w.name: w for w in ran.workloads}
    for name in NOT_OFFERED:
        assert offered[name].share == 0
        assert offered[name].why.startswith("Not offered by ag-ui: AG-UI has no")
    assert "Not offered by ag-ui: AG-UI has no document upload" in (run / "report.md").read_text()


def test_the_loop_runs_and_each_cancelled_turn_is_confirmed_at_the_stub(run):
    """Each agent run made the scenario's three model calls (the stub calling the first tool
    the agent offers, twice, then answering). Each cancelled turn's stream was closed at its
    first token, and the stub's record of its model call says what agno did then: stopped it
    (``abandoned``), or, when the client left while Starlette was writing an event rather
    than while agno awaited the model, left it running to the end of the answer for nobody
    (``ok``, every token: workloads/ag_ui/WIRE.md). Both are seen here; nothing else is."""
    samples = {int(s["index"]): s for s in read_samples(run)}
    calls: dict[int, list[dict]] = {}
    for call in read_table(run, STUB_CALLS):
        calls.setdefault(int(call["arrival"]), []).append(call)
    runs = [k for k, s in samples.items() if s["workload"] == "agent_run"]
    assert runs and all(
        [c["reply"] for c in calls[k]] == ["tool_calls", "tool_calls", "answer"] for k in runs
    )
    cancelled = [calls[k][-1] for k, s in samples.items() if s["outcome"] == CANCELLED]
    stopped = [c for c in cancelled if c["outcome"] == "abandoned"]
    paid_for_nobody = [c for c in cancelled if c["outcome"] == "ok"]
    assert stopped and len(stopped) + len(paid_for_nobody) == len(cancelled), cancelled
    answer_ms = TOKEN_MS * (TOKENS - 1)
    assert all(float(c["total_ms"]) < float(c["first_ms"]) + answer_ms for c in stopped)
    assert all(float(c["total_ms"]) >= answer_ms for c in paid_for_nobody), paid_for_nobody
    finished = [k for k, s in samples.items() if s["workload"] == "chat_stream" and k in calls]
    assert {calls[k][-1]["outcome"] for k in finished if samples[k]["outcome"] == OK} == {"ok"}


# -- ag-ui-langgraph over the kit's graph ------------------------------------------------


def test_ag_ui_langgraph_answers_every_offered_workload(stack, langgraph):
    command = [sys.executable, "-m", "loadkit", "check-platform", "ag-ui"]
    command += ["--api-url", langgraph.url, "--stub-url", stack.stub.url]
    done = subprocess.run(
        [*command, "--path", "/", "--key-header", "x-api-key"],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "AG-UI agent at / (key in x-api-key)" in done.stdout
    assert done.stdout.count(" ok in ") == len(OFFERED)


def test_ag_ui_langgraph_pays_for_the_rest_of_an_answer_whose_client_left(
    stack, langgraph_fixture, langgraph
):
    """The same cancel as agno's, named where it costs: the turn ends cancelled at its first
    token, and the stub's record shows the model call run to its end (``ok``, every token),
    not abandoned: tokens paid for nobody (workloads/ag_ui/CONTRACT.md)."""
    run_key = f"cancel-{uuid.uuid4().hex[:8]}"
    dialect = signed_dialect(
        load_fixture(langgraph_fixture), langgraph.url, password(), run_id=run_key
    )
    result = dialect.chat_turn(Attempt(1, True, time.monotonic, time.monotonic), 60.0)
    assert (result.outcome, result.tokens) == (CANCELLED, 1), result
    (call,) = _stub_calls(stack.stub.url, run_key, 1)[1]
    assert call["outcome"] == "ok" and call["reply"] == "answer", call
    assert float(call["total_ms"]) >= TOKEN_MS * (TOKENS - 1), call


@pytest.mark.parametrize("server", ["agno", "ag-ui-langgraph"])
def test_a_conversation_continues_by_its_thread(stack, langgraph_fixture, langgraph, server):
    """Two turns of one conversation name one thread; the server kept the first, so the
    model was given both user turns on the second."""
    fixture, url = (
        (stack.fixture, stack.target.url)
        if server == "agno"
        else (langgraph_fixture, langgraph.url)
    )
    run_key = f"thread-{uuid.uuid4().hex[:8]}"
    dialect = signed_dialect(load_fixture(fixture), url, password(), run_id=run_key)
    conversation = Conversation()
    for k in (1, 2):
        result = dialect.chat_turn(
            Attempt(k, False, time.monotonic, time.monotonic, conversation), 60.0
        )
        assert result.outcome == OK, result
    assert conversation.id == f"loadkit-{run_key}-t1"
    calls = _stub_calls(stack.stub.url, run_key, 2)
    assert [calls[k][0]["turns"] for k in (1, 2)] == ["1", "2"]


# -- a hostile server: every failure named --------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[CountingServer]:
    with started("tests.support.hostile_ag_ui_server") as hostile_server:
        yield hostile_server


def _at(server: CountingServer, path: str) -> Fixture:
    seeded = {"path": path, "key_header": ""}
    return Fixture(api_url=server.url, stub_url=server.url, platform="ag-ui", seeded=seeded)


FAILURES = {
    "/run-error": f"RUN_ERROR {hostile.ERROR_CODE}: {hostile.ERROR_MESSAGE}",
    "/ended": STREAM_ENDED,
    "/bad-frame": BAD_FRAME,
    "/no-type": "bad frame: no type",
    "/no-text": NO_TEXT,
    "/unanswered": f"tool call unanswered: {hostile.TOOL}",
    "/interrupt": f"run interrupted: {hostile.INTERRUPT_REASON}",
    "/unprocessable": "HTTP 422: body.threadId: Field required",
    "/nowhere": "HTTP 404: Not Found",
}
# A 200 that is not an event stream: a chat turn sees its content type, an agent run (whose
# answer the transport reads whole) only that it holds no events.
NOT_STREAMED = {
    "chat_stream": "not an event stream: application/json",
    "agent_run": "not an event stream: no data: events",
}


@pytest.mark.parametrize("workload", sorted(OFFERED))
def test_every_broken_run_is_one_failed_sample_named_by_what_happened(server, workload):
    expected = {**FAILURES, "/json": NOT_STREAMED[workload]}
    before = server.counts()
    for path, detail in expected.items():
        with signed_setup_of(_at(server, path), "", "") as setup:
            result = setup.one(workload)
        assert (result.outcome, result.detail) == (FAILED, detail), path
    asked = server.counts() - before
    assert asked == Counter({p if p in hostile.PATHS else "other": 1 for p in expected}), asked


@pytest.mark.parametrize("workload", sorted(OFFERED))
def test_a_good_run_reads_past_what_it_does_not_need(server, workload):
    """agno's shape (an empty message around a tool call, a keep-alive delta, a JSON Patch
    STATE_DELTA, RAW and CUSTOM events) is a good run; its text deltas are its tokens."""
    with signed_setup_of(_at(server, "/good"), "", "") as setup:
        result = setup.one(workload)
    assert result.outcome == OK, result
    if workload == "chat_stream":
        assert result.tokens == hostile.GOOD_TOKENS and result.ttft_ms is not None


def test_a_cancelled_turn_closes_the_stream_at_its_first_token(server):
    """AG-UI has no cancel message: the turn ends cancelled after one token and the server
    sees its client leave before the run's end."""
    before = server.counts()
    dialect = signed_dialect(_at(server, "/good"), server.url, "")
    result = dialect.chat_turn(Attempt(1, True, time.monotonic, time.monotonic), 10.0)
    assert (result.outcome, result.tokens) == (CANCELLED, 1), result
    counts = server.wait_for("left", before["left"] + 1)
    assert counts["completed"] == before["completed"]


# -- the seed's refusals: one line, exit 1, nothing written -------------------------------


@pytest.mark.parametrize(
    ("where", "own", "said"),
    [
        ("hostile", ("--path", "/unprocessable"), "does not answer AG-UI (HTTP 422: body.threadId"),
        ("hostile", ("--path", "/json"), "does not answer AG-UI (not an event stream"),
        ("hostile", ("--path", "/nowhere"), "does not answer AG-UI (HTTP 404: Not Found)"),
        ("hostile", ("--path", "/no-text"), "a run of the agent at POST {url}/no-text ended"),
        ("stopped", (), "does not answer ({url}: ConnectionError): start it (make agno"),
        ("agno", ("--no-key",), "/agui wants a key (HTTP 401): export LOAD_PASSWORD"),
        ("agno", ("--wrong-key",), "/agui refused the key in Authorization (HTTP 401)"),
    ],
)
def test_the_seed_refuses_what_does_not_answer_ag_ui_in_one_line(
    stack, server, tmp_path, where, own, said
):
    url = {"hostile": server.url, "stopped": f"http://127.0.0.1:{free_port()}"}.get(
        where, stack.target.url
    )
    env = child_env()
    if "--no-key" in own:
        env.pop("LOAD_PASSWORD")
    if "--wrong-key" in own:
        env["LOAD_PASSWORD"] = "not-the-key"
    fixture = tmp_path / "fixture.json"
    own = tuple(o for o in own if o not in ("--no-key", "--wrong-key"))
    done = _seed(url, stack.stub.url, fixture, *own, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("seed: "), done.stderr
    assert said.format(url=url) in lines[0], lines[0]
    assert not fixture.exists() and "wrote" not in done.stdout
