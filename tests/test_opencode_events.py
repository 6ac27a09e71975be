"""The load process's one ``/event`` subscription against the real opencode serve (1.18.33).

A stack of its own (stub + platforms/opencode on loopback, seeded), reached through
tests/support/event_relay.py, a relay that passes everything to opencode and breaks its
event streams on cue: each turn gets every event of its session and nothing of another's
(held against a second, plain subscription's record of the same events); one subscription
serves every turn a process runs at once; a stream reset or closed under turns in flight
fails each of them, named as a turn's own broken stream was, none waiting out its timeout,
their sessions aborted, and the next turns subscribe again; a refused subscription is every
waiting turn's sample, in opencode's words; and a Locust run whose stream breaks mid-run
still records one sample per arrival. ``make opencode-install`` installs opencode; the
module skips, saying why, only when that cannot install.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import replace

import gevent
import gevent.event
import pytest

from engine.clock import RunClock
from engine.deadlines import Deadlines
from engine.dialect_kit import CONNECTION_CLOSED, CONNECTION_RESET
from engine.http import HttpCall, HttpTransport
from engine.samples import CANCELLED, FAILED, OK, Result
from engine.seam import Conversation
from engine.serve import serve
from engine.sse import Event
from inputs.fixture import load_fixture
from stack.generator_runs import read_samples, write_scenario
from stack.local import PlatformUnavailable, StackOptions, child_env, headless_command, password
from stack.opencode import basic_auth, ensure_opencode, start_stack
from stack.processes import ROOT
from tests.support.counting_server import CountingServer, started
from tests.support.transport import signed_dialect, transport
from workloads.opencode.dialect import OpenCode, refusal
from workloads.opencode.events import LINGER_S, SessionEvents

# A slow model: 8 tokens 250 ms apart, so a turn streams for about 2 s and a break lands in it.
STUB_ARGS = ("--first-token-ms", "20", "--token-ms", "250", "--tokens", "8")
# Turns run at once in each test: enough that their events interleave on one stream.
TURNS = 6
# A turn's timeout here; a turn that waits it out has hung.
TIMEOUT_S = 60.0
# How long every turn in flight may take to end once its stream broke: far below TIMEOUT_S.
BROKEN_WITHIN_S = 15.0
# Installing from cold, the load, the drain and the reports, on a busy 2-core machine.
RUN_TIMEOUT_S = 600
pytestmark = [pytest.mark.system, pytest.mark.slow, pytest.mark.timeout(2 * RUN_TIMEOUT_S)]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    try:
        ensure_opencode()
    except PlatformUnavailable as exc:
        pytest.skip(f"opencode cannot install here: {exc}")
    options = StackOptions(
        workdir=tmp_path_factory.mktemp("opencode-events") / "stack",
        documents=3,
        stub_args=STUB_ARGS,
    )
    with start_stack(options) as started_stack:
        yield started_stack


@pytest.fixture
def relay(stack) -> Iterator[CountingServer]:
    """A fresh relay in front of the stack's opencode (its counts start at nothing)."""
    with started("tests.support.event_relay", stack.target.url.removeprefix("http://")) as running:
        yield running


def _api(stack, path: str) -> object:
    request = urllib.request.Request(stack.target.url + path, headers=basic_auth(password()))
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def _busy(stack) -> set[str]:
    return set(_api(stack, "/session/status"))  # type: ignore[arg-type]


def _wait(what: str, done, within_s: float = 30.0) -> None:
    """Return once ``done()`` holds (a readiness check, never a fixed sleep)."""
    deadline = time.monotonic() + within_s
    while not done():
        assert time.monotonic() < deadline, f"{what} within {within_s:g} s"
        gevent.sleep(0.02)


def _dialect(stack, url: str) -> OpenCode:
    """The dialect as a load process builds it, signed in, speaking to ``url``."""
    dialect = signed_dialect(load_fixture(stack.fixture), url, password(), run_id="events")
    assert isinstance(dialect, OpenCode)
    return dialect


def _session_of(event: Event) -> str | None:
    properties = json.loads(event.data).get("properties")
    return properties.get("sessionID") if isinstance(properties, dict) else None


def _kind(data: bytes) -> str:
    return json.loads(data)["type"]


def _served(dialect: OpenCode, indexes: range, users: list[Conversation]) -> list[gevent.Greenlet]:
    """Chat turns ``indexes`` through ``serve``, as a load process runs them, each keeping
    its session in its own ``users`` conversation (so the test sees which session it ran in)."""
    clock = RunClock(time.time())
    deadlines = Deadlines(clock)
    return [
        gevent.spawn(
            serve,
            dialect,
            dialect.http,
            clock,
            deadlines,
            "chat_stream",
            k,
            False,
            TIMEOUT_S,
            lambda _: None,
            user,
        )
        for k, user in zip(indexes, users, strict=True)
    ]


def _results(turns: list[gevent.Greenlet], within_s: float) -> list[Result]:
    gevent.joinall(turns, timeout=within_s)
    assert all(turn.ready() for turn in turns), f"turns still waiting after {within_s:g} s"
    return [turn.get() for turn in turns]


def _new_session(http: HttpTransport, auth: dict[str, str], n: int) -> str:
    """A fresh session, titled as the dialect titles its own (so no title call is made)."""
    body = json.dumps({"title": f"loadkit events {n}"}).encode()
    headers = {**auth, "Content-Type": "application/json"}
    answer = http.send(HttpCall("POST", "/session", body, headers))
    assert answer.status == 200, answer
    return json.loads(answer.body)["id"]


def test_each_turn_gets_every_event_of_its_session_and_none_of_anothers(stack, relay):
    """Six turns at once on one subscription: each turn's events are exactly its session's, in
    the server's order, up to its session.idle, as a second subscription recorded them."""
    http = transport(stack.target.url)
    auth = basic_auth(password())
    seen: list[Event] = []
    live = gevent.event.Event()

    def record() -> None:
        call = HttpCall("GET", "/event", b"", {**auth, "Accept": "text/event-stream"})
        with http.stream(call, TIMEOUT_S) as answer:
            for event in answer.events():
                seen.append(event)
                live.set()

    recorder = gevent.spawn(record)
    assert live.wait(30), "the recording subscription never went live"
    dialect = _dialect(stack, relay.url)
    stream = HttpCall("GET", "/event", b"", {**auth, "Accept": "text/event-stream"})
    events = SessionEvents(transport(relay.url), stream, refusal)
    sessions = [_new_session(http, auth, n) for n in range(TURNS)]
    joined: set[str] = set()
    go = gevent.event.Event()

    def turn(session: str) -> list[bytes]:
        got: list[bytes] = []
        with events.watching(session, TIMEOUT_S) as inbox:
            joined.add(session)
            go.wait()
            assert http.send(_prompt(dialect, session, auth)).status == 204
            for event in inbox:
                got.append(event.data)
                if _kind(event.data) == "session.idle":
                    return got
        raise AssertionError(f"{session}: {inbox.why}")

    turns = [gevent.spawn(turn, session) for session in sessions]
    _wait("every turn waiting on the live stream", lambda: joined == set(sessions))
    # What came before the prompts (each session's creation) is on the record, not the turns'.
    _wait("every session's creation recorded", lambda: _recorded(seen, sessions, "session.created"))
    before = len(seen)
    go.set()
    gevent.joinall(turns, timeout=TIMEOUT_S, raise_error=True)
    events.close()
    got = dict(zip(sessions, (t.get() for t in turns), strict=True))
    _wait("every session.idle recorded", lambda: _recorded(seen, sessions, "session.idle"))
    recorder.kill()
    order = [_session_of(event) for event in seen[before:]]
    for session in sessions:
        mine = [event.data for event in seen[before:] if _session_of(event) == session]
        idle = next(i for i, data in enumerate(mine) if _kind(data) == "session.idle")
        assert got[session] == mine[: idle + 1], session
        deltas = [data for data in got[session] if _kind(data) == "message.part.delta"]
        assert len(deltas) == 8, session
        # The turns ran at once: another session's events came while this one streamed.
        first, last = order.index(session), len(order) - order[::-1].index(session)
        assert set(order[first:last]) - {session, None}, session
    assert relay.counts()["subscriptions"] == 1


def _prompt(dialect: OpenCode, session: str, auth: dict[str, str]) -> HttpCall:
    """``prompt_async`` as the dialect sends it: the seeded model, one text part."""
    model = {"providerID": dialect.seeded.provider_id, "modelID": dialect.seeded.model_id}
    body = json.dumps({"model": model, "parts": [{"type": "text", "text": "hello"}]}).encode()
    headers = {**auth, "Content-Type": "application/json"}
    return HttpCall("POST", f"/session/{session}/prompt_async", body, headers)


def _recorded(seen: list[Event], sessions: list[str], kind: str) -> bool:
    """Whether an event of ``kind`` was recorded for every one of ``sessions``."""
    return {_session_of(e) for e in seen if _kind(e.data) == kind} >= set(sessions)


def test_chat_turns_at_once_share_one_subscription(stack, relay):
    """The dialect's own turns, a third of them cancelled after the first token, all end as
    the server said, on one subscription, closed once it has idled for LINGER_S."""
    dialect = _dialect(stack, relay.url)
    clock = RunClock(time.time())
    deadlines = Deadlines(clock)
    turns = [
        gevent.spawn(
            serve,
            dialect,
            dialect.http,
            clock,
            deadlines,
            "chat_stream",
            k,
            k % 3 == 0,
            TIMEOUT_S,
            lambda _: None,
        )
        for k in range(2 * TURNS)
    ]
    results = _results(turns, TIMEOUT_S)
    assert {r.outcome for r in results} <= {OK, CANCELLED}, results
    assert all(r.tokens == 8 for r in results if r.outcome == OK), results
    assert sum(r.outcome == CANCELLED for r in results) >= 1, results
    assert relay.counts()["subscriptions"] == 1
    # With no turn waiting on it, the subscription is closed after LINGER_S.
    idle_since = time.monotonic()
    _wait("the idle subscription closed", lambda: relay.counts()["open"] == 0, LINGER_S + 10)
    assert time.monotonic() - idle_since >= LINGER_S - 0.5


@pytest.mark.parametrize(
    ("cue", "named"), [("/reset", CONNECTION_RESET), ("/close", CONNECTION_CLOSED)]
)
def test_a_broken_stream_fails_every_turn_in_flight_and_the_next_turns_subscribe_again(
    stack, relay, cue, named
):
    dialect = _dialect(stack, relay.url)
    users = [Conversation() for _ in range(TURNS)]
    turns = _served(dialect, range(TURNS), users)
    _wait("every turn's session taken", lambda: all(u.id is not None for u in users))
    sessions = {user.id for user in users}
    # Busy on the server: each turn's prompt went, so each is reading the stream.
    _wait("every turn's session busy", lambda: sessions <= _busy(stack))
    assert relay.counts(cue)["open"] == 0
    results = _results(turns, BROKEN_WITHIN_S)
    assert [(r.outcome, r.detail, r.status) for r in results] == [(FAILED, named, 200)] * TURNS
    # A turn that did not end as the server said has its session aborted.
    _wait("the broken turns' sessions aborted", lambda: not sessions & _busy(stack))
    later = _results(
        _served(dialect, range(TURNS, 2 * TURNS), [Conversation() for _ in users]), TIMEOUT_S
    )
    assert [(r.outcome, r.tokens) for r in later] == [(OK, 8)] * TURNS, later
    counts = relay.counts()
    assert counts["subscriptions"] == 2, counts


def test_a_refused_subscription_is_every_waiting_turns_sample_and_the_next_subscribes(stack, relay):
    """Three turns wait on one subscription the relay holds unanswered, then refuses: each
    turn's sample is the refusal, in opencode's words, and nothing was sent to its session."""
    dialect = _dialect(stack, relay.url)
    relay.counts("/hold")
    users = [Conversation() for _ in range(3)]
    turns = _served(dialect, range(3), users)
    # A turn waits on the stream as soon as its session is taken, without yielding between.
    _wait("every turn waiting on the stream", lambda: all(u.id is not None for u in users))
    _wait("the subscription held", lambda: relay.counts()["held"] == 1)
    relay.counts("/refuse")
    refused = _results(turns, TIMEOUT_S)
    words = "HTTP 503: UnknownError: relay refused"
    assert [(r.outcome, r.detail, r.status) for r in refused] == [(FAILED, words, 503)] * 3
    # Nothing was sent to those sessions: no message, nothing to abort.
    for user in users:
        assert _api(stack, f"/session/{user.id}/message") == []
    later = _results(_served(dialect, range(3, 4), [Conversation()]), TIMEOUT_S)
    assert [(r.outcome, r.tokens) for r in later] == [(OK, 8)]
    counts = relay.counts()
    assert (counts["subscriptions"], counts["refused"]) == (2, 1), counts


def test_a_run_whose_stream_breaks_mid_run_records_one_sample_per_arrival(stack, relay, tmp_path):
    """Chat turns only, 3 a second for 16 s through the relay; the stream is reset once turns
    are in flight. Every arrival leaves one sample; the failures are the reset turns, named;
    turns after them subscribed again and ended ok; no session is left busy."""
    scenario = write_scenario(
        tmp_path,
        [("steady", 16, 3)],
        workloads={"chat_stream": 1},
        chat_cancel_share=0.0,
        timeouts={"default_s": TIMEOUT_S, "chat_stream_s": TIMEOUT_S, "agent_run_s": TIMEOUT_S},
    )
    run_dir = tmp_path / "run"
    via = replace(stack, target=replace(stack.target, url=relay.url))
    run = subprocess.Popen(
        headless_command(via, scenario, run_dir),
        cwd=ROOT,
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait("three chat turns in flight", lambda: len(_busy(stack)) >= 3, RUN_TIMEOUT_S / 4)
        assert relay.counts("/reset")["reset"] == 1
        _, stderr = run.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert (run_dir / "summary.json").exists(), f"no report\n{stderr[-2000:]}"
    summary = json.loads((run_dir / "summary.json").read_text())
    samples = read_samples(run_dir)
    counts = summary["counts"]
    assert counts["offered"] == counts["recorded"] == len(samples) == 48, counts
    assert counts["abandoned"] == 0
    failed = [r for r in samples if r["outcome"] != OK]
    assert failed and {r["detail"] for r in failed} == {CONNECTION_RESET}, failed
    last_failed = max(int(r["index"]) for r in failed)
    assert any(int(r["index"]) > last_failed and r["outcome"] == OK for r in samples)
    assert relay.counts()["subscriptions"] >= 2
    _wait("no session left busy", lambda: not _busy(stack))
