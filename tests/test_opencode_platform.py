"""The real opencode serve (opencode-ai 1.18.33 from npm), started as the kit starts it.

One stack for the module (stub + platforms/opencode on loopback, seeded: the corpus
written into the project folder it serves) and one short run of the repository's
scenario: every offered arrival leaves one sample, each workload opencode serves is
answered as workloads/opencode/CONTRACT.md says, chat turns stream and cancel through
/abort, uploads and webhooks are shown as not offered by this platform and never
judged, no session ever holds a second message before its first is answered, and no
title call reaches the model. Beside it, the dialect against the same server: the
failure words, a timed-out turn's session aborted and never reused, the password
refused; and the launcher: basic auth on every route, its own environment with every
way out of 127.0.0.1 closed. ``make opencode-install`` installs opencode (.ci/run does
first); the module skips, saying why, only when that cannot install.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import gevent
import pytest
import yaml

from engine.agent_plan import AgentPlan
from engine.clock import RunClock
from engine.deadlines import Deadlines
from engine.dialect_kit import STOPPED_UNASKED
from engine.http import HttpCall
from engine.samples import CANCELLED, FAILED, OK, TIMEOUT
from engine.seam import Attempt, Conversation, DialectError
from engine.serve import serve
from inputs.fixture import load_fixture
from inputs.scenario import load_scenario, scenario_from_dict
from stack.demo import locust_command
from stack.generator_runs import ran_scenario, read_run, read_samples
from stack.local import PlatformUnavailable, StackOptions, child_env, password
from stack.opencode import basic_auth, ensure_opencode, start_stack
from stack.processes import ROOT
from tests.support.transport import signed_dialect
from workloads.opencode.dialect import OpenCode
from workloads.opencode.platform import PLATFORM

OFFERED = {"api_read", "chat_stream", "agent_run", "rag_query"}
NOT_OFFERED = {"ingest", "trigger_fire"}
# The repository's scenario at 4% of its length: about 14 s of load.
SCALE = 0.04
# A quick model whose 8 tokens take 0.7 s, so a cancel after the first lands mid-answer.
STUB_ARGS = ("--first-token-ms", "20", "--token-ms", "100", "--tokens", "8")
# Installing from cold, the load, the drain and the reports, on a busy 2-core machine.
RUN_TIMEOUT_S = 600
# Set in the stack's environment: opencode must not see it (its environment is made afresh).
LEAK = "LOADKIT_TEST_LEAK"
pytestmark = [pytest.mark.system, pytest.mark.slow, pytest.mark.timeout(2 * RUN_TIMEOUT_S)]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """One seeded stack for the whole module, with an outside proxy in its environment."""
    try:
        ensure_opencode()
    except PlatformUnavailable as exc:
        pytest.skip(f"opencode cannot install here: {exc}")
    base = tmp_path_factory.mktemp("opencode")
    options = StackOptions(
        workdir=base / "stack",
        documents=6,
        stub_args=STUB_ARGS,
        target_env={LEAK: "1", "HTTPS_PROXY": "http://203.0.113.9:3128"},
    )
    with start_stack(options) as started:
        yield started


@pytest.fixture(scope="module")
def run(stack, tmp_path_factory):
    """One finished run directory against the stack, the Locust result, its samples, and the
    stub's model calls before and after it."""
    run_dir = tmp_path_factory.mktemp("run") / "run"
    before = _model_calls(stack)
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
    return run_dir, result, samples, _model_calls(stack) - before


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _api(stack, path: str) -> object:
    status, _, body = _get(stack.target.url + path, basic_auth(password()))
    assert status == 200, (path, status, body[:200])
    return json.loads(body)


def _model_calls(stack) -> int:
    stats = json.loads(_get(stack.stub.url + "/stats")[2])
    return stats["requests"]["/v1/chat/completions"]


def _dialect(stack) -> OpenCode:
    """The dialect as a load process builds it, signed in."""
    dialect = signed_dialect(load_fixture(stack.fixture), stack.target.url, password())
    assert isinstance(dialect, OpenCode)
    return dialect


def _attempt(index: int, cancel: bool = False, conversation: Conversation | None = None) -> Attempt:
    return Attempt(index, cancel, time.monotonic, time.monotonic, conversation)


def _busy(stack, session: str) -> None:
    """Return once the server says ``session`` is running a turn."""
    deadline = time.monotonic() + 30
    while session not in _api(stack, "/session/status"):  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{session} never became busy"
        gevent.sleep(0.002)


def _messages(stack, session: str) -> list[dict]:
    return [m["info"] for m in _api(stack, f"/session/{session}/message")]  # type: ignore[union-attr]


# -- the run ----------------------------------------------------------------------------------


def test_every_offered_arrival_left_one_sample_and_each_workload_is_answered(run):
    run_dir, result, samples, _ = run
    summary = json.loads((run_dir / "summary.json").read_text())
    record = json.loads((run_dir / "run.json").read_text())
    assert result.returncode == summary["exit_code"]
    assert record["stopped"] == "completed"
    counts = summary["counts"]
    assert counts["offered"] == counts["recorded"] == record["offered"] == len(samples)
    assert counts["abandoned"] == 0
    assert {r["workload"] for r in samples} == OFFERED
    failed = Counter((r["workload"], r["detail"]) for r in samples if r["outcome"] != "ok")
    assert not {k: n for k, n in failed.items() if k[0] != "chat_stream"}, failed


def test_chat_turns_stream_their_tokens_and_cancel_through_abort(run):
    _, _, samples, _ = run
    chats = [r for r in samples if r["workload"] == "chat_stream"]
    assert {r["outcome"] for r in chats} == {OK, CANCELLED}, Counter(
        (r["outcome"], r["detail"]) for r in chats
    )
    assert all(int(r["tokens"]) == 8 for r in chats if r["outcome"] == OK)
    assert all(int(r["tokens"]) >= 1 for r in chats if r["outcome"] == CANCELLED)
    assert all(r["ttft_ms"] for r in chats)


def test_uploads_and_webhooks_are_not_offered_by_this_platform_and_never_judged(run):
    run_dir, _, _, _ = run
    shares = {w.name: w for w in ran_scenario(run_dir).workloads}
    for name in NOT_OFFERED:
        assert shares[name].share == 0
        assert shares[name].why.startswith("Not offered by opencode: it takes no")
    report = (run_dir / "report.md").read_text()
    rows = [line for line in report.splitlines() if line.startswith(("| ingest |", "| trigger"))]
    assert len(rows) == 2 and all("| not offered |" in r for r in rows), rows
    assert all("Not offered by opencode: it takes no" in r for r in rows), rows
    verdict = json.loads((run_dir / "summary.json").read_text())
    judged = json.dumps(verdict.get("thresholds", verdict))
    assert "ingest" not in judged and "trigger_fire" not in judged


def test_no_session_is_given_a_second_message_and_no_title_call_reaches_the_model(stack, run):
    """Each open arrival's turn ran in a fresh session of its own: one user message, then the
    assistant's answer to it, one assistant message per model call of the turn's loop (the
    shipped scenario's agent runs make 3, chat turns 1: issue 28); and the stub saw exactly
    those model calls (titled sessions, so no title call)."""
    run_dir, _, samples, model_calls = run
    scenario = load_scenario()
    turns = [r for r in samples if r["workload"] in ("chat_stream", "agent_run")]
    steps = {w: scenario.agent(w).steps for w in ("chat_stream", "agent_run")}
    sessions = _api(stack, "/session?limit=100000&search=loadkit%20" + read_run(run_dir)["run_id"])
    used = 0
    for session in sessions:  # type: ignore[union-attr]
        messages = _messages(stack, session["id"])
        if not messages:
            continue  # made ahead and never taken
        used += 1
        roles = [m["role"] for m in messages]
        assert roles[0] == "user" and set(roles[1:]) == {"assistant"}, messages
        assert len(roles) - 1 in set(steps.values()), messages
        assert messages[1]["parentID"] == messages[0]["id"]
    assert used == len(turns)
    assert model_calls == sum(steps[r["workload"]] for r in turns)


# -- the dialect against the same server ------------------------------------------------------


def test_an_agent_run_whose_turn_is_aborted_fails_in_the_servers_words(stack):
    dialect = _dialect(stack)
    attempt = _attempt(1)
    with dialect.exchange("agent_run", attempt) as call:
        session = call.path.split("/")[2]
        waiting = gevent.spawn(dialect.http.send, call)
        _busy(stack, session)
        dialect.http.send(
            HttpCall("POST", f"/session/{session}/abort", b"", basic_auth(password()))
        )
        answer = waiting.get(timeout=30)
    result = dialect.answer("agent_run", 1, answer.status, answer.body)
    assert (answer.status, result.outcome) == (200, FAILED)
    assert result.detail == "run error: MessageAbortedError: Aborted"


def test_a_search_that_finds_nothing_and_a_missing_session_fail_in_words(stack):
    dialect = _dialect(stack)
    empty = dialect.http.send(
        HttpCall("GET", "/find?pattern=zq-nothing-zq", b"", basic_auth(password()))
    )
    assert dialect.answer("rag_query", 0, empty.status, empty.body).detail == "no results"
    missing = dialect.http.send(
        HttpCall("GET", "/session/ses_none/message", b"", basic_auth(password()))
    )
    result = dialect.answer("agent_run", 0, missing.status, missing.body)
    assert result.outcome == FAILED
    assert result.detail == "HTTP 404: NotFoundError: Session not found: ses_none"


def test_a_chat_turn_stopped_by_someone_else_is_named_stopped_unasked(stack):
    dialect = _dialect(stack)
    conversation = Conversation()
    turn = gevent.spawn(dialect.chat_turn, _attempt(2, conversation=conversation), 30.0)
    while conversation.id is None:
        gevent.sleep(0.001)
    _busy(stack, conversation.id)
    abort = HttpCall("POST", f"/session/{conversation.id}/abort", b"", basic_auth(password()))
    dialect.http.send(abort)
    result = turn.get(timeout=30)
    assert (result.outcome, result.detail) == (FAILED, STOPPED_UNASKED)


def test_a_cancelled_turn_ends_cancelled_and_leaves_its_session_idle(stack):
    dialect = _dialect(stack)
    conversation = Conversation()
    result = dialect.chat_turn(_attempt(3, cancel=True, conversation=conversation), 30.0)
    assert result.outcome == CANCELLED and result.tokens >= 1
    assert conversation.id not in _api(stack, "/session/status")  # type: ignore[operator]


def test_a_timed_out_turns_session_is_aborted_and_never_given_another_message(stack):
    """A user whose turn timed out goes on in a new session: the old one got no message
    after the one that timed out, and the abort left it idle."""
    dialect = _dialect(stack)
    clock = RunClock(time.time())
    deadlines = Deadlines(clock)
    user = Conversation()

    def turn(index: int, timeout_s: float) -> str:
        return serve(
            dialect,
            dialect.http,
            clock,
            deadlines,
            "agent_run",
            index,
            False,
            timeout_s,
            lambda _: None,
            user,
        ).outcome

    assert turn(10, 30.0) == OK
    first = user.id
    assert first is not None
    assert turn(11, 0.01) == TIMEOUT
    assert user.id is None
    assert turn(12, 30.0) == OK
    assert user.id != first
    gevent.sleep(1.0)
    roles = [m["role"] for m in _messages(stack, first)]
    assert roles[:2] == ["user", "assistant"] and roles.count("user") <= 2, roles
    assert "user" not in roles[2:][1:], roles
    assert first not in _api(stack, "/session/status")  # type: ignore[operator]
    deadlines.close()


def test_a_three_step_turn_runs_the_loop_with_opencodes_read_tool_counted_at_the_stub(stack):
    """The kit's marker asks for 3 model calls: opencode runs its built-in read twice (the
    corpus file, relative to its project folder) and answers at the third, streamed or not."""
    raw = yaml.safe_load((ROOT / "scenario.yaml").read_text())
    for name in ("chat_stream", "agent_run"):
        raw["workloads"][name]["steps"] = 3
    dialect = _dialect(stack)
    run = f"loop-{time.time():.3f}"
    dialect.agent_plan = AgentPlan(run, scenario_from_dict(raw), PLATFORM.tool)
    clock = RunClock(time.time())
    deadlines = Deadlines(clock)
    outcomes = [
        serve(dialect, dialect.http, clock, deadlines, workload, k, False, 60.0, lambda _: None)
        for k, workload in ((20, "chat_stream"), (21, "agent_run"))
    ]
    deadlines.close()
    assert [r.outcome for r in outcomes] == [OK, OK], outcomes
    body = _get(f"{stack.stub.url}/calls?run={run}")[2]
    calls = list(csv.DictReader(body.decode().splitlines()))
    for k in ("20", "21"):
        mine = [(c["step"], c["reply"]) for c in calls if c["arrival"] == k]
        assert mine == [("1", "tool_calls"), ("2", "tool_calls"), ("3", "answer")], calls


def test_the_wrong_password_is_refused_at_sign_in_in_one_line(stack):
    fixture = load_fixture(stack.fixture)
    with pytest.raises(DialectError) as refused:
        signed_dialect(fixture, stack.target.url, password() + "x")
    assert str(refused.value) == (
        "opencode refused the credential: HTTP 401 to GET /session?limit=1; export LOAD_PASSWORD "
        "with the server's password (OPENCODE_SERVER_PASSWORD)"
    )


def test_what_opencode_does_not_offer_leaves_every_other_workload_at_its_rate(run):
    """The shipped scenario names no platform's shares: opencode's record says it offers no
    uploads nor webhooks, and the run offers every other workload at the rate the scenario
    states for it (each phase's rate times the 92% of the mix it serves)."""
    run_dir, _, _, _ = run
    written = load_scenario()
    assert all(not w.per_platform for w in written.workloads)
    ran = ran_scenario(run_dir)
    total = sum(w.share for w in written.workloads)
    kept = sum(w.share for w in written.workloads if w.name in OFFERED) / total
    for phase, stated in zip(ran.phases, written.phases, strict=True):
        assert phase.rate == pytest.approx(stated.rate * kept)
    for name in OFFERED:
        stated = next(w.share for w in written.workloads if w.name == name)
        rate = ran.phases[1].rate * ran.mix[name]
        assert rate == pytest.approx(written.phases[1].rate * stated / total)


# -- the launcher -----------------------------------------------------------------------------


def test_it_answers_as_the_pinned_version_with_the_password(stack):
    assert _api(stack, "/global/health") == {"healthy": True, "version": "1.18.33"}


@pytest.mark.parametrize("path", ["/global/health", "/session", "/doc"])
def test_every_route_refuses_without_the_password(stack, path):
    status, headers, _ = _get(stack.target.url + path)
    assert status == 401
    assert headers.get("www-authenticate", headers.get("WWW-Authenticate")).startswith("Basic")
    assert _get(stack.target.url + path, basic_auth(password() + "x"))[0] == 401


def test_it_runs_with_an_environment_of_its_own_that_reaches_only_loopback(stack):
    """The launcher became opencode (same PID) with nothing of ours: no operator variable,
    HOME under its state, the npm registry and every proxy at a closed loopback port."""
    raw = Path(f"/proc/{stack.target.pid}/environ").read_bytes().decode()
    environ = dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)
    assert "opencode-ai" in os.readlink(f"/proc/{stack.target.pid}/exe")
    assert LEAK not in environ
    state = str(stack.target.log.parent / "opencode-data")
    assert environ["HOME"].startswith(state)
    assert all(environ[k].startswith(state) for k in environ if k.startswith("XDG_"))
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "npm_config_registry"):
        assert environ[key] == "http://127.0.0.1:9/"
    assert environ["NO_PROXY"] == "127.0.0.1,localhost"
    assert environ["OPENCODE_DISABLE_MODELS_FETCH"] == "1"
    assert "downloading" not in stack.target.output()


def test_the_launcher_refuses_without_a_password_in_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OPENCODE_SERVER_PASSWORD"}
    done = subprocess.run(
        [sys.executable, "-m", "platforms.opencode", "--data-dir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "platforms.opencode: export OPENCODE_SERVER_PASSWORD (make opencode passes LOAD_PASSWORD)"
    ]
