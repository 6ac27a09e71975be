"""The stub keeps its stated delays, and /stats tells the truth about concurrency.

Timing tolerances: the configured delay is a floor (less 1.5 ms, since uvloop's
timers tick in whole milliseconds), and 100 ms above it is the ceiling: the
machine has two cores shared with other test runs, so one scheduling stall of
tens of milliseconds is normal. That ceiling cannot tell deadlines from
per-token sleeps, which drift only ~0.2 ms per token here, so a separate test
streams 400 tokens 2 ms apart and bounds the drift of the last ones at 25 ms,
where sleeping per token measured ~80 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import time
import urllib.request

import aiohttp
import pytest

from stack.processes import free_port, running

pytestmark = pytest.mark.system

FIRST_MS, PACE_MS, TOKENS = 300, 5, 141
TOTAL_MS = FIRST_MS + (TOKENS - 1) * PACE_MS
EARLY_MS = 1.5
LATE_MS = 100.0
HELD_FIRST_MS = 2500
N_CONCURRENT = 60
STATS_WAIT_S = 10.0


@contextlib.contextmanager
def _stub(tmp_path, name, *flags):
    port = free_port()
    args = ["-m", "stub", "--port", str(port), *flags]
    with running(args, "/health", port, tmp_path / f"{name}.log") as server:
        yield server


@pytest.fixture(scope="module")
def paced(tmp_path_factory):
    flags = ["--first-token-ms", FIRST_MS, "--token-ms", PACE_MS, "--tokens", TOKENS]
    with _stub(tmp_path_factory.mktemp("paced"), "paced", *map(str, flags)) as server:
        yield server


def _get(url: str, method: str = "GET") -> dict:
    req = urllib.request.Request(url, method=method)
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.load(resp)


async def _wait_stats(url: str, ok) -> dict:
    """Poll /stats until ok(stats) holds; fail after STATS_WAIT_S."""
    deadline = time.monotonic() + STATS_WAIT_S
    async with aiohttp.ClientSession() as session:
        while True:
            async with session.get(url + "/stats") as resp:
                stats = await resp.json()
            if ok(stats):
                return stats
            assert time.monotonic() < deadline, f"/stats never satisfied the check: {stats}"
            await asyncio.sleep(0.02)


def _chat(stream: bool, **extra) -> dict:
    return {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": stream,
        **extra,
    }


async def _timed_stream(session: aiohttp.ClientSession, url: str) -> tuple[float, float, int]:
    """Milliseconds to the first content frame and to [DONE], and the content frames seen."""
    start = time.perf_counter()
    first = None
    frames = 0
    async with session.post(url + "/v1/chat/completions", json=_chat(True)) as resp:
        async for line in resp.content:
            if line.startswith(b"data: [DONE]"):
                break
            if b'"content":"' in line and b'"content":""' not in line:
                frames += 1
                first = first or time.perf_counter()
        done = time.perf_counter()
    return (first - start) * 1000, (done - start) * 1000, frames


def test_first_token_and_total_time_match_the_knobs(paced):
    async def measure():
        async with aiohttp.ClientSession() as session:
            return await asyncio.gather(*(_timed_stream(session, paced.url) for _ in range(3)))

    results = asyncio.run(measure())
    assert all(frames == TOKENS for _, _, frames in results)
    ttfts = [ttft for ttft, _, _ in results]
    totals = [total for _, total, _ in results]
    assert min(ttfts) >= FIRST_MS - EARLY_MS, ttfts
    assert statistics.median(ttfts) <= FIRST_MS + LATE_MS, ttfts
    assert min(totals) >= TOTAL_MS - EARLY_MS, totals
    assert statistics.median(totals) <= TOTAL_MS + LATE_MS, totals


DRIFT_TOKENS, DRIFT_PACE_MS, DRIFT_BOUND_MS = 401, 2, 25.0


def test_delays_never_accumulate(tmp_path):
    flags = ["--first-token-ms", 50, "--token-ms", DRIFT_PACE_MS, "--tokens", DRIFT_TOKENS]
    with _stub(tmp_path, "drift", *map(str, flags)) as server:

        async def token_times():
            times = []
            async with aiohttp.ClientSession() as session:
                url = server.url + "/v1/chat/completions"
                times.append(time.perf_counter())
                async with session.post(url, json=_chat(True)) as resp:
                    async for line in resp.content:
                        if b'"content":" ' in line or b'"content":"."' in line:
                            times.append(time.perf_counter())
            return times

        times = asyncio.run(token_times())
    start, times = times[0], times[1:]
    assert len(times) == DRIFT_TOKENS
    # How far token k lags its deadline as seen by the client; deadlines keep this flat.
    drift_ms = [(t - start) * 1000 - (50 + k * DRIFT_PACE_MS) for k, t in enumerate(times)]
    assert statistics.median(drift_ms[-20:]) <= DRIFT_BOUND_MS, drift_ms[-20:]
    assert min(drift_ms) >= -EARLY_MS


def test_plain_completion_arrives_when_the_last_token_would(paced):
    body = json.dumps(_chat(False, max_tokens=11)).encode()
    req = urllib.request.Request(paced.url + "/v1/chat/completions", data=body)
    start = time.perf_counter()
    with urllib.request.urlopen(req, timeout=5) as resp:
        json.load(resp)
    elapsed_ms = (time.perf_counter() - start) * 1000
    expected = FIRST_MS + 10 * PACE_MS
    assert expected - EARLY_MS <= elapsed_ms <= expected + LATE_MS


def test_stats_report_own_lateness(paced):
    lateness = _get(paced.url + "/stats")["lateness"]
    assert lateness["first_token"]["count"] >= 1
    assert lateness["token"]["count"] >= TOKENS - 1
    assert lateness["token"]["p50_ms"] <= lateness["token"]["p99_ms"]
    assert lateness["token"]["p99_ms"] <= lateness["token"]["worst_ms"]


def test_client_leaving_mid_stream_leaves_flight(paced):
    async def leave_after_first_token():
        async with aiohttp.ClientSession() as session:
            before = (await _wait_stats(paced.url, lambda s: s["in_flight"] == 0))["abandoned"]
            resp = await session.post(paced.url + "/v1/chat/completions", json=_chat(True))
            async for line in resp.content:
                if b'"content":" ' in line:
                    break
            resp.close()  # drops the connection mid-stream
        stats = await _wait_stats(paced.url, lambda s: s["in_flight"] == 0)
        assert stats["abandoned"] == before + 1

    asyncio.run(leave_after_first_token())
    assert "Traceback" not in paced.output()


@pytest.mark.parametrize("processes", [1, 2])
def test_stats_report_true_maximum_concurrency(tmp_path, processes):
    flags = ["--first-token-ms", HELD_FIRST_MS, "--token-ms", 1, "--tokens", 2]
    flags += ["--processes", processes]
    with _stub(tmp_path, f"held{processes}", *map(str, flags)) as server:

        async def crowd():
            _get(server.url + "/stats/reset", "POST")
            connector = aiohttp.TCPConnector(limit=0)
            async with aiohttp.ClientSession(connector=connector) as session:
                streams = [
                    asyncio.create_task(_timed_stream(session, server.url))
                    for _ in range(N_CONCURRENT)
                ]
                held = await _wait_stats(server.url, lambda s: s["in_flight"] == N_CONCURRENT)
                results = await asyncio.gather(*streams)
            # A handler leaves flight just after its last bytes reach the client: wait for it
            # (bounded), rather than read /stats in the same instant and race it.
            after = await _wait_stats(server.url, lambda s: s["in_flight"] == 0)
            return held, results, after

        held, results, after = asyncio.run(crowd())
        assert held["max_in_flight"] == N_CONCURRENT
        assert sum(p["in_flight"] for p in held["processes"]) == N_CONCURRENT
        assert len(held["processes"]) == processes
        assert all(frames == 2 for _, _, frames in results)
        assert after["in_flight"] == 0
        assert after["max_in_flight"] == N_CONCURRENT
        assert after["requests"]["/v1/chat/completions"] == N_CONCURRENT


def test_abandoned_held_requests_leave_flight(tmp_path):
    with _stub(tmp_path, "held", "--timeout-rate", "1") as server:

        async def abandon():
            async with aiohttp.ClientSession() as session:
                requests = [
                    *(session.post(server.url + "/v1/chat/completions", json=_chat(True))
                      for _ in range(8)),
                    *(session.post(server.url + "/v1/chat/completions", json=_chat(False))
                      for _ in range(4)),
                    *(session.post(server.url + "/v1/embeddings", json={"input": "x"})
                      for _ in range(4)),
                    *(session.post(server.url + "/api/embed", json={"input": "x"})
                      for _ in range(4)),
                ]  # fmt: skip
                tasks = [asyncio.create_task(r.__aenter__()) for r in requests]
                held = await _wait_stats(server.url, lambda s: s["in_flight"] == len(tasks))
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            # The session is closed: every connection is gone.
            left = await _wait_stats(server.url, lambda s: s["in_flight"] == 0)
            return held, left

        held, left = asyncio.run(abandon())
        assert "Traceback" not in server.output()
        assert held["faults"]["timeouts"] == 20
        assert left["max_in_flight"] == 20
        assert left["in_flight"] == 0
