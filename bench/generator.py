"""Benchmark: the highest arrival rate one load process sustains, and its CPU per api_read.

Drives the real load-process path (LoadProcess: dispatcher, AgenticOS dialect,
keep-alive transport, samples, Locust's request statistics, msgpack batches as a
worker sends them, and samples.csv rows as a local run's master writes them) at
rising constant rates against a trivial 127.0.0.1 server,
and prints, per rate: arrivals, the share sent more than 10 ms after its due
time, the worst lateness, and this process's CPU time per request. The highest
rate with at most 1% of arrivals late by more than 10 ms is "sustained"; the
design target is at most 250 microseconds of CPU per api_read request.

    python bench/generator.py [--seconds 10] [--rates 500,1000,...] [--url URL] [--json]

``--url`` uses a server already running (bench/peer.py pins one to a core);
``--json`` prints one JSON line per rate instead of the table.

The machine may be shared with other work: the figures say what this process
reached here and now, and the report says so beside them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import gevent
import locust  # noqa: F401  (gevent's monkey patching, as in a real worker)
import psutil
from locust.env import Environment
from locust.rpc import Message

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.sleeps import slept, voluntary_switches
from engine.samples import Sample
from engine.schedule import Plan
from inputs.fixture import Fixture, fixture_from_dict
from inputs.scenario import Scenario, scenario_from_dict
from probes import Reading
from runner.conductor import LOCAL_FLUSH_S
from runner.load_process import LoadProcess
from runner.messages import (
    REPORT_KEY,
    VERSION,
    Drained,
    PlanUpdate,
    Prepare,
    Ready,
    ToMaster,
    encode,
)
from runner.run_files import RunFiles
from stack.processes import free_port, wait_ready

LATE_MS = 10.0
MAX_LATE_FRACTION = 0.01
# The design target from the issue (k6 spends about 150 on the same kind of request).
TARGET_CPU_US = 250.0
DEFAULT_RATES = (500, 1000, 1500, 2000, 2500, 3000, 4000, 5000, 6000)


@dataclass
class Figures:
    """What one rate step measured."""

    rate: float
    arrivals: int
    late_fraction: float
    worst_late_ms: float
    failures: int
    failed_by: dict[str, int]
    user_us: float
    system_us: float
    connections_opened: int
    peak_connections: int
    # Times this process slept (bench/sleeps.py), per arrival.
    sleeps_per_request: float

    @property
    def cpu_us_per_request(self) -> float:
        """User plus system CPU time of this process per arrival."""
        return self.user_us + self.system_us

    @property
    def sustained(self) -> bool:
        """At most 1% of arrivals more than 10 ms late, and none failed."""
        return self.late_fraction <= MAX_LATE_FRACTION and self.failures == 0


def _scenario(rate: float, seconds: float) -> dict:
    return {
        "name": "bench",
        "workloads": {"api_read": {"share": 1, "description": "list reads only"}},
        "phases": [{"name": "bench", "duration_s": seconds, "rate": rate}],
        "thresholds": [],
    }


def bench_prepare(scenario: Scenario, fixture: Fixture, url: str, connections: int) -> Prepare:
    """The Prepare a master of one load process sends it: the benchmarks drive a LoadProcess
    by hand, as the master would."""
    return Prepare(
        version=VERSION,
        run_id="bench",
        slots={"bench": 0},
        connections=[connections],
        scenario=scenario,
        fixture=fixture,
        host=url,
        email="bench@x",
    )


def measure(url: str, rate: float, seconds: float) -> Figures:
    """One constant-rate run through a fresh LoadProcess; figures for it."""
    environment = Environment()
    environment.create_local_runner()
    drained: list[Drained] = []
    refused: list[str] = []

    def send(message: ToMaster) -> None:
        if isinstance(message, Drained):
            drained.append(message)
        elif isinstance(message, Ready) and message.error:
            refused.append(message.error)

    process = LoadProcess("bench", send, environment.stats)
    scenario = scenario_from_dict(_scenario(rate, seconds))
    connections = math.ceil(rate * scenario.timeouts.slowest_s)
    fixture = fixture_from_dict(
        {
            "api_url": url,
            "org_id": "00000000-0000-0000-0000-000000000000",
            "agent_id": "00000000-0000-0000-0000-000000000001",
            "model_profile_id": "p",
            "stub_url": url,
            "collection_name": "bench",
            "documents": 0,
            "trigger_id": None,
        }
    )
    process.on_prepare(bench_prepare(scenario, fixture, url, connections))
    if refused:
        # A process that refused its Prepare never drains: say why rather than wait for ever.
        raise SystemExit(f"the load process refused the run: {refused[0]}")
    samples: list[Sample] = []
    readings: list[Reading] = []
    cpu = psutil.Process()
    start_epoch = time.time() + 0.5
    process.on_plan(PlanUpdate("bench", start_epoch, Plan.from_scenario(scenario)))
    with tempfile.TemporaryDirectory() as run_dir:
        files = RunFiles(Path(run_dir), "bench")
        gevent.sleep(max(0.0, start_epoch - time.time()))
        before, switches = cpu.cpu_times(), voluntary_switches(os.getpid())
        while not drained:
            # A local run's cadence: its master takes and writes batches every LOCAL_FLUSH_S
            # (a worker serialises the same rows, every 3 s, to send them instead).
            gevent.sleep(LOCAL_FLUSH_S if time.time() < start_epoch + seconds else 0.05)
            batch = process.take_batch()
            if batch is not None:
                Message("stats", {REPORT_KEY: encode(batch)}, "bench").serialize()
                files.append_samples(0, batch.samples, ["bench"])
                samples += batch.samples
                readings += batch.readings
        last = drained[0].batch
        Message(Drained.kind, encode(drained[0]), "bench").serialize()
        files.append_samples(0, last.samples, ["bench"])
        after, sleeps = cpu.cpu_times(), slept(switches, voluntary_switches(os.getpid()))
        files.close()
    samples += last.samples
    readings += last.readings
    lateness = [(s.sent_s - s.due_s) * 1000 for s in samples if s.sent_s is not None]
    late = sum(1 for ms in lateness if ms > LATE_MS) + (len(samples) - len(lateness))
    if environment.runner is not None:
        environment.runner.quit()
    return Figures(
        rate=rate,
        arrivals=len(samples),
        late_fraction=late / max(1, len(samples)),
        worst_late_ms=max(lateness, default=0.0),
        failures=sum(1 for s in samples if s.outcome != "ok"),
        failed_by=dict(Counter(s.detail for s in samples if s.outcome != "ok").most_common(3)),
        user_us=(after.user - before.user) / max(1, len(samples)) * 1e6,
        system_us=(after.system - before.system) / max(1, len(samples)) * 1e6,
        connections_opened=_most(readings, "connections_opened"),
        peak_connections=_most(readings, "connections_open"),
        sleeps_per_request=sleeps / max(1, len(samples)),
    )


def _most(readings: list[Reading], name: str) -> int:
    """The highest value of one of the self-probe's once-a-second readings."""
    return int(max((r.value for r in readings if r.metric == name), default=0))


def main() -> int:
    """Run the rate ladder until a step is not sustained; 1 if none was."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each rate step")
    parser.add_argument(
        "--rates", default=",".join(map(str, DEFAULT_RATES)), help="rates per second, e.g. 500,1000"
    )
    parser.add_argument("--url", default=None, help="a trivial server already running")
    parser.add_argument("--json", action="store_true", help="one JSON line per rate")
    parser.add_argument(
        "--server-capacity",
        default=None,
        help="reads/s the started server answers at most (a lagging platform)",
    )
    args = parser.parse_args()
    os.environ.setdefault("LOAD_PASSWORD", "bench")
    server = None
    if args.url is None:
        port = free_port()
        trivial = Path(__file__).with_name("trivial_server.py")
        lag = [args.server_capacity] if args.server_capacity else []
        server = subprocess.Popen([sys.executable, str(trivial), str(port), *lag])
    try:
        url = args.url or f"http://127.0.0.1:{port}"
        if server is not None:
            wait_ready(url + "/health", server)
        return _ladder(url, [float(r) for r in args.rates.split(",")], args.seconds, args.json)
    finally:
        if server is not None:
            server.terminate()
            server.wait()


def _ladder(url: str, rates: list[float], seconds: float, as_json: bool) -> int:
    load = os.getloadavg()[0]
    if not as_json:
        print(f"{psutil.cpu_count()} cpus shared with other work; load average {load:.2f} at start")
        print(
            f"{'rate/s':>7} {'arrivals':>8} {'late>10ms':>9} {'worst ms':>8} {'failed':>6} "
            f"{'cpu us/req':>10} {'user':>6} {'system':>6} {'sleeps/req':>10} {'opened':>7} "
            f"{'peak open':>9}"
        )
    best = None
    for rate in rates:
        f = measure(url, rate, seconds)
        if as_json:
            print(json.dumps({**asdict(f), "cpu_us": f.cpu_us_per_request}), flush=True)
        else:
            print(
                f"{f.rate:7.0f} {f.arrivals:8d} {f.late_fraction:9.2%} {f.worst_late_ms:8.1f} "
                f"{f.failures:6d} {f.cpu_us_per_request:10.0f} {f.user_us:6.0f} {f.system_us:6.0f} "
                f"{f.sleeps_per_request:10.2f} {f.connections_opened:7d} {f.peak_connections:9d}"
                + (f"  failed: {f.failed_by}" if f.failed_by else "")
            )
        if not f.sustained:
            break
        best = f
    if as_json:
        return 0 if best is not None else 1
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    if best is None:
        print("no rate was sustained")
        return 1
    verdict = "meets" if best.cpu_us_per_request <= TARGET_CPU_US else "misses"
    print(
        f"sustained: {best.rate:.0f}/s with {best.late_fraction:.2%} late > {LATE_MS:.0f} ms; "
        f"{best.cpu_us_per_request:.0f} us CPU per api_read "
        f"({verdict} the {TARGET_CPU_US:.0f} us target)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
