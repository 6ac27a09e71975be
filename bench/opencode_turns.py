"""Benchmark: the load process's CPU per chat turn against opencode, by turns in flight.

opencode's ``/event`` carries every session's events, so a load process that reads them
once per turn in flight pays per turn in proportion to the turns in flight (issue 48).
This starts the real opencode stack (stub + platforms/opencode, seeded, on loopback) and,
for each level of ``--in-flight``, a load process of its own (a child, so its CPU is its
own): that many greenlets each running the dialect's chat turn through ``serve`` again and
again, a fresh session each as an open arrival's, so the turns in flight stay at the level.
Once every greenlet has ended a turn it measures for at least ``--seconds`` and until every
greenlet has ended a turn inside the window (at hundreds in flight opencode ends its turns in
waves, all started together ending together, so a fixed window could fall between two and
count none): turns ended, this process's CPU (user + system) per turn, as measured and above what
the process spends idle (its timers' wakes, measured for IDLE_S before the turns start: on
this machine a wake costs over 100 us, which a window of a few turns a second spreads over
each turn), the bytes of its own session's events per turn, opencode's CPU per turn over
the same window (the two share the machine's cores), its event loop's lag (a 100 ms sleep's
overshoot), and outcomes other than ok. Each level's CPU per turn above idle is printed as
a ratio to the first level's: near 1 when the cost per turn does not grow with the turns in
flight.

    python bench/opencode_turns.py [--in-flight 10,100,500] [--seconds 20] [--vs DIR]

``--vs DIR`` measures another checkout of the kit in turn with this one, against the same
stack, which this checkout starts (``git archive`` or ``git worktree add`` of the commit
before a change: its load processes need no opencode of their own); its rows are ``vs``.
The machine may be shared: the load average is printed at start and end, and the ratios
are the figures to keep.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stack.local import LocalStack

HERE = Path(__file__).resolve().parent
KIT = HERE.parent
# The model: the first token after 500 ms, then 7 more 50 ms apart (a turn of ~0.85 s at the
# stub), so even the lowest level keeps its turns in flight for most of each turn.
STUB_ARGS = "--first-token-ms 500 --token-ms 50 --tokens 8"
# A turn's timeout: at 500 in flight opencode itself takes about a minute a turn on two cores.
TIMEOUT_S = 600.0
# The loop-lag probe's sleep: each wake costs the process CPU of its own, so not too many.
LAG_SLEEP_S = 0.1
# How long the idle process (signed in, the probe running, no turn) is measured first.
IDLE_S = 5.0
# How long opencode is given to finish what a level left running before the next starts.
SETTLE_S = 120.0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python bench/opencode_turns.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--in-flight", default="10,100,500", help="levels (default 10,100,500)")
    parser.add_argument("--seconds", type=float, default=20.0, help="window per level")
    parser.add_argument("--stub-args", default=STUB_ARGS, help=f"default {STUB_ARGS!r}")
    parser.add_argument("--vs", type=Path, help="another checkout, measured in turn")
    args = parser.parse_args(argv)
    try:
        args.levels = [int(n) for n in args.in_flight.split(",")]
    except ValueError:
        parser.error(f"--in-flight: {args.in_flight!r}: whole numbers, comma-separated")
    if not args.levels or min(args.levels) < 1:
        parser.error("--in-flight: at least one level, each at least 1")
    if args.vs is not None and not (args.vs / "workloads" / "opencode" / "dialect.py").exists():
        parser.error(f"--vs: {args.vs} holds no workloads/opencode/dialect.py: a kit checkout")
    return args


def main(argv: list[str]) -> int:
    if argv[:1] == ["measure"]:
        return measure(argv[1:])
    args = parse_args(argv)
    # Imported here, not at the top: the child imports the kit it measures, which may be another.
    sys.path.insert(0, str(KIT))
    from stack.local import StackOptions, child_env
    from stack.opencode import start_stack

    kits = [("this", KIT)] + ([("vs", args.vs.resolve())] if args.vs is not None else [])
    print(f"load average {_load()} at start; levels {args.levels}, {args.seconds:g} s each")
    with tempfile.TemporaryDirectory() as tmp:
        options = StackOptions(
            workdir=Path(tmp) / "stack", documents=3, stub_args=tuple(args.stub_args.split())
        )
        with start_stack(options) as stack:
            first: dict[str, float] = {}
            for level in args.levels:
                for name, kit in kits:
                    _settled(stack)
                    figures = _child(kit, stack, level, args.seconds, child_env())
                    turns = max(1, figures["turns"])
                    idle_s = figures["idle_cpu_per_s"] * figures["seconds"]
                    per_turn = (figures["cpu_s"] - idle_s) / turns
                    first.setdefault(name, per_turn)
                    _print_row(name, level, figures, per_turn, per_turn / first[name])
    print(f"load average {_load()} at end")
    return 0


def _settled(stack: LocalStack) -> None:
    """Return once opencode says no session is busy (what a level left has finished)."""
    from stack.local import password
    from stack.opencode import basic_auth

    request = urllib.request.Request(
        stack.target.url + "/session/status", headers=basic_auth(password())
    )
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        with urllib.request.urlopen(request, timeout=30) as answer:
            if not json.loads(answer.read()):
                return
        time.sleep(0.5)
    raise SystemExit(f"opencode still has busy sessions after {SETTLE_S:g} s")


def _child(kit: Path, stack: LocalStack, level: int, seconds: float, env: dict) -> dict:
    """One level's figures from a load process of ``kit``'s code (this file, run as a child
    with ``kit`` first on its path)."""
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "measure",
        str(kit),
        stack.target.url,
        str(stack.fixture),
        str(level),
        str(seconds),
        str(stack.target.pid),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3 * TIMEOUT_S)
    if done.returncode != 0:
        raise SystemExit(f"load process at {level} in flight failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _print_row(name: str, level: int, figures: dict, per_turn: float, ratio: float) -> None:
    turns = max(1, figures["turns"])
    rate = figures["turns"] / figures["seconds"]
    measured = figures["cpu_s"] / turns
    own_kib = figures["bytes"] / turns / 1024
    server = figures["server_cpu_s"] / turns
    not_ok = {k: n for k, n in figures["outcomes"].items() if not k.startswith("ok")}
    print(
        f"{name:4} {level:4} in flight: {figures['turns']:5} turns ({rate:5.1f}/s) in "
        f"{figures['seconds']:.0f} s; load process {per_turn * 1e3:6.2f} ms CPU a turn above "
        f"idle (x{ratio:5.2f} the first level; {measured * 1e3:.2f} as measured, idle "
        f"{figures['idle_cpu_per_s'] * 1e3:.1f} ms/s), its events {own_kib:.1f} KiB a turn; "
        f"opencode {server * 1e3:.0f} ms a turn; loop lag p99 "
        f"{figures['lag_p99_ms']:.1f} ms, max {figures['lag_max_ms']:.1f} ms; load average "
        f"{_load()}; not ok: {not_ok or 'none'}",
        flush=True,
    )


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def measure(argv: list[str]) -> int:
    """The child: ``kit url fixture level seconds target_pid``; prints one JSON line."""
    kit, url, fixture, level_text, seconds_text, target_pid = argv
    sys.path.insert(0, kit)
    import gevent

    from engine.clock import RunClock
    from engine.deadlines import Deadlines
    from engine.http import HttpTransport
    from engine.seam import Deployment
    from engine.serve import serve
    from inputs.fixture import load_fixture
    from inputs.scenario import load_scenario
    from stack.local import password
    from workloads.opencode.platform import PLATFORM
    from workloads.reach import signed_in

    level, seconds = int(level_text), float(seconds_text)
    http = HttpTransport(url, max_body=load_scenario().max_body_bytes)
    seeded = load_fixture(Path(fixture))
    deployment = Deployment(seeded, PLATFORM.seeded_from(seeded), url, f"bench-{level}")
    dialect = PLATFORM.dialect(deployment, http)
    signed_in(PLATFORM, dialect, "", password(), "check the URL")
    clock = RunClock(time.time())
    deadlines = Deadlines(clock)
    # The greenlets that have ended a turn since the start, and since the window opened.
    ended: set[int] = set()
    ended_in_window: set[int] = set()
    outcomes: Counter[str] = Counter()
    received = [0]
    lags: list[float] = []
    window = {"open": False, "stop": False}

    def runner(i: int) -> None:
        k = i
        while not window["stop"]:
            result = serve(
                dialect, http, clock, deadlines, "chat_stream", k, False, TIMEOUT_S, lambda _: None
            )
            ended.add(i)
            if window["open"]:
                ended_in_window.add(i)
                outcomes[f"{result.outcome} {result.detail}".strip()] += 1
                received[0] += result.bytes
            k += level

    def lag_probe() -> None:
        while not window["stop"]:
            start = time.monotonic()
            gevent.sleep(LAG_SLEEP_S)
            if window["open"]:
                lags.append(time.monotonic() - start - LAG_SLEEP_S)

    probe = gevent.spawn(lag_probe)
    idle = _cpu()
    gevent.sleep(IDLE_S)
    idle = (_cpu() - idle) / IDLE_S
    runners = [gevent.spawn(runner, i) for i in range(level)]
    while len(ended) < level:
        gevent.sleep(0.1)
    cpu, server, start = _cpu(), _server_cpu(int(target_pid)), time.monotonic()
    window["open"] = True
    gevent.sleep(seconds)
    while len(ended_in_window) < level and time.monotonic() - start < TIMEOUT_S:
        gevent.sleep(0.1)
    window["open"] = False
    cpu, server = _cpu() - cpu, _server_cpu(int(target_pid)) - server
    elapsed = time.monotonic() - start
    window["stop"] = True
    gevent.joinall([*runners], timeout=TIMEOUT_S)
    probe.join(timeout=1.0)
    lags.sort()
    figures = {
        "turns": sum(outcomes.values()),
        "seconds": elapsed,
        "cpu_s": cpu,
        "idle_cpu_per_s": idle,
        "bytes": received[0],
        "server_cpu_s": server,
        "outcomes": dict(outcomes),
        "lag_p99_ms": lags[int(0.99 * (len(lags) - 1))] * 1e3 if lags else 0.0,
        "lag_max_ms": lags[-1] * 1e3 if lags else 0.0,
    }
    print(json.dumps(figures))
    return 0


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _server_cpu(pid: int) -> float:
    """opencode's CPU (user + system) so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
