"""The opencode reader's routing, held to a scripted hostile ``/event`` stream.

tests/support/scripted_events.py sends, once two turns wait on one subscription, a script of
interleaved events and frames that are not events: each turn is handed exactly its
session's events (by ``properties.sessionID``, never by the id's bytes elsewhere) and the
frames that are not events but name its session (which its own reading names ``bad
frame``), in order, and is told the stream ended in good order; a turn that comes after
opens a new subscription. The real opencode's side is tests/test_opencode_events.py.
"""

from __future__ import annotations

import time

import gevent
import pytest

from engine.dialect_kit import STREAM_ENDED
from engine.http import HttpCall
from tests.support.counting_server import started
from tests.support.scripted_events import EXPECTED
from tests.support.transport import transport
from workloads.opencode.dialect import refusal
from workloads.opencode.events import SessionEvents

# A turn that waits this long for the script has hung.
WITHIN_S = 30.0
pytestmark = [pytest.mark.system, pytest.mark.timeout(120)]


def test_each_waiting_turn_gets_its_sessions_events_and_the_frames_naming_it():
    with started("tests.support.scripted_events") as server:
        events = SessionEvents(transport(server.url), HttpCall("GET", "/event"), refusal)
        got: dict[str, list[bytes]] = {}
        joined: set[str] = set()

        def turn(session: str) -> str:
            with events.watching(session, WITHIN_S) as inbox:
                joined.add(session)
                got[session] = [event.data for event in inbox]
                return inbox.why

        turns = [gevent.spawn(turn, session) for session in EXPECTED]
        deadline = time.monotonic() + WITHIN_S
        while joined != set(EXPECTED):
            assert time.monotonic() < deadline, "the turns never waited on a live stream"
            gevent.sleep(0.01)
        assert server.counts("/go")["sent"] == 1
        gevent.joinall(turns, timeout=WITHIN_S)
        assert [t.value for t in turns] == [STREAM_ENDED] * len(EXPECTED)
        assert got == EXPECTED
        # The stream ended: the next turn opens another.
        late = gevent.spawn(turn, "ses_a")
        while server.counts()["streams"] < 2:
            assert time.monotonic() < deadline + WITHIN_S, "no second subscription"
            gevent.sleep(0.01)
        late.kill()
        events.close()
