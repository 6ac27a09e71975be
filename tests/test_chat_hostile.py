"""A chat turn never lies: against a server breaking turns on purpose, failures equal faults.

The server (tests/support/hostile_chat_server.py, a real process) speaks the three dialects'
chat (the AgenticOS WebSocket, agno's and LangGraph's server-sent events) and counts what it
injects: connections closed before any answer, refused handshakes and runs,
resets and closes mid-turn, a stream ended before its final frame, a frame that
is not JSON, an error frame, a stop nobody asked for, a turn that never sends a
token, a redirect (named by its Location), and for the WebSocket an upgrade with
a wrong accept token or answered 200 (each named as the handshake's failure).
Each dialect's real ``chat_turn``, through the real dispatcher, must turn every
fault into exactly one failed (or timed-out) sample that says what happened, the
same words on both platforms where the fault is the same, and every good turn
into ``ok``, or ``cancelled`` when its stop was honoured.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from engine.clock import RunClock
from engine.dialect_kit import (
    BAD_FRAME,
    CONNECTION_CLOSED,
    CONNECTION_RESET,
    STOPPED_UNASKED,
    STREAM_ENDED,
)
from engine.dispatcher import Dispatcher
from engine.http import HttpTransport
from engine.http1 import CLOSED_BEFORE_STATUS
from engine.mix import Mix
from engine.samples import CANCELLED, FAILED, OK, TIMED_OUT, TIMEOUT
from engine.schedule import Plan
from engine.share import Share
from inputs.fixture import Fixture
from inputs.scenario import scenario_from_dict
from tests.support.counting_server import started
from tests.support.hostile_chat_server import AGENT, ELSEWHERE, PASSWORD, TOKENS_BEFORE
from tests.support.transport import dialect_at, signed_without_reach

pytestmark = pytest.mark.system

# The chat timeout: longer than a good turn (~0.8 s), short enough to keep the test short.
TIMEOUT_S = 3.0
RATE, SECONDS = 15.0, 3.0
# Each platform's own part of the fixture, as its seed would write it.
SEEDED = {
    "agenticos": {
        "org_id": "org",
        "agent_id": AGENT,
        "model_profile_id": "profile",
        "collection_name": "c",
        "documents": 0,
    },
    "agno": {"agent_id": AGENT, "collection_name": "c", "documents": 0},
    "langgraph": {"graph_id": AGENT, "namespace": "c", "documents": 0},
}
# What each injected fault must read as, by dialect; the same words where the fault is the same.
SAME = {
    "dropped": CLOSED_BEFORE_STATUS,
    "reset": CONNECTION_RESET,
    "closed": CONNECTION_CLOSED,
    "not_json": BAD_FRAME,
    "error": "error frame: hostile model failure",
    "stopped_unasked": STOPPED_UNASKED,
    "redirect": f"HTTP 302 to {ELSEWHERE}",
}
DETAILS = {
    "agenticos": {
        **SAME,
        "refused_500": "HTTP 500 internal_error: hostile refusal",
        "refused_401": "HTTP 401 unauthorized: token expired",
        "stream_ended": f"{STREAM_ENDED} (close 1011)",
        "bad_accept": "WebSocket handshake: bad Sec-WebSocket-Accept",
        "not_upgraded": "WebSocket handshake: status 200, not 101",
    },
    "agno": {
        **SAME,
        "refused_500": "HTTP 500: hostile refusal",
        "refused_401": "HTTP 401: Invalid authentication",
        "stream_ended": STREAM_ENDED,
    },
    "langgraph": {
        **SAME,
        "refused_500": "HTTP 500: hostile refusal",
        "refused_401": "HTTP 401: invalid x-api-key",
        "stream_ended": STREAM_ENDED,
        # Nothing in LangGraph's stream says a run stopped: a stream that ends without the
        # answer, unasked, is a stream ended, whatever stopped it.
        "stopped_unasked": STREAM_ENDED,
    },
}
DIALECTS = ("agenticos", "agno", "langgraph")


@pytest.fixture
def server():
    with started("tests.support.hostile_chat_server") as hostile:
        yield hostile


def _run(dialect, http: HttpTransport) -> tuple[list, Mix, int]:
    """Chat turns at RATE for SECONDS through the dispatcher: the samples, the mix, the offered."""
    raw = {
        "name": "hostile-chat",
        "workloads": {"chat_stream": 1},
        "chat_cancel_share": 0.5,
        "phases": [{"name": "p", "duration_s": SECONDS, "rate": RATE}],
        "timeouts": {"default_s": TIMEOUT_S, "chat_stream_s": TIMEOUT_S, "agent_run_s": TIMEOUT_S},
        "thresholds": [],
    }
    scenario = scenario_from_dict(raw)
    mix, samples = Mix.from_scenario(scenario), []
    dispatcher = Dispatcher(
        Share(
            slot=0,
            workers=1,
            plan=Plan.from_scenario(scenario),
            mix=mix,
            timeouts=scenario.timeouts,
            dialect=dialect,
            http=http,
            clock=RunClock(time.time() + 0.2),
            connections=100,
            on_sample=samples.append,
        )
    )
    dispatcher.start()
    # Room for a late silent turn on a busy machine; drain returns when the last turn ends.
    dispatcher.drain(SECONDS + 0.2 + 3 * scenario.timeouts.slowest_s)
    return samples, mix, sum(dispatcher.offered.values())


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_every_injected_chat_fault_is_one_failed_sample_named_by_what_happened(server, name):
    fixture = Fixture(api_url=server.url, stub_url="", platform=name, seeded=SEEDED[name])
    dialect = signed_without_reach(
        dialect_at(fixture, server.url, "hostile"), "loadkit@example.com", PASSWORD
    )
    samples, mix, offered = _run(dialect, dialect.http)
    counts = server.counts()
    outcomes = Counter((s.outcome, s.detail) for s in samples)

    # Every arrival left exactly one sample, and each reached the server as one turn.
    assert offered == len(samples) == len({s.index for s in samples}) == RATE * SECONDS
    assert counts["refused_auth"] == 0, counts
    assert sum(counts[kind] for kind in ("good", *DETAILS[name], "silent")) == len(samples)

    # One failed sample per injected fault, by kind, in the words the dialect must use.
    failed = Counter(s.detail for s in samples if s.outcome == FAILED)
    expected: Counter[str] = Counter()
    for kind, detail in DETAILS[name].items():
        expected[detail] += counts[kind]
    assert failed == expected, outcomes
    assert all(counts[kind] > 0 for kind in DETAILS[name]), counts

    # A turn that never sends a token ends at the chat timeout from its send, not later.
    timed_out = [s for s in samples if s.outcome == TIMEOUT]
    assert len(timed_out) == counts["silent"] > 0, outcomes
    for s in timed_out:
        assert s.detail == TIMED_OUT and s.tokens == 0, s
        assert TIMEOUT_S - 0.05 <= s.finished_s - s.sent_s < 2 * TIMEOUT_S, s
    assert counts["faults"] == len(timed_out) + sum(failed.values())

    # Good turns: ok when completed, cancelled when the server honoured the stop; a stop
    # that arrived after the turn completed leaves it ok, and the server saw it late.
    ok = [s for s in samples if s.outcome == OK]
    cancelled = [s for s in samples if s.outcome == CANCELLED]
    assert len(ok) == counts["completed"] and len(cancelled) == counts["cancelled"] > 0
    assert all(mix.cancels(s.index) for s in cancelled)
    assert sum(mix.cancels(s.index) for s in ok) == counts["stop_late"], counts
    assert len(ok) + len(cancelled) + len(timed_out) + sum(failed.values()) == len(samples)

    # A turn that broke after its tokens says how far it got (a reset may lose what was
    # in flight), and time to first token is there exactly when a token came.
    for kind in ("closed", "stream_ended", "error"):
        detail = DETAILS[name][kind]
        got = Counter(s.tokens for s in samples if s.detail == detail)
        want: Counter[int] = Counter()
        for other, words in DETAILS[name].items():
            if words == detail:
                want[TOKENS_BEFORE.get(other, 0)] += counts[other]
        assert got == want, (kind, got)
    for s in samples:
        assert (s.ttft_ms is None) == (s.tokens == 0), s
        if s.outcome in (OK, CANCELLED):
            assert s.tokens > 0 and 0 <= s.ttft_ms <= (s.finished_s - s.sent_s) * 1000, s
