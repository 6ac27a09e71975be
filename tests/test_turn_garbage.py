"""A turn leaves no garbage that only the collector frees, so load runs on young collections.

engine/collector.py never collects the older generations during load: what survives a
young collection (the turns in flight) is not walked again, since walking 10,000 open
turns stalled every one of them at once. That is only sound while a finished turn is
freed by its references alone; a turn that left a cycle would grow the process for the
length of the run. So: streamed turns over the kit's real load-process path against
bench/ws_server.py on 127.0.0.1, a run three times as long as another, Python's own
collections off (the kit's young ones on its clock still run): what a full collection
then finds is the run's fixed share, not the turns'.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from stack.processes import ROOT, free_port, wait_ready

pytestmark = pytest.mark.system

FIRST_TOKEN_MS = 200
IN_FLIGHT = 40

# A cycle a turn is at least two objects; what a short and a long run leave may differ by
# this many a turn (measured: under 0.1, ~1,600 objects a run however long it was).
GARBAGE_PER_TURN = 0.25


@pytest.fixture(scope="module")
def chat_server():
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "ws_server.py"), str(port), str(FIRST_TOKEN_MS)]
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url + "/health", server)
        yield url
    finally:
        server.terminate()
        server.wait()


@pytest.mark.parametrize("protocol", ["ws", "sse"])
def test_finished_turns_are_freed_without_the_collector(chat_server, protocol):
    measured = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.support.turn_garbage",
            chat_server,
            protocol,
            str(IN_FLIGHT),
            str(FIRST_TOKEN_MS),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert measured.returncode == 0, measured.stderr[-2000:]
    short, long = json.loads(measured.stdout.splitlines()[-1])
    assert long["turns"] >= 3 * short["turns"] - IN_FLIGHT
    extra = long["garbage"] - short["garbage"]
    assert extra < GARBAGE_PER_TURN * (long["turns"] - short["turns"]), (short, long)
