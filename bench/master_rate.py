"""Benchmark: one master fed by 16 or more load processes, up to its limit, measured.

A real ``locust --master --headless --prometheus`` (the kit's conductor, its
preflight against the stub-backed reference platform, samples.csv, the live
metrics) takes the batches of ``--workers`` real Locust worker processes, each
the kit's own load process with its requests replaced by a recording
(bench/replay_worker.py: a real run's samples.csv, replayed at the plan's rate).
The run's phases are a ladder of total rates, ``--seconds`` each. For each step,
over its steady part (after ``--warm`` seconds), it prints:

- the samples the master took per second, against those offered;
- the master's CPU (every thread's schedstat, to the nanosecond) as cores, and
  **samples per second per master core** (samples taken / CPU seconds);
- the samples that ended per second (samples.csv's ``finished_s`` in the window: what
  the workers produced, to hold against what was offered) and the workers' cores (the
  replays must not be the limit);
- the **lag from a sample's end to its count in the live metrics**: /metrics is
  scraped every ``--scrape-s``; the master writes samples.csv and counts the live
  metrics from the same batch, in the same order, so a sample is counted by the first
  scrape whose ``loadkit_samples`` total exceeds its row number in samples.csv, and its
  lag is that scrape's time minus its ``finished_s``: nearest-rank p50 / p99 / max over
  the samples that ended in the step's window, to the scrape interval (what a dashboard
  scraping that often sees).

A step is kept up when the master took at least 98% of what was offered and the
lag's p99 stayed within two report intervals; the master's limit is between the
last step kept up and the first that was not. The master is stopped by SIGTERM
after the last step (its run ends interrupted, with no report: building one over
millions of samples measures pandas, not the master).

    python bench/master_rate.py [--workers 16] [--rates 20000,50000,100000,200000]
                                [--seconds 12] [--warm 4] [--scrape-s 0.25]
                                [--recording results/.../samples.csv]

The workers share this machine's cores with the master: on a 2-core machine the
limit found is a lower bound, stated with the load average.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import itertools
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import locust  # noqa: F401  (gevent's monkey patching first, as in a real run; the scraper is a greenlet)
import psutil
from locust.runners import WORKER_REPORT_INTERVAL

from bench.scaling import cpu_seconds, start_epoch_of
from engine.dataset import SAMPLES, read_table
from stack.generator_runs import MIX, platform, start_distributed, write_scenario
from stack.processes import ROOT, free_port

# The environment variable that names the recording to the workers (bench/replay_worker.py).
RECORDING_ENV = "LOADKIT_REPLAY"
RECORDING = ROOT / "results/2026-12-01-real-agenticos-quiet/default-pool/samples.csv"
# Kept up: the master took at least this share of what was offered in the window...
KEPT_UP_SHARE = 0.98
# ...and the lag's p99 stayed within this many worker report intervals.
KEPT_UP_LAG_INTERVALS = 2.0
# Connections per worker: the replay sends nothing, so only the warm-up opens any.
CONNECTIONS_PER_WORKER = 4
# Sixteen workers and a master starting, signing in and preflight, on a busy 2-core machine.
START_TIMEOUT_S = 300.0
# Lines of the master's stderr kept, to show should it never start.
STDERR_KEPT = 40
# After the last step, how long the master may take to count what is still on its way.
CATCH_UP_S = WORKER_REPORT_INTERVAL + 3.0


class Scraper(threading.Thread):
    """Reads the master's /metrics every ``interval_s``: (epoch, samples counted) pairs."""

    def __init__(self, url: str, interval_s: float):
        super().__init__(daemon=True)
        self.url, self.interval_s = url, interval_s
        self.points: list[tuple[float, int]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=5) as answer:
                    text = answer.read().decode()
                at = time.time()
                self.points.append((at, _samples_counted(text)))
            except OSError:
                pass
            self.stopped.wait(self.interval_s)


def _samples_counted(text: str) -> int:
    """The sum of every loadkit_samples series in a Prometheus text exposition."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith("loadkit_samples_total{"):
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def _drain(stream, lines: list[str]) -> None:
    """Read a child's pipe to its end (so a chatty master never blocks on a full pipe), keeping
    its last lines to say why, should it fail."""

    def read() -> None:
        for line in stream:
            lines.append(line)
            del lines[:-STDERR_KEPT]

    threading.Thread(target=read, daemon=True).start()


def _started(run_dir: Path, master: subprocess.Popen, said: list[str]) -> float:
    """The run's t = 0 in epoch seconds once the master has written it; if the master exits or
    never gets there, what it said, and an error."""
    deadline = time.time() + START_TIMEOUT_S
    while master.poll() is None and time.time() < deadline:
        with contextlib.suppress(RuntimeError):
            return start_epoch_of(run_dir, time.time() + 1.0)
    sys.stderr.writelines(said)
    raise RuntimeError(f"the master did not start a run (exit {master.poll()})")


def _warnings(log: Path) -> list[str]:
    """A worker's WARNING lines (a process behind at the start, lost heartbeats)."""
    return [line for line in log.read_text(errors="replace").splitlines() if "WARNING" in line]


def _nearest_rank(ordered: list[float], q: float) -> float:
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else math.nan


def _finished_epochs(run_dir: Path, start_epoch: float) -> list[float]:
    """Every recorded sample's end as epoch seconds, in the samples' order (parts, then rows):
    the order the master took them in, which is the order it counted them in (one batch, both
    at once)."""
    finished = read_table(run_dir, SAMPLES, ("finished_s",))["finished_s"].to_pylist()
    return [start_epoch + value for value in finished]


def _lags(finished: list[float], points: list[tuple[float, int]], lo: float, hi: float):
    """For each sample that ended in [lo, hi), sorted: the time from its end to the first
    scrape whose count includes it (its row number is below the count), inf if none did."""
    counts = [c for _, c in points]
    lags = []
    for row, ended in enumerate(finished):
        if lo <= ended < hi:
            j = bisect.bisect_right(counts, row)
            lags.append(points[j][0] - ended if j < len(points) else math.inf)
    return sorted(lags)


def _count_at(points: list[tuple[float, int]], epoch: float) -> float:
    """Samples counted at ``epoch``, interpolated between the scrapes around it."""
    for (t0, c0), (t1, c1) in itertools.pairwise(points):
        if t0 <= epoch <= t1:
            return c0 + (c1 - c0) * (epoch - t0) / (t1 - t0) if t1 > t0 else c1
    return points[-1][1] if points and epoch > points[-1][0] else 0


def measure(args) -> list[dict]:
    """One master and its replaying workers through the ladder; each step's figures."""
    rates = [float(x) for x in args.rates.split(",")]
    os.environ[RECORDING_ENV] = str(args.recording)
    steps = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        with platform(tmp_path / "platform") as plat:
            scenario = write_scenario(
                tmp_path,
                [(f"r{int(rate)}", args.seconds, rate) for rate in rates],
                workloads=MIX,
            )
            run_dir = tmp_path / "run"
            port = free_port()
            extra = (
                "--prometheus",
                f"127.0.0.1:{port}",
                "--connections",
                str(CONNECTIONS_PER_WORKER * args.workers),
            )
            worker_extra = ("-f", "bench/replay_worker.py")
            with start_distributed(
                plat, scenario, run_dir, args.workers, *extra, worker_extra=worker_extra
            ) as run:
                said: list[str] = []
                _drain(run.master.stdout, [])
                _drain(run.master.stderr, said)
                master = psutil.Process(run.master.pid)
                workers = [psutil.Process(w.pid) for w in run.workers]
                scraper = Scraper(f"http://127.0.0.1:{port}/metrics", args.scrape_s)
                scraper.start()
                start = _started(run_dir, run.master, said)
                for n, rate in enumerate(rates):
                    lo = start + n * args.seconds + args.warm
                    hi = start + (n + 1) * args.seconds
                    time.sleep(max(0.0, lo - time.time()))
                    before = (cpu_seconds([master]), cpu_seconds(workers), time.time())
                    time.sleep(max(0.0, hi - time.time()))
                    after = (cpu_seconds([master]), cpu_seconds(workers), time.time())
                    if run.master.poll() is not None:
                        # A master gone mid-ladder reads as zero samples and negative CPU:
                        # say why instead of printing rows that measure nothing.
                        sys.stderr.writelines(said)
                        raise RuntimeError(
                            f"the master exited (code {run.master.returncode}) during the "
                            f"{rate:.0f}/s step"
                        )
                    steps.append({"rate": rate, "lo": lo, "hi": hi, "cpu": (before, after)})
                time.sleep(CATCH_UP_S)
                scraper.stopped.set()
                scraper.join()
                behind = [line for log in run.logs for line in _warnings(log)]
            finished = _finished_epochs(run_dir, start)
    if behind:
        # A worker behind means the offered rate was not offered: the step measures less.
        print(f"the workers warned {len(behind)} times, e.g.: {behind[0].strip()}")
    return [_step(s, finished, scraper.points) for s in steps]


def _step(step: dict, finished: list[float], points: list[tuple[float, int]]) -> dict:
    (master0, workers0, t0), (master1, workers1, t1) = step["cpu"]
    wall = t1 - t0
    taken = _count_at(points, t1) - _count_at(points, t0)
    lags = _lags(finished, points, step["lo"], step["hi"])
    master_s, workers_s = master1 - master0, workers1 - workers0
    lag_p99 = _nearest_rank(lags, 0.99)
    return {
        "rate": step["rate"],
        "ended_per_s": len(lags) / (step["hi"] - step["lo"]),
        "taken_per_s": taken / wall,
        "master_cores": master_s / wall,
        "per_master_core": taken / master_s if master_s > 0 else math.nan,
        "worker_cores": workers_s / wall,
        "lag_p50": _nearest_rank(lags, 0.5),
        "lag_p99": lag_p99,
        "lag_max": lags[-1] if lags else math.nan,
        "kept_up": taken / wall >= KEPT_UP_SHARE * step["rate"]
        and lag_p99 <= KEPT_UP_LAG_INTERVALS * WORKER_REPORT_INTERVAL,
    }


def main() -> int:
    """Run the ladder once and print a row per step, then the limit it found."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=16, help="replaying load processes")
    parser.add_argument("--rates", default="20000,50000,100000,200000", help="samples/s, total")
    parser.add_argument("--seconds", type=float, default=12.0, help="length of each step")
    parser.add_argument("--warm", type=float, default=4.0, help="seconds of a step not measured")
    parser.add_argument("--scrape-s", type=float, default=0.25, help="/metrics scrape interval")
    parser.add_argument("--recording", type=Path, default=RECORDING, help="a samples.csv")
    args = parser.parse_args()
    print(
        f"{psutil.cpu_count()} cpus; load average {os.getloadavg()[0]:.2f} at start; "
        f"{args.workers} workers replaying {args.recording.relative_to(ROOT)}",
        flush=True,
    )
    print(
        f"{'offered/s':>10} {'ended/s':>9} {'taken/s':>9} {'master cores':>12} "
        f"{'samples/s per core':>18} {'workers cores':>13} {'lag p50/p99/max s':>18} kept up"
    )
    steps = measure(args)
    for s in steps:
        lag = f"{s['lag_p50']:.2f}/{s['lag_p99']:.2f}/{s['lag_max']:.2f}"
        print(
            f"{s['rate']:10.0f} {s['ended_per_s']:9.0f} {s['taken_per_s']:9.0f} "
            f"{s['master_cores']:12.2f} {s['per_master_core']:18.0f} {s['worker_cores']:13.2f} "
            f"{lag:>18} "
            f"{'yes' if s['kept_up'] else 'no'}"
        )
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    kept = [s for s in steps if s["kept_up"]]
    if kept and len(kept) < len(steps):
        print(
            f"the master kept up to {kept[-1]['rate']:.0f} samples/s and not at "
            f"{steps[len(kept)]['rate']:.0f}"
        )
    elif kept:
        print(f"the master kept up at every step (to {kept[-1]['rate']:.0f}/s): raise --rates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
