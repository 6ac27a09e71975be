"""Fault windows on the stub's clock (stub/schedule.py): posted ahead, applied and undone by every
stub process on its own at the stated times, each change in the stub's record.

A window is judged by the answers of requests sent around it, each on a connection of its
own so the kernel spreads them over the processes: every request sent more than 100 ms
before the start is answered as usual, every one sent 100 ms after it until 100 ms before
the end meets the fault, and every one from 100 ms after the end is answered again. The
requests' times are taken by the client, before the send, so the 100 ms covers the trip.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import urllib.request

import aiohttp
import pytest

from stack.processes import free_port, running

pytestmark = pytest.mark.system

# How far from a window's stated start and end an answer may still be the other side's.
WITHIN_S = 0.100
# Requests are sent this often around a window.
EVERY_S = 0.010


@contextlib.contextmanager
def _stub(tmp_path, processes: int, *flags: str):
    port = free_port()
    args = ["-m", "stub", "--port", str(port), "--processes", str(processes), *flags]
    with running(args, "/health", port, tmp_path / "stub.log") as server:
        yield server


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        return json.load(answer)


def _record(url: str, run: str) -> list[dict]:
    with urllib.request.urlopen(f"{url}/faults?run={run}", timeout=5) as answer:
        return [json.loads(line) for line in answer.read().splitlines()]


CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": False}


async def _one(url: str, results: list, at: float) -> None:
    """One chat request on a connection of its own: (when sent, status or the error's name,
    headers, seconds to answer)."""
    await asyncio.sleep(max(0.0, at - time.time()))
    sent = time.time()
    try:
        async with (
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as session,
            session.post(
                url + "/v1/chat/completions", json=CHAT, timeout=aiohttp.ClientTimeout(5)
            ) as answer,
        ):
            await answer.read()
            results.append((sent, answer.status, dict(answer.headers), time.time() - sent))
    except (aiohttp.ClientError, TimeoutError) as exc:
        results.append((sent, type(exc).__name__, {}, time.time() - sent))


async def _around(url: str, first: float, last: float) -> list:
    results: list = []
    times = [first + i * EVERY_S for i in range(int((last - first) / EVERY_S))]
    await asyncio.gather(*(_one(url, results, t) for t in times))
    return sorted(results, key=lambda r: r[0])


def _now(url: str) -> tuple:
    """One request sent now: (when sent, status, headers, seconds to answer)."""
    results: list = []
    asyncio.run(_one(url, results, time.time()))
    return results[0]


def _sides(results: list, start: float, end: float) -> tuple[list, list, list]:
    before = [r for r in results if r[0] < start - WITHIN_S]
    during = [r for r in results if start + WITHIN_S <= r[0] < end - WITHIN_S]
    after = [r for r in results if r[0] >= end + WITHIN_S]
    return before, during, after


@pytest.mark.parametrize("processes", [1, 3])
def test_an_outage_changes_answers_at_its_stated_times_on_every_process(tmp_path, processes):
    with _stub(tmp_path, processes, "--first-token-ms", "0", "--tokens", "1") as stub:
        start = time.time() + 1.5
        end = start + 0.8
        run = f"run-{processes}"
        window = {"name": "down", "kind": "outage", "start": start, "end": end}
        assert _post(stub.url + "/faults", {"run": run, "windows": [window]})["windows"] == 1
        results = asyncio.run(_around(stub.url, start - 0.6, end + 0.6))
        before, during, after = _sides(results, start, end)
        assert before and during and after
        assert {r[1] for r in before} == {200}, before
        assert {r[1] for r in during} == {500}, during
        assert {r[1] for r in after} == {200}, after
        # A window's 500 lets the client retry, as a provider's would.
        assert all("x-should-retry" not in {k.lower() for k in r[2]} for r in during)
        record = _record(stub.url, run)
        for event in ("applied", "undone"):
            done = [c for c in record if c["event"] == event]
            assert sorted(c["process"] for c in done) == list(range(processes)), record
            assert all(abs(c["at"] - c["planned"]) < WITHIN_S for c in done), done
        assert {c["planned"] for c in record if c["event"] == "applied"} == {start}


@pytest.mark.parametrize("processes", [1, 3])
def test_refused_connections_and_listening_again(tmp_path, processes):
    with _stub(tmp_path, processes, "--first-token-ms", "0", "--tokens", "1") as stub:
        start = time.time() + 1.5
        end = start + 0.8
        window = {"name": "gone", "kind": "outage", "refuse": True, "start": start, "end": end}
        _post(stub.url + "/faults", {"run": "r", "windows": [window]})
        results = asyncio.run(_around(stub.url, start - 0.5, end + 0.6))
        before, during, after = _sides(results, start, end)
        assert {r[1] for r in before} == {200}, before
        assert during and all(r[1] != 200 for r in during), during
        assert {r[1] for r in after} == {200}, after
        events = [c["event"] for c in _record(stub.url, "r")]
        assert events.count("undone") == processes and "undo failed" not in events


def test_storm_slowdown_stall_and_hang_each_answer_as_their_kind_until_cancelled(tmp_path):
    flags = ("--first-token-ms", "20", "--token-ms", "5", "--tokens", "4")
    with _stub(tmp_path, 1, *flags) as stub:
        now = time.time()
        windows = [
            {
                "name": "storm",
                "kind": "rate_limit",
                "retry_after_s": 7,
                "start": now,
                "end": now + 30,
            },
        ]
        _post(stub.url + "/faults", {"run": "storm", "windows": windows})
        result = _now(stub.url)
        assert result[1] == 429 and result[2]["Retry-After"] == "7"
        _post(stub.url + "/faults/cancel", {"run": "storm"})
        now = time.time()
        windows = [
            {"name": "slow", "kind": "slowdown", "factor": 10, "start": now, "end": now + 30}
        ]
        _post(stub.url + "/faults", {"run": "slow", "windows": windows})
        slow = _now(stub.url)
        # 20 ms first token and 3 paces of 5 ms, ten times over.
        assert slow[1] == 200 and slow[3] >= 0.35 - 0.002
        _post(stub.url + "/faults/cancel", {"run": "slow"})
        back = _now(stub.url)
        assert back[1] == 200 and back[3] < 0.30
        now = time.time()
        windows = [
            {
                "name": "pause",
                "kind": "stall",
                "after_tokens": 2,
                "stall_s": 0.4,
                "start": now,
                "end": now + 30,
            }
        ]
        _post(stub.url + "/faults", {"run": "pause", "windows": windows})
        paused = _now(stub.url)
        assert paused[1] == 200 and paused[3] >= 0.4 + 0.035 - 0.002
        _post(stub.url + "/faults/cancel", {"run": "pause"})
        now = time.time()
        windows = [{"name": "held", "kind": "hang", "start": now, "end": now + 30}]
        _post(stub.url + "/faults", {"run": "held", "windows": windows})
        held = _now(stub.url)
        assert held[1] == "TimeoutError"
        _post(stub.url + "/faults/cancel", {"run": "held"})
        record = _record(stub.url, "held")
        assert [c["event"] for c in record] == ["applied", "undone"]


def test_a_window_cancelled_before_it_begins_never_applies(tmp_path):
    with _stub(tmp_path, 3, "--first-token-ms", "0", "--tokens", "1") as stub:
        start = time.time() + 0.5
        windows = [{"name": "later", "kind": "outage", "start": start, "end": start + 60}]
        _post(stub.url + "/faults", {"run": "c", "windows": windows})
        _post(stub.url + "/faults/cancel", {"run": "c"})
        results = asyncio.run(_around(stub.url, start + 0.1, start + 0.3))
        assert {r[1] for r in results} == {200}
        record = _record(stub.url, "c")
        assert {c["event"] for c in record} == {"cancelled"}
        assert sorted(c["process"] for c in record) == [0, 1, 2]


def test_a_body_that_is_no_schedule_is_refused_in_one_line(tmp_path):
    with _stub(tmp_path, 1) as stub:
        bad = {"run": "x", "windows": [{"name": "w", "kind": "boom", "start": 1, "end": 2}]}
        with pytest.raises(urllib.error.HTTPError) as refused:
            _post(stub.url + "/faults", bad)
        assert refused.value.code == 400
        message = json.load(refused.value)["error"]["message"]
        assert message.startswith("window 'w': kind 'boom' is not one of")
