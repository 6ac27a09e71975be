"""Benchmark: how many concurrent chat turns one load process holds, how true their TTFT is.

Drives the real load-process path (dispatcher, a platform's dialect, samples,
Locust's statistics, batches) with chat turns only against bench/ws_server.py,
whose first token leaves exactly ``--first-token-ms`` after it received the
message, over either stream the kit reads: ``ws`` (AgenticOS's WebSocket turn, the kit's
own client over the transport's socket, engine/websocket.py) or ``sse`` (agno's run streamed as
server-sent events, ``HttpTransport.stream``). The arrival rate is chosen so that C
turns are in flight at once (C / turn length); for each protocol and C it prints the
peak turns in flight, the share of arrivals sent more than 10 ms late, failures, the
TTFT measurement error (observed time to first token minus the server's stated
delay) at p50 / p99 / max; that error's three parts at p99, each turn's read on one
clock (time.monotonic, the server noting when it had the message and when its first
token left, by arrival index): *to* the server (the request sent to the server's having
the message: connect, handshake, the write, the server's read), *at* it (the server's
own lateness; its worst beside), and *from* it (the first token's leaving to the
generator's reading it: the generator's loop); this process's CPU time per turn; and
its memory per open stream (the growth of its resident set from before load to the
peak in flight, over the turns then open; the kernel's socket buffers are not in it);
the server's CPU time per turn (the two share this machine's cores); and the longest
garbage collection in each process (load / server) while it serves, the stall that
delays every turn in flight at once.

    python bench/streams.py [--protocols ws,sse] [--concurrency 1000,3000]
                            [--first-token-ms 10000] [--seconds 20] [--server-gc off]

The machine may be shared: the figures say what this process reached here and now.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import gevent
import locust  # noqa: F401  (gevent's monkey patching, as in a real worker)
import psutil
from locust.env import Environment

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.generator import bench_prepare
from bench.ws_server import TOKEN_MS, TOKENS
from engine.collector import THRESHOLDS as LOAD_THRESHOLDS
from engine.samples import Sample
from engine.schedule import Plan
from inputs.fixture import fixture_from_dict
from inputs.scenario import scenario_from_dict
from runner.load_process import LoadProcess
from runner.messages import Drained, PlanUpdate, Ready, ToMaster
from stack.processes import free_port, wait_ready

LATE_MS = 10.0
# The longest garbage collection in this process since the last reset (seconds), its
# generation, and how many full collections there were.
_GC = {"longest_s": 0.0, "began": 0.0, "generation": 0, "full": 0}


def _time_collections(phase: str, info: dict) -> None:
    """gc.callbacks' hook: the longest collection under load (engine/collector.py's policy in
    force; not the one that follows the run), to tell the collector's stalls from others."""
    if gc.get_threshold() != LOAD_THRESHOLDS:
        return
    if phase == "start":
        _GC["began"] = time.perf_counter()
        return
    took = time.perf_counter() - _GC["began"]
    _GC["full"] += info["generation"] == 2
    if took > _GC["longest_s"]:
        _GC["longest_s"], _GC["generation"] = took, info["generation"]


def _server_stats(url: str) -> dict:
    """The server's /stats: its turns since the last call, lateness, CPU, longest collection."""
    with urllib.request.urlopen(url + "/stats", timeout=30) as answer:
        return json.loads(answer.read())


# Each protocol's platform and the seeded part of its fixture (bench/ws_server.py serves both).
FIXTURES = {
    "ws": {
        "platform": "agenticos",
        "seeded": {
            "org_id": "00000000-0000-0000-0000-000000000000",
            "agent_id": "00000000-0000-0000-0000-000000000001",
            "model_profile_id": "p",
            "collection_name": "bench",
            "documents": 0,
            "trigger_id": None,
        },
    },
    "sse": {
        "platform": "agno",
        "seeded": {"agent_id": "bench", "collection_name": "bench", "documents": 0},
    },
}


def _nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else 0.0


def measure(
    url: str, protocol: str, concurrency: int, first_token_ms: float, seconds: float
) -> dict:
    """One run at the rate that keeps ``concurrency`` turns in flight; its figures."""
    turn_s = (first_token_ms + (TOKENS - 1) * TOKEN_MS) / 1000
    rate = concurrency / turn_s
    environment = Environment()
    environment.create_local_runner()
    drained: list[Drained] = []

    def to_master(message: ToMaster) -> None:
        """The master's part: a refused sign-in ends the bench at once, never a wait."""
        if isinstance(message, Ready) and message.error:
            raise RuntimeError(f"the load process could not start: {message.error}")
        if isinstance(message, Drained):
            drained.append(message)

    process = LoadProcess("bench", to_master, environment.stats)
    raw = {
        "name": "streams",
        "workloads": {"chat_stream": {"share": 1, "description": "chat turns only"}},
        "chat_cancel_share": 0,
        "phases": [{"name": "bench", "duration_s": seconds, "rate": rate}],
        "timeouts": {"default_s": 60, "chat_stream_s": 60, "agent_run_s": 60},
        "thresholds": [],
    }
    scenario = scenario_from_dict(raw)
    fixture = fixture_from_dict({**FIXTURES[protocol], "api_url": url, "stub_url": url})
    connections = concurrency * 2
    process.on_prepare(bench_prepare(scenario, fixture, url, connections))
    cpu = psutil.Process()
    server_cpu_before = _server_stats(url)["cpu_s"]
    _GC.update(longest_s=0.0, generation=0, full=0)
    start_epoch = time.time() + 0.5
    process.on_plan(PlanUpdate("bench", start_epoch, Plan.from_scenario(scenario)))
    gevent.sleep(max(0.0, start_epoch - time.time()))
    before = cpu.cpu_times()
    rss_before, rss_at_peak = cpu.memory_info().rss, 0
    samples: list[Sample] = []
    peak, offset = 0, 0.0
    while not drained:
        gevent.sleep(0.5)
        run = process._run
        if run is not None and run.dispatcher is not None:
            # The run clock's zero on time.monotonic(), which the server's times are read on.
            offset = time.monotonic() - run.dispatcher.clock.now()
            if run.dispatcher.in_flight > peak:
                peak, rss_at_peak = run.dispatcher.in_flight, cpu.memory_info().rss
        batch = process.take_batch()
        if batch is not None:
            samples += batch.samples
    after = cpu.cpu_times()
    samples += drained[0].batch.samples
    if environment.runner is not None:
        environment.runner.quit()
    server = _server_stats(url)
    errors = [s.ttft_ms - first_token_ms for s in samples if s.ttft_ms is not None]
    # Each turn's error in its three parts, on one clock: sent to the server's having the
    # message (connect, handshake, the write, the server's read), the server's own lateness,
    # and its first token's leaving to the generator's reading it.
    to_server, from_server = [], []
    for s in samples:
        turn = server["turns"].get(str(s.index))
        if turn is None or s.ttft_ms is None or s.sent_s is None:
            continue
        received, first_sent = turn
        sent = s.sent_s + offset
        to_server.append((received - sent) * 1000)
        from_server.append((sent + s.ttft_ms / 1000 - first_sent) * 1000)
    lateness = [(s.sent_s - s.due_s) * 1000 for s in samples if s.sent_s is not None]
    late = sum(1 for ms in lateness if ms > LATE_MS) + len(samples) - len(lateness)
    failed = [s.detail for s in samples if s.outcome not in ("ok", "cancelled")]
    used = (after.user - before.user) + (after.system - before.system)
    return {
        "concurrency": concurrency,
        "rate": rate,
        "turns": len(samples),
        "peak_in_flight": peak,
        "late": late / max(1, len(samples)),
        "failed": len(failed),
        "failed_by": sorted(set(failed))[:3],
        "err_p50": _nearest_rank(errors, 0.5),
        "err_p99": _nearest_rank(errors, 0.99),
        "err_max": max(errors, default=0.0),
        "to_server_p99": _nearest_rank(to_server, 0.99),
        "server_p99": server["p99_ms"],
        "server_max": server["max_ms"],
        "from_server_p99": _nearest_rank(from_server, 0.99),
        "cpu_us_per_turn": used / max(1, len(samples)) * 1e6,
        "kib_per_stream": (rss_at_peak - rss_before) / max(1, peak) / 1024,
        "server_cpu_us_per_turn": (server["cpu_s"] - server_cpu_before)
        / max(1, len(samples))
        * 1e6,
        "gc_max_ms": _GC["longest_s"] * 1000,
        "gc_max_generation": _GC["generation"],
        "gc_full": _GC["full"],
        "server_gc_max_ms": server["gc_max_ms"],
    }


def main() -> int:
    """Start the chat server, measure each protocol at each concurrency, print a row each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocols", default="ws,sse", help="ws (WebSocket), sse, or both")
    parser.add_argument("--concurrency", default="1000,3000", help="turns in flight at once")
    parser.add_argument("--first-token-ms", type=float, default=10000.0)
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each run")
    parser.add_argument(
        "--server-gc",
        choices=("off", "default"),
        default="off",
        help="the server's collector off during load (collected between runs), "
        "or Python's defaults",
    )
    args = parser.parse_args()
    gc.callbacks.append(_time_collections)
    os.environ.setdefault("LOAD_PASSWORD", "bench")
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("ws_server.py")),
            str(port),
            str(args.first_token_ms),
            args.server_gc,
        ]
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url + "/health", server)
        print(f"{psutil.cpu_count()} cpus shared with other work; load {os.getloadavg()[0]:.2f}")
        print(
            f"{'':>3} {'C':>5} {'rate/s':>7} {'turns':>6} {'peak':>5} {'late>10ms':>9} "
            f"{'failed':>6} {'ttft err p50/p99/max ms':>24} {'p99 to/at/from srv':>20} "
            f"{'server max':>10} {'cpu us/turn':>11} {'KiB/stream':>10} "
            f"{'srv cpu us/turn':>15} {'gc max ms':>10}"
        )
        for protocol in args.protocols.split(","):
            for c in (int(x) for x in args.concurrency.split(",")):
                f = measure(url, protocol, c, args.first_token_ms, args.seconds)
                err = f"{f['err_p50']:.1f}/{f['err_p99']:.1f}/{f['err_max']:.1f}"
                parts = f"{f['to_server_p99']:.1f}/{f['server_p99']:.1f}/{f['from_server_p99']:.1f}"
                print(
                    f"{protocol:>3} {c:5d} {f['rate']:7.0f} {f['turns']:6d} "
                    f"{f['peak_in_flight']:5d} {f['late']:9.2%} {f['failed']:6d} {err:>24} "
                    f"{parts:>20} {f['server_max']:10.1f} {f['cpu_us_per_turn']:11.0f} "
                    f"{f['kib_per_stream']:10.1f} {f['server_cpu_us_per_turn']:15.0f} "
                    f"{f['gc_max_ms']:4.1f}(gen {f['gc_max_generation']}, "
                    f"{f['gc_full']} full)/{f['server_gc_max_ms']:.1f}"
                    + (f"  failed: {f['failed_by']}" if f["failed"] else ""),
                    flush=True,
                )
        print(f"load average {os.getloadavg()[0]:.2f} at end")
        return 0
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    sys.exit(main())
