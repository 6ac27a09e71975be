"""What A2A says went wrong is one failed sample each, named, and bad input is refused before load.

The server (tests/support/hostile_a2a_server.py, a real process) speaks JSON-RPC 1.0 as
a2a-sdk does and answers each message by a script its arrival index chooses, counting
what it did. One run through the kit's whole path (the real seed writes the fixture
from the server's card, the real A2A dialect signs in as a load process does and the
real dispatcher offers chat turns, agent runs and list reads) meets every case, and
every offered arrival must leave exactly one sample, each exactly the outcome and the
words workloads/a2a/CONTRACT.md gives its case (a state going backwards, a stream closed
mid-answer without a terminal state, an SSE error event, a task failed mid-answer,
rejected or waiting for input, a JSON-RPC error in the stream or as the answer, a bad
frame, a task stopped unasked, one JSON body where a stream was asked for, an HTTP 500),
counted one for one against the server's counts. Cancels are confirmed with GetTask:
carried out (cancelled), accepted and not carried out (named), refused (named as the
cancel's); a cancel too late (-32002) leaves the turn as it ended, also when the turn
ended in a fault after its first token.

Then the seed against each card the kit must refuse: no card at either well-known path,
a card without the interface --binding asks for, a protocol version the kit does not
speak, a key the card declares and none given, a key the server refuses, a card that
itself needs a key: one line on stderr naming what and the fix, exit 1, no fixture.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from engine.clock import RunClock
from engine.dialect_kit import BAD_FRAME, STOPPED_UNASKED, STREAM_ENDED
from engine.dispatcher import Dispatcher
from engine.mix import Mix
from engine.samples import CANCELLED, FAILED, OK
from engine.schedule import Plan
from engine.share import Share
from inputs.fixture import PASSWORD_ENV, load_fixture
from inputs.scenario import scenario_from_dict
from stack.processes import ROOT
from tests.support import hostile_a2a_server as hostile
from tests.support.counting_server import started
from tests.support.transport import signed_dialect
from workloads.answers import NOT_JSON

pytestmark = pytest.mark.system

# 100 arrivals: enough that the mix and the cancel share (both a pure function of the index,
# engine/mix.py) put every case on a turn that cancels and on one that does not, in one run.
RATE, SECONDS = 25.0, 4.0
MIX = {"chat_stream": 0.7, "agent_run": 0.2, "api_read": 0.1}
CANCEL_SHARE = 0.5
# Longer than the slowest turn (~0.6 s), short enough that a hung turn fails the test quickly.
TIMEOUT_S = 5.0
SEED_TIMEOUT_S = 30.0

# Each case as the dialect must name it (CONTRACT.md's table), in the server's own words.
STREAM_FAILS = {
    "backwards": "state went backwards: completed then working",
    "stream_ended": STREAM_ENDED,
    "error_event": f"error event: {hostile.ERROR_EVENT_SAYS}",
    "failed": f"task failed: {hostile.FAILED_SAYS}",
    "rejected": f"task rejected: {hostile.REJECTED_SAYS}",
    "input_required": f"task input-required: {hostile.INPUT_SAYS}",
    "rpc_error": f"A2A -32603 internal error: {hostile.INTERNAL_SAYS}",
    "bad_frame": f"{BAD_FRAME} ({NOT_JSON})",
    "not_streamed": f"not streamed: A2A -32004 unsupported operation: {hostile.UNSUPPORTED_SAYS}",
    "not_streamed_task": "not streamed: application/json",
    "canceled_unasked": STOPPED_UNASKED,
}
SEND_FAILS = {
    "send_failed": f"task failed: {hostile.TOOL_FAILED_SAYS}",
    "send_not_found": f"A2A -32001 task not found: {hostile.NOT_FOUND_SAYS}",
    "send_version": f"A2A -32009 version not supported: {hostile.VERSION_SAYS}",
    "send_500": "HTTP 500",
}
# What a cancelled turn of each cancel case becomes (good's is cancelled, or ok if too late).
NOT_CARRIED_OUT = "cancel accepted, not carried out: the task completed"
CANCEL_REFUSED = f"cancel: A2A -32001 task not found: {hostile.NOT_FOUND_SAYS}"


def run_seed(url: str, fixture: Path, *args: str, key: str | None) -> subprocess.CompletedProcess:
    """``python -m workloads.seed --platform a2a`` against ``url``, LOAD_PASSWORD as ``key``
    (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != PASSWORD_ENV}
    if key is not None:
        env[PASSWORD_ENV] = key
    command = [sys.executable, "-m", "workloads.seed", "--platform", "a2a", "--api-url", url]
    return subprocess.run(
        [*command, "--stub-url", "http://127.0.0.1:9", "--fixture", str(fixture), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=SEED_TIMEOUT_S,
    )


def case_of(workload: str, k: int) -> str:
    """The script the server runs for arrival k of ``workload`` (the list read has one)."""
    if workload == "chat_stream":
        return hostile.STREAM_CASES[k % len(hostile.STREAM_CASES)]
    if workload == "agent_run":
        return hostile.SEND_CASES[k % len(hostile.SEND_CASES)]
    return workload


def expected(case: str, cancels: bool) -> tuple[set[tuple[str, str]], int | None]:
    """The outcomes and details a sample of ``case`` may have, and its tokens (None: any)."""
    if case in STREAM_FAILS:
        return {(FAILED, STREAM_FAILS[case])}, hostile.TOKENS_BEFORE.get(case, 0)
    if case in SEND_FAILS:
        return {(FAILED, SEND_FAILS[case])}, 0
    if case in ("send_completed", "api_read"):
        return {(OK, "")}, 0
    if not cancels:
        return {(OK, "")}, 1 if case == "cancel_late" else hostile.GOOD_TOKENS
    if case == "good":
        # Cancelled after its first token; ok when the cancel arrived after the turn ended.
        return {(CANCELLED, ""), (OK, "")}, None
    if case == "cancel_ignored":
        return {(FAILED, NOT_CARRIED_OUT)}, hostile.GOOD_TOKENS
    if case == "cancel_refused":
        return {(FAILED, CANCEL_REFUSED)}, 1
    return {(OK, "")}, 1  # cancel_late: -32002, the turn as it ended


def _run(dialect) -> tuple[list, Mix, int]:
    """Arrivals of MIX at RATE for SECONDS through the dispatcher: the samples, the mix, the
    number offered."""
    raw = {
        "name": "hostile-a2a",
        "workloads": MIX,
        "chat_cancel_share": CANCEL_SHARE,
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
            http=dialect.http,
            clock=RunClock(time.time() + 0.2),
            connections=100,
            on_sample=samples.append,
        )
    )
    dispatcher.start()
    # drain returns when the last arrival ends; the bound only stops a hung one.
    dispatcher.drain(SECONDS + 0.2 + 3 * scenario.timeouts.slowest_s)
    return samples, mix, sum(dispatcher.offered.values())


def test_every_a2a_failure_is_one_failed_sample_named_and_each_cancel_confirmed(tmp_path):
    with started("tests.support.hostile_a2a_server", "--card", "key") as server:
        # The fixture as the seed writes it from the card (bearer key declared), then the
        # dialect signed in as a load process signs in (the credential check is a GetTask).
        path = tmp_path / "fixture.json"
        seeded = run_seed(server.url, path, key=hostile.PASSWORD)
        assert seeded.returncode == 0, seeded.stderr
        fixture = load_fixture(path)
        assert fixture.seeded["key_header"] == "Authorization", fixture.seeded
        dialect = signed_dialect(fixture, server.url, hostile.PASSWORD, run_id="hostile")
        before = server.counts()
        samples, mix, offered = _run(dialect)
        counts = server.counts()
        counts.subtract(before)
    dialect.http.close()

    # Every arrival left exactly one sample; nothing the kit sent was refused or misshapen.
    assert offered == len(samples) == len({s.index for s in samples}) == RATE * SECONDS
    assert counts["refused_auth"] == counts["bad_request"] == 0, counts

    # Each sample is exactly what its case must become, in the contract's words.
    cases: Counter[str] = Counter()
    cancelled_on: Counter[str] = Counter()
    for s in samples:
        case, cancels = case_of(s.workload, s.index), mix.cancels(s.index)
        cases[case] += 1
        if s.workload == "chat_stream" and cancels:
            cancelled_on[case] += 1
        outcomes, tokens = expected(case, cancels and s.workload == "chat_stream")
        assert (s.outcome, s.detail) in outcomes, (case, cancels, s)
        if tokens is not None:
            assert s.tokens == tokens, (case, cancels, s)
        assert (s.ttft_ms is None) == (s.tokens == 0), s

    # The run met every case; every streamed one on a turn that did not cancel, and those
    # with text before their end (the cancel cases, the faults mid-answer) on one that did.
    every = (*hostile.STREAM_CASES, *hostile.SEND_CASES, "api_read")
    assert all(cases[case] > 0 for case in every), cases
    assert all(cases[case] > cancelled_on[case] for case in hostile.STREAM_CASES), cancelled_on
    with_text = (*hostile.CANCEL_CASES, *hostile.TOKENS_BEFORE)
    assert all(cancelled_on[case] > 0 for case in with_text), cancelled_on

    # One for one with what the server says it did: each case begun once per sample...
    for case in set(every) - {"api_read"}:
        assert counts[case] == cases[case], (case, counts)
    assert counts["listed"] == cases["api_read"], counts
    # ...each failure one failed sample, by the words its case must have...
    failed = Counter(s.detail for s in samples if s.outcome == FAILED)
    want: Counter[str] = Counter()
    for case, detail in {**STREAM_FAILS, **SEND_FAILS}.items():
        want[detail] += counts[case]
    want[NOT_CARRIED_OUT] += counts["ignored"]
    want[CANCEL_REFUSED] += counts["refused_cancel"]
    assert failed == want, Counter((s.outcome, s.detail) for s in samples)

    # ...and each cancel as the server answered it: carried out (cancelled, confirmed by
    # GetTask), accepted and not carried out, refused, or too late (the turn as it ended:
    # cancel_late's, a mid-stream fault's, a good turn's that finished first).
    ok = [s for s in samples if s.outcome == OK]
    cancelled = [s for s in samples if s.outcome == CANCELLED]
    assert len(cancelled) == counts["cancelled"] > 0, counts
    assert all(s.tokens >= 1 for s in cancelled), cancelled
    assert counts["completed"] == sum(case_of(s.workload, s.index) == "good" for s in ok)
    assert counts["ignored"] == cancelled_on["cancel_ignored"], counts
    assert counts["refused_cancel"] == cancelled_on["cancel_refused"], counts
    late_good = sum(case_of(s.workload, s.index) == "good" and mix.cancels(s.index) for s in ok)
    faulted = sum(cancelled_on[case] for case in hostile.TOKENS_BEFORE)
    assert counts["too_late"] == cancelled_on["cancel_late"] + faulted + late_good, counts
    # GetTask confirms each cancel the server accepted, and no other: a too-late one leaves
    # the turn as the stream ended it.
    assert counts["got"] == counts["cancelled"] + counts["ignored"], counts
    assert len(ok) + len(cancelled) + sum(failed.values()) == len(samples)


# Each card the seed must refuse: the server's mode, the seed's options, LOAD_PASSWORD, and
# what the one line must say.
REFUSED = {
    "no card": (
        "none",
        (),
        None,
        "no agent card at {url} (tried /.well-known/agent-card.json, /.well-known/agent.json)",
    ),
    "interface not offered": (
        "open",
        ("--binding", "http-json"),
        None,
        "the card offers JSONRPC 1.0; the kit speaks JSON-RPC 1.0 and 0.3 and HTTP+JSON 1.0 "
        "(--binding http-json asked)",
    ),
    "version not spoken": (
        "v2",
        (),
        None,
        "the card offers JSONRPC 2.0; the kit speaks JSON-RPC 1.0 and 0.3 and HTTP+JSON 1.0",
    ),
    "key declared, none given": (
        "key",
        (),
        None,
        f"the agent wants a key in Authorization: export {PASSWORD_ENV} with the agent's key",
    ),
    "key refused": (
        "key",
        (),
        "not-the-key",
        f"a2a refused the credential: HTTP 401 to POST /; export {PASSWORD_ENV} with the "
        "agent's key",
    ),
    "card needs a key": (
        "guarded",
        (),
        None,
        "the agent card at /.well-known/agent-card.json needs a key (HTTP 401/403): export "
        f"{PASSWORD_ENV}",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_card_the_kit_cannot_use_is_refused_in_one_line_before_load(tmp_path, name):
    mode, args, key, says = REFUSED[name]
    path = tmp_path / "fixture.json"
    with started("tests.support.hostile_a2a_server", "--card", mode) as server:
        done = run_seed(server.url, path, *args, key=key)
        counts = server.counts()
    assert done.returncode == 1, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("seed: " + says.format(url=server.url)), lines[0]
    assert not path.exists()
    # Refused from the card alone (or the credential check): no message reached the agent.
    assert not any(counts[case] for case in (*hostile.STREAM_CASES, *hostile.SEND_CASES))


def test_the_same_server_with_a_card_the_kit_speaks_is_seeded(tmp_path):
    """The refusals' control: the server whose bad cards are refused is seeded from its good
    one, with and without its key, so each refusal is the card's doing."""
    for mode, key in (("open", None), ("key", hostile.PASSWORD)):
        path = tmp_path / f"{mode}.json"
        with started("tests.support.hostile_a2a_server", "--card", mode) as server:
            done = run_seed(server.url, path, key=key)
            counts = server.counts()
        assert done.returncode == 0, done.stderr
        assert done.stderr == "", done.stderr
        seeded = load_fixture(path).seeded
        assert (seeded["binding"], seeded["version"], seeded["rpc_path"]) == ("jsonrpc", "1.0", "/")
        assert seeded["streaming"] and seeded["list_tasks"], seeded
        assert seeded["key_header"] == ("Authorization" if key else ""), seeded
        assert counts["refused_auth"] == counts["bad_request"] == 0, counts
        assert counts["listed"] >= 1, counts
