"""The transport never lies: against a server that misbehaves on purpose, failures equal faults.

The server (tests/support/hostile_server.py, a real process) counts what it
injects: resets mid-request, connections closed before the status line, bad
status lines, a 500 whose keep-alive connection is then reset (uvicorn's way
after an unhandled 500); and for the real AgenticOS dialect's list reads, 2xx
bodies of the wrong shape, answers of 50 MB however framed, one announcing 10 TB,
a redirect. Every injected fault must be exactly one failed sample named by what
happened (a reset after the platform's 500 in those words, apart from a reset out
of the blue), none hidden by a re-send and none invented; a keep-alive connection
the server closed while idle is replaced before anything is written, never failed.
"""

from __future__ import annotations

import gzip
import resource
import time
import zlib
from collections import Counter

import gevent
import gevent.pool
import pytest

from engine.clock import RunClock
from engine.dispatcher import Dispatcher
from engine.http import RESET_AFTER_5XX, HttpCall, HttpTransport
from engine.http1 import (
    BAD_CHUNK,
    BAD_STATUS_LINE,
    CLOSED_BEFORE_STATUS,
    CLOSED_IN_BODY,
    HEAD_OVER,
    LENGTH_NEGATIVE,
    LENGTH_NOT_A_NUMBER,
    LENGTH_TWICE,
    READ_CHUNK,
    UNASKED_UPGRADE,
    Answer,
    ExchangeError,
)
from engine.mix import Mix
from engine.samples import classify
from engine.schedule import Plan
from engine.seam import Attempt, Deployment, Dialect
from engine.share import Share
from engine.sse import Event
from engine.websocket import FrameError, PeerClosed, WebSocket
from inputs.fixture import Fixture
from inputs.scenario import scenario_from_dict
from tests.support.counting_server import started
from tests.support.hostile_server import (
    BODY,
    CLOSES,
    GZIP_BOMB,
    HUGE,
    OVERSIZED,
    SIGN_IN,
    gzip_bomb,
)
from tests.support.transport import MAX_BODY, dialect_at, signed_without_reach, transport

pytestmark = pytest.mark.system

# An AgenticOS deployment's fixture, as the seed writes it (its part names the ids it uses).
FIXTURE = Fixture(
    api_url="http://127.0.0.1",
    stub_url="",
    seeded={
        "org_id": "org",
        "agent_id": "agent",
        "model_profile_id": "profile",
        "collection_name": "c",
        "documents": 0,
    },
)


# What each answer the contract forbids must read as (the bound: the scenario's default 8 MiB).
ANSWER_WORDS = {
    "wrong_types": "bad body: items is str, not array",
    "nested": "bad body: no items",
    "array": "bad body: not an object",
    "total_text": "bad body: total is str, not int",
    "oversized_length": f"body over 8 MiB (Content-Length {OVERSIZED})",
    "oversized_chunked": f"body over 8 MiB ({MAX_BODY + 1} read)",
    "oversized_close": f"body over 8 MiB ({MAX_BODY + 1} read)",
    "huge_length": f"body over 8 MiB (Content-Length {HUGE})",
    "redirect": f"HTTP 302 to {SIGN_IN}",
}


@pytest.fixture
def server():
    with started("tests.support.hostile_server") as hostile:
        yield hostile


class _Reads(Dialect):
    """A dialect of one workload: GET a fixed path (the same HttpCall object every time)."""

    def __init__(self, http: HttpTransport, path: str):
        super().__init__(Deployment(FIXTURE, None, FIXTURE.api_url, "hostile"), http)
        self._call = HttpCall("GET", path, b"", {"Accept": "application/json"})

    def call(self, workload: str, k: int) -> HttpCall:
        return self._call

    def chat_turn(self, attempt: Attempt, timeout_s: float):
        raise AssertionError("no chat here")


def _run(dialect: Dialect, rate: float, seconds: float) -> list:
    raw = {
        "name": "hostile",
        "workloads": {"api_read": 1},
        "phases": [{"name": "p", "duration_s": seconds, "rate": rate}],
        "timeouts": {"default_s": 5, "chat_stream_s": 5, "agent_run_s": 5},
        "thresholds": [],
    }
    scenario = scenario_from_dict(raw)
    samples = []
    dispatcher = Dispatcher(
        Share(
            slot=0,
            workers=1,
            plan=Plan.from_scenario(scenario),
            mix=Mix.from_scenario(scenario),
            timeouts=scenario.timeouts,
            dialect=dialect,
            http=dialect.http,
            clock=RunClock(time.time() + 0.2),
            connections=50,
            on_sample=samples.append,
        )
    )
    dispatcher.start()
    dispatcher.drain(seconds + 0.2 + scenario.timeouts.slowest_s)
    return samples


def test_every_injected_fault_is_one_failed_sample_and_no_other_fails(server):
    http = transport(server.url)
    samples = _run(_Reads(http, "/mixed"), rate=120.0, seconds=3.0)
    counts = server.counts()
    assert len(samples) == 360 == len({s.index for s in samples})
    failed = Counter(s.detail for s in samples if s.outcome == "failed")
    ok = [s for s in samples if s.outcome == "ok"]
    assert len(ok) + sum(failed.values()) == len(samples), Counter(s.outcome for s in samples)
    # One for one, by kind: nothing re-sent (which would hide a fault), nothing invented.
    assert failed["ConnectionResetError"] == counts["reset"] > 0, (failed, counts)
    assert failed[CLOSED_BEFORE_STATUS] == counts["close_before_status"] > 0, (failed, counts)
    assert failed[BAD_STATUS_LINE] == counts["bad_status"] > 0, (failed, counts)
    assert failed["HTTP 500"] == counts["error_500"] > 0, (failed, counts)
    after_500 = RESET_AFTER_5XX.format(status=500)
    assert after_500 == "connection reset after the platform's HTTP 500 on this connection"
    assert failed[after_500] == counts["reset_after_500"] > 0, (failed, counts)
    assert sum(failed.values()) == counts["faults"], (failed, counts)
    # And the server answered every request it got exactly once: no request reached it twice.
    assert counts["length"] + counts["chunked"] + counts["close_after"] == len(ok)
    assert all(s.status == 200 and s.bytes == 25 for s in ok)


def test_each_misshapen_oversized_or_redirected_answer_is_one_failed_sample_on_time(server):
    """The real AgenticOS dialect's list reads, answered as ANSWERS says: 50 MB answers among
    them cost one failed sample each, read no further than the bound, and the run stays on
    time (at most 1% of arrivals later than the scenario's default 100 ms)."""
    dialect = dialect_at(FIXTURE, server.url, "hostile")
    signed_without_reach(dialect, "loadkit@example.com", "hostile")
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    samples = _run(dialect, rate=120.0, seconds=3.0)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
    counts = server.counts()
    assert len(samples) == 360 == len({s.index for s in samples})
    failed = Counter(s.detail for s in samples if s.outcome == "failed")
    expected = Counter()
    for kind, detail in ANSWER_WORDS.items():
        assert counts[kind] > 0, counts
        expected[detail] += counts[kind]
    assert failed == expected, (failed, counts)
    assert sum(failed.values()) == counts["answer_faults"]
    ok = [s for s in samples if s.outcome == "ok"]
    assert len(ok) == counts["page"] == len(samples) - sum(failed.values())
    assert {s.status for s in samples if s.detail.startswith("HTTP 302")} == {302}
    # On time while it happened, and no answer was held whole (each is 50 MB).
    late = [s for s in samples if s.sent_s - s.due_s > 0.1]
    assert len(late) <= 0.01 * len(samples), sorted(s.sent_s - s.due_s for s in late)[-5:]
    assert grown_mib < 50, grown_mib


def test_a_connection_closed_while_idle_is_replaced_before_writing_not_failed(server):
    http = transport(server.url)
    call = HttpCall("GET", "/slow?ms=200")
    pool = gevent.pool.Pool(5)

    def five_at_once() -> list:
        answers = pool.map(lambda _: http.send(call), range(5))
        return [classify(a.status, len(a.body)) for a in answers]

    assert [r.outcome for r in five_at_once()] == ["ok"] * 5
    assert http.stats.opened == 5 and http.stats.open_now == 5
    # The server closes all five after its 1 s idle time (FIN), within our 4 s idle age.
    server.wait_for("idle_closed", 5)
    again = five_at_once()
    assert [r.outcome for r in again] == ["ok"] * 5
    assert http.stats.reconnects == 5 and http.stats.opened == 10
    assert server.counts()["length"] == 10
    http.close()
    assert http.stats.open_now == 0


def test_bytes_on_an_idle_connection_are_an_answer_to_nothing_and_it_is_not_reused(server):
    """The liveness check's readable branch: what lies unread on an idle plain connection is
    never taken for the next request's answer."""
    http = transport(server.url)
    assert http.send(HttpCall("GET", "/case/stray_after_answer")) == Answer(200, BODY)
    # The stray answer is on the client's socket once the server has sent it (loopback).
    server.wait_for("sent stray_after_answer", 1)
    assert http.send(HttpCall("GET", "/ok")) == Answer(200, BODY)
    assert http.stats.opened == 2 and http.stats.open_now == 1
    http.close()


def test_connections_idle_past_the_idle_age_are_retired_not_reused(server):
    http = transport(server.url, idle_s=0.3)
    call = HttpCall("GET", "/ok")
    assert http.send(call)[0] == 200
    gevent.sleep(0.5)
    assert http.send(call)[0] == 200
    assert (http.stats.retired_idle, http.stats.reconnects, http.stats.opened) == (1, 0, 2)
    assert server.counts()["idle_closed"] == 0


def test_trimming_closes_the_oldest_idle_connections_and_keeps_the_newest(server):
    http = transport(server.url)
    assert http.prepare(6) == 6
    newest = [c.sock for c in http._idle[-2:]]
    http.trim_idle(2)
    assert http.stats.open_now == 2 and http.stats.retired_idle == 4
    assert [c.sock for c in http._idle] == newest
    http.trim_idle(-3)
    assert http.stats.open_now == 0 and http.stats.retired_idle == 6
    # Nothing was written to a trimmed connection: the next request opens its own.
    assert http.send(HttpCall("GET", "/ok"))[0] == 200
    assert http.stats.opened == 7


def test_prepared_connections_are_open_before_the_first_request(server):
    http = transport(server.url)
    assert http.prepare(4) == 4
    assert http.stats.open_now == 4
    assert http.send(HttpCall("GET", "/ok"))[0] == 200
    assert http.stats.opened == 4


# What each answer of the server's CASES must read as, through either reader: the body, or
# the failure named. A good answer must also leave its connection in step for the next.
FRAMING = {
    "length_negative": LENGTH_NEGATIVE,
    "length_not_a_number": LENGTH_NOT_A_NUMBER,
    "length_twice": LENGTH_TWICE,
    "length_twice_alike": BODY,
    "head_over_bound": HEAD_OVER,
    "interim_100": BODY,
    "interim_103_twice": BODY,
    "unasked_101": UNASKED_UPGRADE,
    "chunk_cut_short": CLOSED_IN_BODY,
    "chunk_longer_than_said": BAD_CHUNK,
    "chunk_size_signed": BAD_CHUNK,
    "chunk_extensions_trailers": BODY,
    "chunked_and_length": BODY,
    "transfer_gzip": "unsupported Transfer-Encoding: gzip",
    "dribbled_head": BODY,
    # Content-Encoding undone, the bound held on the decoded bytes.
    "gzip": BODY,
    "gzip_chunked": BODY,
    "x_gzip": BODY,
    "gzip_members": BODY,
    "gzip_twice": BODY,
    "gzip_two_lines": BODY,
    "deflate": BODY,
    "deflate_raw": BODY,
    "br": BODY,
    "gzip_bomb": "gzip body over 8 MiB decoded",
    "gzip_bomb_two_layers": "gzip body over 8 MiB decoded",
    "br_bomb": "br body over 8 MiB decoded",
    "unknown_coding": "unknown Content-Encoding: compress",
    "gzip_cut_short": "gzip body cut short",
    "gzip_not_gzip": "bad gzip body (Error -3 while decompressing data: incorrect header check)",
}


@pytest.fixture(scope="module")
def cases():
    """One hostile server for every framing case (each case asks for its own answer)."""
    with started("tests.support.hostile_server") as hostile:
        yield hostile


def _read_as(read) -> bytes | str:
    """The body ``read`` returns, or the failure it raised, named as a sample names it."""
    try:
        return read()
    except ExchangeError as exc:
        return exc.detail


@pytest.mark.parametrize("name", sorted(FRAMING))
def test_each_framing_and_coding_reads_alike_through_the_pooled_and_streamed_reader(cases, name):
    http = transport(cases.url)
    call = HttpCall("GET", f"/case/{name}")
    pooled = _read_as(lambda: http.send(call, timeout_s=10).body)

    def streamed() -> bytes:
        with http.stream(call, socket_timeout_s=10) as answer:
            return answer.read()

    assert pooled == _read_as(streamed) == FRAMING[name]
    if FRAMING[name] == BODY and name not in CLOSES:
        # In step: the next answer on the same connection is read as itself.
        assert http.send(HttpCall("GET", "/ok"), timeout_s=10) == Answer(200, BODY)
        assert http.stats.opened == 1
    assert cases.counts()[name] == 2
    http.close()


def test_websocket_upgrades_read_past_interim_answers_and_name_what_breaks(cases):
    http = transport(cases.url)
    ws_url = cases.url.replace("http://", "ws://")

    def opened(name: str) -> WebSocket:
        return WebSocket.open(http, f"{ws_url}/ws/{name}", [], 10.0)

    # Interim answers before the 101 read past; a close with 1011 mid-answer told apart.
    for name, code in (("interim", 1000), ("close_1011", 1011)):
        ws = opened(name)
        assert ws.receive() == "hello"
        with pytest.raises(PeerClosed) as closed:
            ws.receive()
        assert closed.value.code == code
        ws.close()
    ws = opened("big_frame")
    with pytest.raises(FrameError) as broken:
        ws.receive()
    assert str(broken.value).startswith(f"frame over 8 MiB ({MAX_BODY + 1}"), broken.value
    assert ws.received <= MAX_BODY + READ_CHUNK
    ws.close()
    ws = opened("masked")
    with pytest.raises(FrameError) as broken:
        ws.receive()
    assert str(broken.value).startswith("bad frame: "), broken.value
    ws.close()
    with pytest.raises(ExchangeError) as refused:
        opened("refused_negative")
    assert refused.value.detail == LENGTH_NEGATIVE


def test_requests_ask_for_gzip_as_real_clients_do_and_identity_when_told(cases):
    before = cases.counts()
    assert transport(cases.url).send(HttpCall("GET", "/case/gzip"), timeout_s=10).body == BODY
    told = transport(cases.url, accept_encoding="identity")
    assert told.send(HttpCall("GET", "/case/interim_100"), timeout_s=10).body == BODY
    after = cases.counts()
    assert after["asked gzip"] - before["asked gzip"] == 1
    assert after["asked identity"] - before["asked identity"] == 1
    with pytest.raises(ValueError, match="'zstd' is not a coding the kit decodes"):
        transport(cases.url, accept_encoding="gzip, zstd")


@pytest.mark.slow
def test_the_bombs_are_what_they_say_small_as_sent_and_huge_decoded():
    """The answers the bound is tried on: about 1 MB of gzip that decodes to 1 GiB, and the
    same again in a second layer of about 2 KB."""
    bomb = gzip_bomb()
    assert len(bomb) < 1.1e6 and len(gzip.compress(bomb)) < 3000
    inflate, decoded, data = zlib.decompressobj(31), 0, bomb
    while data or not inflate.eof:
        decoded += len(inflate.decompress(data, 64 << 20))
        data = inflate.unconsumed_tail
    assert decoded == GZIP_BOMB == 1 << 30


def test_a_gzip_event_stream_yields_each_event_as_it_arrives(cases):
    http = transport(cases.url)
    with http.stream(HttpCall("GET", "/case/gzip_events_held"), socket_timeout_s=10) as answer:
        # The stream stays open: an event held back until its end would time out here.
        assert next(answer.events()) == Event("token", b"one")
        assert answer.received == len(b"event: token\ndata: one\n\n")
