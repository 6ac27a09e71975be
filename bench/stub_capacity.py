"""How many concurrent streams one stub holds on time: prints figures, asserts nothing.

For each concurrency C it opens C streaming chat completions at once against a
freshly started stub (first token 2000 ms, 8 tokens at 5 ms by default) and
prints the client-observed first-token error (observed minus configured,
nearest-rank p50/p99 over the streams that succeeded), the stub's own lateness
from /stats, and the stub's CPU seconds per stream.

A slow client would look like a slow stub, so the client here is a bare
asyncio protocol (one pre-built request, a byte search per read, no HTTP
library) on uvloop, and it watches its own event loop: a ticker records how
late its wake-ups were while the streams ran. If that lag is near the error
being measured, the line says the client was the bottleneck.

    .venv/bin/python bench/stub_capacity.py                 # C = 100, 1000, 3000
    .venv/bin/python bench/stub_capacity.py --processes 2   # two stub processes, SO_REUSEPORT
    .venv/bin/python bench/stub_capacity.py --loop-steps 3  # the calls of 3-step agent turns

With --loop-steps N the C requests are the model calls of an agent's N-step turn, in turn:
the first carries the kit's marker and a tool, each later one the history grown by the
tool-calling answers and their results (stub/plan.py), the last is answered with text. The
stub is stateless, so the calls need not come in order; CPU per call is then what a loop
costs the stub against a plain streamed call's (issue 28: within 10%).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import psutil

from protocol.marker import Marker, write_marker
from stub.serve import loop_factory

ROOT = Path(__file__).resolve().parent.parent
# The figures the issue asks for; override on the command line to explore.
DEFAULT_CONCURRENCY = (100, 1000, 3000)
FIRST_TOKEN_MS, TOKEN_MS, TOKENS = 2000.0, 5.0, 8
# Streams open evenly over this window (an arrival rate of C per second), all still waiting for
# their first token when the last one opens; 0 opens all C in the same instant.
DEFAULT_OPEN_MS = 1000.0
# The client's ticker period; its wake-up lateness is the client's own loop lag.
TICK_S = 0.005
# Client lag (p99) above this share of the measured error p99 means the client, not the stub,
# may explain the error.
CLIENT_BOTTLENECK_SHARE = 0.5
# Longest a round may take before the streams still open count as failed.
ROUND_TIMEOUT_S = 60.0
_CONTENT = b'"delta":{"content":"'
_DONE = b"data: [DONE]"
_TOOL_CALLS = b'"finish_reason":"tool_calls"'
_TOOL_HEAD = b'"tool_calls":[{"index":0,"id"'
# The tool the loop's requests offer, as an agent framework describes a one-argument function.
LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look a topic up in the knowledge base.",
        "parameters": {
            "type": "object",
            "properties": {"topic": {"type": "string"}},
            "required": ["topic"],
        },
    },
}


def nearest_rank(values: list[float], p: float) -> float:
    """The p-th percentile by nearest rank: an observed value, never interpolated."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p / 100.0 * len(ordered))) - 1]


class _StreamProbe(asyncio.Protocol):
    """One streaming request: when it was sent, when its first token and [DONE] arrived."""

    def __init__(
        self, request: bytes, due: float, finished: asyncio.Future, tool_step: bool
    ) -> None:
        self.request = request
        self.tool_step = tool_step
        self.due = due
        self.finished = finished
        self.buffer = bytearray()
        self.sent: float | None = None
        self.first: float | None = None
        self.done: float | None = None
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.sent = time.perf_counter()
        cast(asyncio.Transport, transport).write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        self.buffer += data
        if self.first is None and (
            _CONTENT in self.buffer or (self.tool_step and _TOOL_HEAD in self.buffer)
        ):
            self.first = now
        if _DONE in data or _DONE in self.buffer[-64:]:
            self.done = now
            if self.transport is not None:
                self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.finished.done():
            self.finished.set_result(None)

    @property
    def ok(self) -> bool:
        if self.done is None or not self.buffer.startswith(b"HTTP/1.1 200"):
            return False
        if self.tool_step:
            return _TOOL_CALLS in self.buffer
        return self.buffer.count(_CONTENT) == TOKENS

    def times(self) -> tuple[float, float, float] | None:
        """(sent, first token, done) of a request that answered as it should, else None."""
        if not self.ok or self.sent is None or self.first is None or self.done is None:
            return None
        return self.sent, self.first, self.done


@dataclass
class Round:
    """What one concurrency level measured, client side and stub side."""

    concurrency: int
    ok: int
    ttft_error_ms: list[float]
    done_error_ms: list[float]
    client_lag_ms: list[float]
    client_send_late_ms: list[float]
    client_cpu_s: float
    stub_cpu_s: float
    stats: dict


async def _ticker(lags: list[tuple[float, float]], stop: asyncio.Event) -> None:
    """Record (due time, lag in ms) of each wake-up of the client's own loop."""
    while not stop.is_set():
        due = time.perf_counter() + TICK_S
        await asyncio.sleep(TICK_S)
        lags.append((due, (time.perf_counter() - due) * 1000.0))


def _stub_cpu_s(stub: psutil.Process) -> float:
    total = 0.0
    for proc in [stub, *stub.children(recursive=True)]:
        times = proc.cpu_times()
        total += times.user + times.system
    return total


def _http_json(url: str, method: str = "GET") -> dict:
    req = urllib.request.Request(url, method=method)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


def loop_bodies(steps: int) -> list[dict]:
    """The request bodies of one agent turn of ``steps`` model calls (one plain call for 0)."""
    if steps == 0:
        return [{"model": "bench", "stream": True, "messages": [{"role": "user", "content": "hi"}]}]
    marker = write_marker(Marker("bench", 1, steps, 1, None, None, None))
    messages: list[dict] = [
        {"role": "system", "content": "You are a helpful agent. Use the tools you are given."},
        {"role": "user", "content": f"Load test turn 1: answer in a few words. {marker}"},
    ]
    bodies = []
    for step in range(1, steps + 1):
        bodies.append(
            {"model": "bench", "stream": True, "messages": list(messages), "tools": [LOOKUP]}
        )
        call = {
            "id": f"call_1_{step}_0",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"topic":"loadkit"}'},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": "loadkit: ok"})
    return bodies


def _request(port: int, body: dict) -> bytes:
    payload = json.dumps(body)
    return (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n{payload}"
    ).encode()


async def run_round(
    port: int, concurrency: int, open_s: float, stub: psutil.Process, loop_steps: int = 0
) -> Round:
    """Open `concurrency` streams evenly over open_s seconds; wait for all to finish or fail.
    With loop_steps, stream k is call k mod loop_steps of an agent's turn of that many."""
    base = f"http://127.0.0.1:{port}"
    _http_json(base + "/stats/reset", "POST")
    bodies = loop_bodies(loop_steps)
    requests = [(_request(port, body), step < len(bodies) - 1) for step, body in enumerate(bodies)]
    loop = asyncio.get_running_loop()
    lags: list[tuple[float, float]] = []
    stop = asyncio.Event()
    ticker = asyncio.create_task(_ticker(lags, stop))
    stub_cpu = _stub_cpu_s(stub)
    client_cpu = time.process_time()
    probes = []

    async def one(due: float, k: int) -> None:
        finished = loop.create_future()
        request, tool_step = requests[k % len(requests)]
        probe = _StreamProbe(request, due, finished, tool_step)
        probes.append(probe)
        try:
            await loop.create_connection(lambda: probe, "127.0.0.1", port)
        except OSError:
            return
        await finished

    async def offer() -> None:
        start = time.perf_counter()
        streams = []
        for k in range(concurrency):
            due = start + k * open_s / concurrency
            wait = due - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            streams.append(asyncio.create_task(one(due, k)))
        await asyncio.gather(*streams)

    await asyncio.wait_for(offer(), ROUND_TIMEOUT_S)
    client_cpu = time.process_time() - client_cpu
    stop.set()
    await ticker
    stub_cpu = _stub_cpu_s(stub) - stub_cpu
    stats = _http_json(base + "/stats")
    good = [(p, times) for p in probes if (times := p.times()) is not None]
    # The client's lag matters while frames arrive: from the first first-token to the last [DONE].
    window = (
        min((first for _, (_, first, _) in good), default=0.0),
        max((done for _, (_, _, done) in good), default=0.0),
    )
    total_ms = FIRST_TOKEN_MS + (TOKENS - 1) * TOKEN_MS
    return Round(
        concurrency=concurrency,
        ok=len(good),
        ttft_error_ms=[(first - sent) * 1000.0 - FIRST_TOKEN_MS for _, (sent, first, _) in good],
        done_error_ms=[
            (done - sent) * 1000.0 - total_ms for p, (sent, _, done) in good if not p.tool_step
        ],
        client_lag_ms=[lag for due, lag in lags if window[0] <= due <= window[1]],
        client_send_late_ms=[(p.sent - p.due) * 1000.0 for p in probes if p.sent is not None],
        client_cpu_s=client_cpu,
        stub_cpu_s=stub_cpu,
        stats=stats,
    )


def _pair(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"{nearest_rank(values, 50):.1f} / {nearest_rank(values, 99):.1f}"


def _lateness(block: dict) -> str:
    if not block["count"]:
        return "n/a"
    return f"{block['p50_ms']:.2f} / {block['p99_ms']:.2f} / {block['worst_ms']:.2f}"


def report(r: Round) -> str:
    """The figures of one round, and whether the client could have caused them."""
    lag_p99 = nearest_rank(r.client_lag_ms, 99) if r.client_lag_ms else float("nan")
    lag_worst = max(r.client_lag_ms, default=float("nan"))
    err_p99 = nearest_rank(r.ttft_error_ms, 99) if r.ttft_error_ms else float("nan")
    bottleneck = lag_p99 > max(2.0, CLIENT_BOTTLENECK_SHARE * err_p99)
    verdict = (
        "CLIENT WAS A BOTTLENECK: errors are upper bounds"
        if bottleneck
        else "client not the bottleneck"
    )
    lateness = r.stats["lateness"]
    first, later, stub_loop = lateness["first_token"], lateness["token"], lateness["loop"]
    per_stream_ms = 1000 * r.stub_cpu_s / r.concurrency  # per model call
    return "\n".join(
        [
            f"C={r.concurrency}: {r.ok}/{r.concurrency} streams complete, "
            f"stub max in flight {r.stats['max_in_flight']}",
            f"  client first-token error p50 / p99 ms: {_pair(r.ttft_error_ms)}"
            f"  (n={len(r.ttft_error_ms)})",
            f"  client [DONE] error p50 / p99 ms:      {_pair(r.done_error_ms)}",
            f"  stub lateness, first token p50 / p99 / worst ms: {_lateness(first)}"
            f"  (n={first['count']})",
            f"  stub lateness, later tokens p50 / p99 / worst ms: {_lateness(later)}"
            f"  (n={later['count']})",
            f"  stub loop lag p50 / p99 / worst ms: {_lateness(stub_loop)}"
            f"  (n={stub_loop['count']})",
            f"  stub CPU {r.stub_cpu_s:.2f} s = {per_stream_ms:.3f} ms per stream",
            f"  client: loop lag while frames arrived p99 / worst ms {lag_p99:.1f} / "
            f"{lag_worst:.1f} "
            f"(n={len(r.client_lag_ms)}), send lateness p99 ms {_p99(r.client_send_late_ms)}, "
            f"CPU {r.client_cpu_s:.2f} s -> {verdict}",
        ]
    )


def _p99(values: list[float]) -> str:
    return f"{nearest_rank(values, 99):.1f}" if values else "n/a"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_stub(port: int, processes: int) -> subprocess.Popen:
    args = [
        sys.executable, "-m", "stub", "--port", str(port), "--processes", str(processes),
        "--first-token-ms", str(FIRST_TOKEN_MS), "--token-ms", str(TOKEN_MS),
        "--tokens", str(TOKENS),
    ]  # fmt: skip
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"stub exited with {proc.returncode} before it was ready")
        try:
            _http_json(f"http://127.0.0.1:{port}/health")
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("stub did not answer /health within 30 s")


def main(argv: list[str]) -> int:
    """Run each concurrency level against one stub; print the figures; 0 unless setup failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--concurrency",
        default=",".join(map(str, DEFAULT_CONCURRENCY)),
        help="comma-separated levels",
    )
    parser.add_argument(
        "--open-ms",
        type=float,
        default=DEFAULT_OPEN_MS,
        help="spread the opening of the C streams evenly over this window; 0 opens them "
        f"in one burst (default {DEFAULT_OPEN_MS:.0f})",
    )
    parser.add_argument("--processes", type=int, default=1, help="stub processes (SO_REUSEPORT)")
    parser.add_argument(
        "--loop-steps",
        type=int,
        default=0,
        help="the streams are the model calls of agent turns of this many steps, in turn "
        "(default 0: plain streamed calls)",
    )
    args = parser.parse_args(argv)
    if not 0 <= args.open_ms < FIRST_TOKEN_MS:
        parser.error(f"--open-ms must be within [0, {FIRST_TOKEN_MS:.0f}) so all C overlap")
    levels = [int(c) for c in args.concurrency.split(",")]
    port = _free_port()
    stub_proc = _start_stub(port, args.processes)
    try:
        stub = psutil.Process(stub_proc.pid)
        print(
            f"stub capacity: first token {FIRST_TOKEN_MS:.0f} ms, {TOKENS} tokens at "
            f"{TOKEN_MS:.0f} ms, streams opened over {args.open_ms:.0f} ms, "
            f"{args.processes} stub process(es), "
            f"{f'{args.loop_steps}-step agent turns' if args.loop_steps else 'plain calls'}, "
            f"uvloop {'yes' if loop_factory() else 'no'}, "
            f"{os.cpu_count()} cores, load average at start {os.getloadavg()[0]:.2f}"
        )
        factory = loop_factory()
        for concurrency in levels:
            with asyncio.Runner(loop_factory=factory) as runner:
                measured = runner.run(
                    run_round(port, concurrency, args.open_ms / 1000, stub, args.loop_steps)
                )
            print(report(measured), flush=True)
    finally:
        stub_proc.terminate()
        stub_proc.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
