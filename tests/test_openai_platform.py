"""``--platform openai`` against real OpenAI-compatible servers: the kit's stub straight, and
LiteLLM's proxy (litellm 1.110.2, platforms/litellm/) in front of it with a client key.

Through the dialect itself (workloads.one_arrival's signed setup and engine.serve, as a load
process serves an arrival): each offered workload's success on both servers and, on LiteLLM,
in both API flavours (the stub has no Responses API, and the seed says so); each one's
failure words from a stub that injects a 500 or a 429, straight and through the proxy; a key
the proxy refuses; a cancelled turn whose model stream the stub records abandoned, straight
and through the proxy; a Responses conversation continued by ``previous_response_id``. Then
the seed's refusals (one line, exit 1, nothing written) and a short four-phase run through
the proxy with exact accounting. The proxy runs from its own environment (``make
litellm-venv``; .ci/run builds it); the proxy's tests skip, saying why, only when that cannot
install.
"""

from __future__ import annotations

import csv
import dataclasses
import http.client
import io
import json
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from engine.dataset import STUB_CALLS
from engine.samples import CANCELLED, FAILED, OK, SHED
from engine.seam import Attempt, Conversation, SeedSetup, Setup
from inputs.fixture import DEFAULT_EMAIL, Fixture
from inputs.scenario import load_scenario
from stack.demo import locust_command
from stack.generator_runs import ran_scenario, read_samples, read_table
from stack.local import PlatformUnavailable, StackOptions, child_env, password
from stack.openai import LITELLM, start_stack
from stack.processes import ROOT, Server, free_port, running
from workloads.one_arrival import signed_setup
from workloads.openai.dialect import OpenAI
from workloads.openai.discover import described
from workloads.openai.platform import PLATFORM

pytestmark = [pytest.mark.system, pytest.mark.slow]

OFFERED = ("api_read", "chat_stream", "agent_run", "rag_query")
# A quick model whose 8 tokens take 0.2 s, so a cancel after the first lands mid-answer.
STUB_ARGS = ("--first-token-ms", "20", "--token-ms", "25", "--tokens", "8")
# The repository's scenario at 3% of its length: about 10 s of load.
SCALE = 0.03
# The load, the drain and the reports, on a busy 2-core machine.
RUN_TIMEOUT_S = 300
# A stream read, or the stub's record of a call once it ended.
WAIT_S = 20.0
# Only ever in memory and in the proxy's environment.
WRONG_KEY = f"wrong-{uuid.uuid4().hex}"


def _stub(tmp_path: Path, *args: str) -> Iterator[Server]:
    port = free_port()
    log = tmp_path / f"stub-{port}.log"
    with running(["-m", "stub", "--port", str(port), *STUB_ARGS, *args], "/health", port, log) as s:
        yield s


@pytest.fixture(scope="module")
def stub(tmp_path_factory) -> Iterator[Server]:
    yield from _stub(tmp_path_factory.mktemp("stub"))


@pytest.fixture(scope="module")
def failing_stub(tmp_path_factory) -> Iterator[Server]:
    """Every model call answered 500 with OpenAI's error body."""
    yield from _stub(tmp_path_factory.mktemp("stub"), "--error-rate", "1")


@pytest.fixture(scope="module")
def shedding_stub(tmp_path_factory) -> Iterator[Server]:
    """Every model call answered 429 with Retry-After."""
    yield from _stub(tmp_path_factory.mktemp("stub"), "--rate-limit-rate", "1")


def _proxy_python() -> str:
    try:
        return LITELLM.interpreter()
    except PlatformUnavailable as exc:
        pytest.skip(f"LiteLLM's proxy's environment cannot install here: {exc}")


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """The demo's stack: a stub, LiteLLM's proxy in front of it, seeded as ``make demo`` does."""
    _proxy_python()
    options = StackOptions(
        workdir=tmp_path_factory.mktemp("openai") / "stack", stub_args=STUB_ARGS, platform="openai"
    )
    with start_stack(options) as started:
        yield started


@pytest.fixture(scope="module")
def faulty_proxy(tmp_path_factory) -> Iterator[tuple[Server, Server]]:
    """LiteLLM's proxy in front of a stub whose every model call fails, a 500 or a 429 (drawn
    from the stub's seed, the same each run); the stub, and the proxy. The proxy is told to
    pass each failure on at once (``--retries 0``): by default LiteLLM tries a failed call
    twice more, 4-5 s per request here (WIRE.md)."""
    python = _proxy_python()
    tmp = tmp_path_factory.mktemp("faulty")
    for stub in _stub(tmp, "--error-rate", "0.5", "--rate-limit-rate", "0.5"):
        port = free_port()
        env = {
            "LITELLM_KIT_STUB_URL": stub.url,
            "LITELLM_KIT_CLIENT_KEY": password(),
        }
        args = ["-m", "platforms.litellm", "--port", str(port), "--retries", "0"]
        log = tmp / "litellm.log"
        with running(args, "/health/liveliness", port, log, env, python, 120) as proxy:
            yield stub, proxy


@contextmanager
def reached(
    url: str, stub: Server, api: str = "chat", *, seed: bool = True
) -> Iterator[tuple[Setup, OpenAI]]:
    """The server at ``url`` signed in as a load process would be, seeded by the platform's own
    seed (``seed``: with its one answer; else only the model list, for a server whose every
    answer fails), and the dialect behind it."""
    secret = password()
    own: dict[str, str | bool | None] = {"api": api}
    setup = SeedSetup(url, stub.url, 4, DEFAULT_EMAIL, secret, 0.0, own)
    seeded = PLATFORM.seeding.make(setup) if seed and PLATFORM.seeding else described(setup)
    fixture = Fixture(
        api_url=url, stub_url=stub.url, platform="openai", seeded=dataclasses.asdict(seeded)
    )
    with signed_setup(PLATFORM, fixture, DEFAULT_EMAIL, secret, purpose="test", fix="-") as (
        done,
        dialect,
    ):
        assert isinstance(dialect, OpenAI)
        yield done, dialect


def calls(stub: Server, run: str, arrival: int) -> list[dict]:
    """The stub's rows for one arrival of ``run``, once one is written (a row is written when
    its call ends)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        conn = http.client.HTTPConnection(stub.url.removeprefix("http://"), timeout=WAIT_S)
        conn.request("GET", f"/calls?run={run}")
        table = conn.getresponse().read().decode()
        conn.close()
        rows = [r for r in csv.DictReader(io.StringIO(table)) if r["arrival"] == str(arrival)]
        if rows or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


def cancelled_turn(dialect: OpenAI, index: int, conversation: Conversation | None = None):
    """One chat turn asked to stop after its first token, served by the dialect."""
    attempt = Attempt(index, True, time.monotonic, time.monotonic, conversation)
    return dialect.chat_turn(attempt, WAIT_S)


def test_the_stub_straight_serves_every_workload_on_chat_completions(stub):
    with reached(stub.url, stub) as (done, _dialect):
        results = {workload: done.one(workload) for workload in OFFERED}
    assert {w: r.outcome for w, r in results.items()} == dict.fromkeys(OFFERED, OK), results
    assert results["chat_stream"].tokens == 8 and results["chat_stream"].ttft_ms is not None


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_the_proxy_serves_every_workload_in_both_flavours(stack, api):
    with reached(stack.target.url, stack.stub, api) as (done, dialect):
        results = {workload: done.one(workload) for workload in OFFERED}
    assert dialect.seeded.key is True
    assert {w: r.outcome for w, r in results.items()} == dict.fromkeys(OFFERED, OK), results
    assert results["chat_stream"].tokens == 8


def test_a_failing_model_is_named_in_the_stubs_own_words(failing_stub, shedding_stub):
    """Straight at the stub: a 500 is failed with OpenAI's error type and message, a 429 is
    shed, for the answer whole, the streamed turn and the embedding alike."""
    for server, outcome, said in (
        (failing_stub, FAILED, "HTTP 500 server_error: The stub model injected a server error"),
        (shedding_stub, SHED, "HTTP 429 requests rate_limit_exceeded: The stub model injected"),
    ):
        with reached(server.url, server, seed=False) as (done, _dialect):
            for workload in ("agent_run", "chat_stream", "rag_query"):
                result = done.one(workload)
                assert (result.outcome, result.status) == (outcome, int(said[5:8])), result
                assert result.detail.startswith(said), result


def test_the_proxy_passes_the_models_failures_on_in_its_own_words(faulty_proxy):
    """Through LiteLLM: the stub's 500 and 429 arrive as LiteLLM's own error body, its type
    and the provider's message inside; the 429 stays a 429, so it is shed."""
    stub, proxy = faulty_proxy
    seen: dict[tuple[str, str], str] = {}
    with reached(proxy.url, stub, seed=False) as (done, _dialect):
        for _ in range(12):
            for workload in ("agent_run", "chat_stream", "rag_query"):
                result = done.one(workload)
                seen.setdefault((workload, result.outcome), result.detail)
            if len(seen) == 6:
                break
    for workload in ("agent_run", "chat_stream", "rag_query"):
        assert seen[workload, FAILED].startswith("HTTP 500 internal_server_error: litellm."), seen
        assert seen[workload, SHED].startswith("HTTP 429 throttling_error: litellm."), seen


def test_retry_after_reaches_the_client_from_the_stub_but_only_renamed_through_the_proxy(
    shedding_stub, faulty_proxy
):
    """What each server puts in a 429's head (the kit's samples do not read heads): the stub a
    Retry-After, LiteLLM the provider's as ``llm_provider-retry-after`` and none of its own."""
    body = json.dumps({"model": "stub", "messages": [{"role": "user", "content": "hi"}]})
    heads = []
    for server in (shedding_stub, faulty_proxy[1]):
        for _ in range(8):
            conn = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=WAIT_S)
            headers = {"Content-Type": "application/json", "Authorization": f"Bearer {password()}"}
            conn.request("POST", "/v1/chat/completions", body, headers)
            answer = conn.getresponse()
            answer.read()
            conn.close()
            if answer.status == 429:
                heads.append({k.lower(): v for k, v in answer.getheaders()})
                break
    assert len(heads) == 2
    assert heads[0]["retry-after"] == "1"
    assert "retry-after" not in heads[1] and heads[1]["llm_provider-retry-after"] == "1"


def test_a_key_the_proxy_refuses_is_a_failed_read_in_its_words(stack):
    with reached(stack.target.url, stack.stub) as (done, dialect):
        dialect.signed_in({"Authorization": f"Bearer {WRONG_KEY}"}, WRONG_KEY)
        result = done.one("api_read")
    assert (result.outcome, result.status) == (FAILED, 401)
    assert result.detail == "HTTP 401 auth_error: Authentication Error: invalid key"


def test_a_cancelled_turn_leaves_the_model_stream_abandoned_straight_and_through_the_proxy(
    stub, stack
):
    for url, model in ((stub.url, stub), (stack.target.url, stack.stub)):
        with reached(url, model) as (_done, dialect):
            result = cancelled_turn(dialect, 7)
            run = dialect.agent_plan.run_key
        assert (result.outcome, result.tokens) == (CANCELLED, 1), result
        [call] = calls(model, run, 7)
        assert call["outcome"] == "abandoned", call


def test_a_responses_conversation_continues_by_the_last_response_id(stack):
    """The second turn names the first's response; LiteLLM without a database keeps no
    history to put behind it, so the stub sees one user turn each time (WIRE.md)."""
    conversation = Conversation()
    with reached(stack.target.url, stack.stub, "responses") as (_done, dialect):
        ids = []
        for index in (11, 12):
            attempt = Attempt(index, False, time.monotonic, time.monotonic, conversation)
            assert dialect.chat_turn(attempt, WAIT_S).outcome == OK
            ids.append(conversation.id)
        run = dialect.agent_plan.run_key
    assert ids[0] and ids[1] and ids[0] != ids[1]
    assert [calls(stack.stub, run, k)[0]["turns"] for k in (11, 12)] == ["1", "1"]


def _seed(url: str, fixture: Path, *args: str, key: str | None = None):
    env = {k: v for k, v in child_env().items() if k != "LOAD_PASSWORD"}
    if key is not None:
        env["LOAD_PASSWORD"] = key
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "loadkit",
            "seed",
            "--platform",
            "openai",
            "--api-url",
            url,
            "--fixture",
            str(fixture),
            *args,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_seed_refuses_bad_input_in_one_line_before_writing_anything(stub, stack, tmp_path):
    fixture = tmp_path / "fixture.json"
    cases = [
        (
            (f"{stub.url}/nothing",),
            None,
            f"seed: no /v1/models at {stub.url}/nothing (HTTP 404): is it an OpenAI-compatible",
        ),
        (
            (stub.url, "--api", "completions"),
            None,
            "seed: --api completions: not an API flavour the kit speaks; give one of chat",
        ),
        (
            (stub.url, "--api", "responses"),
            None,
            "seed: one answer from the Responses API ended failed: HTTP 404; the server does "
            "not serve the Responses API; seed with --api chat",
        ),
        (
            (stack.target.url,),
            None,
            "seed: GET /v1/models wants a key (HTTP 401): export LOAD_PASSWORD",
        ),
        (
            (stack.target.url,),
            WRONG_KEY,
            "seed: the server refused the key: HTTP 401 to GET /v1/models (auth_error: "
            "Authentication Error: invalid key); export LOAD_PASSWORD",
        ),
    ]
    for (url, *args), key, said in cases:
        done = _seed(url, fixture, *args, key=key)
        assert done.returncode == 1, done.stdout + done.stderr
        assert done.stderr.startswith(said) and done.stderr.count("\n") == 1, done.stderr
        assert not fixture.exists()
        assert WRONG_KEY not in done.stderr + done.stdout


def test_the_seed_keeps_no_key_and_names_what_it_found(stack):
    seeded = json.loads(stack.fixture.read_text())
    assert seeded["platform"] == "openai"
    assert seeded["seeded"] == {
        "model": "stub",
        "embedding_model": "stub",
        "api": "chat",
        "prefix": "/v1",
        "key": True,
    }
    assert password() not in stack.fixture.read_text()
    assert password() not in stack.target.output()


@pytest.fixture(scope="module")
def run(stack, tmp_path_factory) -> Path:
    """One short run of the repository's scenario through the proxy, at one step (the stack's
    scenario: a model has no agent)."""
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


def test_a_short_run_through_the_proxy_accounts_for_every_arrival(run):
    record = json.loads((run / "run.json").read_text())
    samples = read_samples(run)
    assert len(samples) == len({s["index"] for s in samples}) == record["offered"] > 0
    assert {s["workload"] for s in samples} == set(OFFERED)
    outcomes = Counter((s["workload"], s["outcome"]) for s in samples)
    bad = Counter(
        (s["workload"], s["detail"]) for s in samples if s["outcome"] not in (OK, CANCELLED)
    )
    assert not bad, bad
    assert outcomes["chat_stream", CANCELLED] > 0
    chats = [s for s in samples if s["workload"] == "chat_stream" and s["outcome"] == OK]
    assert chats and all(int(s["tokens"]) == 8 and s["ttft_ms"] for s in chats)
    rows = {int(r["arrival"]): r for r in read_table(run, STUB_CALLS)}
    for s in samples:
        if s["workload"] in ("agent_run", "chat_stream"):
            expected = "abandoned" if s["outcome"] == CANCELLED else "ok"
            assert rows[int(s["index"])]["outcome"] == expected, s
            assert rows[int(s["index"])]["reply"] == "answer"


def test_the_run_leaves_out_what_a_model_endpoint_does_not_offer(run):
    ran = ran_scenario(run)
    written = load_scenario()
    total = sum(w.share for w in written.workloads)
    kept = sum(w.share for w in written.workloads if w.name in OFFERED) / total
    for phase, stated in zip(ran.phases, written.phases, strict=True):
        assert phase.rate == pytest.approx(stated.rate * kept)
    offered = {w.name: w for w in ran.workloads}
    for name in ("ingest", "trigger_fire"):
        assert offered[name].share == 0
        assert offered[name].why.startswith("Not offered by openai: a model endpoint")


def test_a_scenario_of_agent_runs_in_steps_is_refused_before_load(stack, tmp_path):
    """The shipped scenario's agent runs take three steps; a model has no agent to take them."""
    done = subprocess.run(
        [*locust_command(stack, tmp_path / "run", SCALE), "--scenario", "scenario.yaml"],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert (
        "workloads.agent_run.steps: 3, but openai's agent is given no tool by the kit; give "
        "steps: 1" in done.stderr
    )
    assert not (tmp_path / "run").exists()
