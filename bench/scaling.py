"""Benchmark: one worker vs two, and how many workers one master can take.

bench/master_cost.py times the master's unpack + samples.csv part alone; a real
distributed run's master also runs Locust's report handling, ZeroMQ and its
statistics. This runs the real thing: ``locust --master --headless`` and N
``--worker`` processes at a constant rate of api_read only, against the stub-backed
reference platform (stubs + target + seed on 127.0.0.1, the test suite's
platform), and reads each process's CPU from /proc (every thread's schedstat, in
ns; psutil finds the children) over the steady part
of the load window (after ``--warm`` seconds, until half a second before the end):
the master's CPU per recorded sample, each worker's CPU per request, and the
platform's (the target and the model stub, which share the same cores, so the
platform's cost is what bounds the rates this machine can offer). A least-squares
fit splits the master's CPU into a fixed part and a part per sample. One core
divided by the master's CPU per sample is the samples a second one master takes;
divided by a worker's rate, the workers.

    python bench/scaling.py [--rates 50,250,500] [--workers 1,2] [--seconds 10]
                            [--warm 2] [--profile FILE.txt]

``--profile`` also records the master with py-spy (``pip install py-spy``) in one
more run at the highest rate, left out of the fit since sampling costs the master
CPU, and prints its busiest functions (collapsed stacks, parked threads left out).
Samples the master writes arrive up to a batch interval after they are sent, so the
per-sample figures carry that edge error (a few percent over the default window). The machine may be
shared: the figures say what happened here and now, with the load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psutil

from engine import run_record
from engine.run_record import RUN_FILE, RunRecordError
from stack.generator_runs import (
    RUN_TIMEOUT_S,
    lateness_ms,
    platform,
    read_samples,
    start_distributed,
    write_scenario,
)

# Late means more than this after the due time (the measure of a sustained rate).
LATE_MS = 10.0
# Stop measuring this long before the phase ends, so the drain is not counted.
TAIL_S = 0.5
# Leaf frames of a thread parked on a lock or a poll: waiting, not the master's work.
IDLE_FRAMES = {"Hub.run", "acquire_with_timeout", "wait", "poll", "select", "sleep", "_wait"}
# How often to look for run.json's start_epoch while the master starts.
POLL_S = 0.05


def cpu_seconds(procs: list[psutil.Process]) -> float:
    """CPU seconds of these processes and all their children, to the nanosecond.

    Read from each thread's /proc schedstat (time on a CPU, in ns): the clock-tick
    counts psutil's cpu_times gives (10 ms) are too coarse for a master that uses
    a few milliseconds a second.
    """
    total_ns = 0
    for proc in procs:
        family = [proc]
        try:
            family += proc.children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for p in family:
            for task in Path(f"/proc/{p.pid}/task").glob("*/schedstat"):
                try:
                    total_ns += int(task.read_text().split()[0])
                except (OSError, ValueError, IndexError):
                    continue
    return total_ns / 1e9


def start_epoch_of(run_dir: Path, deadline: float) -> float:
    """The run's t = 0 in epoch seconds, once the master has written it."""
    path = run_dir / RUN_FILE
    while time.time() < deadline:
        try:
            epoch = run_record.read(path).start_epoch
        except (OSError, RunRecordError):
            epoch = None
        if epoch:
            return float(epoch)
        time.sleep(POLL_S)
    raise RuntimeError(f"no start_epoch in {path}")


def _sleep_until(epoch: float) -> None:
    time.sleep(max(0.0, epoch - time.time()))


def _py_spy() -> list[str]:
    """py-spy from PATH or beside this interpreter (the venv's)."""
    return [shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))]


def _frame(text: str) -> str:
    """'func (path/to/file.py:12)' -> 'func (file.py)': lines apart, one function."""
    name, _, where = text.partition(" (")
    return f"{name} ({where.split(':')[0].rsplit('/', 1)[-1]})"


def profile_summary(path: Path, top: int = 12) -> list[str]:
    """The master's busiest functions from py-spy's collapsed stacks, own and inclusive."""
    own: dict[str, int] = {}
    incl: dict[str, int] = {}
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        frames = [_frame(f) for f in stack.split(";") if f.endswith(")") and " (" in f]
        if frames and frames[-1].split(" ")[0] in IDLE_FRAMES:
            continue
        total += n
        if frames:
            own[frames[-1]] = own.get(frames[-1], 0) + n
        for frame in set(frames):
            incl[frame] = incl.get(frame, 0) + n
    lines = [f"py-spy of the master: {total} stack samples at 1000/s (parked threads left out)"]
    share = max(total, 1)
    for frame, n in sorted(incl.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"  incl {n / share:6.1%}  own {own.get(frame, 0) / share:6.1%}  {frame}")
    return lines


def master_fit(results: list[dict]) -> str:
    """Least squares of the master's cores on samples/s: a fixed cost and a cost per sample."""
    xs = [r["window"] / r["wall"] for r in results]
    ys = [r["master_core"] for r in results]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0
    return (
        f"master ~= {my - slope * mx:.4f} core + {slope * 1e6:.1f} us x samples/s "
        f"(fit over {len(xs)} runs)"
    )


def one_run(plat, tmp: Path, rate: float, workers: int, args, profile: Path | None) -> dict:
    """One master + ``workers`` run at ``rate``; CPU per process over the steady window."""
    name = f"r{int(rate)}-w{workers}"
    (tmp / name).mkdir(parents=True)
    scenario = write_scenario(
        tmp / name, [("sustain", args.seconds, rate)], workloads={"api_read": 100}
    )
    run_dir = tmp / name / "run"
    platform_procs = [psutil.Process(plat.target.pid), psutil.Process(plat.model.pid)]
    with start_distributed(plat, scenario, run_dir, workers) as run:
        master = psutil.Process(run.master.pid)
        worker_procs = [psutil.Process(w.pid) for w in run.workers]
        start = start_epoch_of(run_dir, time.time() + RUN_TIMEOUT_S)
        spy = None
        if profile is not None:
            spy = subprocess.Popen(
                [
                    *_py_spy(),
                    *("record", "--format", "raw", "--rate", "1000", "-o", str(profile)),
                    *("-p", str(run.master.pid), "-d", str(int(args.seconds - TAIL_S))),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        _sleep_until(start + args.warm)
        t0 = time.time()
        before = [
            cpu_seconds([master]),
            *(cpu_seconds([w]) for w in worker_procs),
            cpu_seconds(platform_procs),
        ]
        _sleep_until(start + args.seconds - TAIL_S)
        after = [
            cpu_seconds([master]),
            *(cpu_seconds([w]) for w in worker_procs),
            cpu_seconds(platform_procs),
        ]
        wall = time.time() - t0
        run.master.communicate(timeout=RUN_TIMEOUT_S)
        if spy is not None:
            spy.wait(timeout=60)
    used = [a - b for a, b in zip(after, before, strict=True)]
    lo, hi = args.warm, args.seconds - TAIL_S
    samples = read_samples(run_dir)
    window = [s for s in samples if lo <= float(s["due_s"]) < hi]
    n = max(len(window), 1)
    return {
        "rate": rate,
        "workers": workers,
        "offered": len(samples),
        "window": len(window),
        "ok": sum(1 for s in window if s["ok"] == "1") / n,
        "failed": Counter(s["outcome"] for s in window if s["ok"] != "1").most_common(2),
        "late": sum(1 for s in window if lateness_ms(s) > LATE_MS) / n,
        "wall": wall,
        "master_us": used[0] / n * 1e6,
        "master_core": used[0] / wall,
        "worker_us": sum(used[1:-1]) / n * 1e6,
        "worker_core": [u / wall for u in used[1:-1]],
        "platform_us": used[-1] / n * 1e6,
        "platform_core": used[-1] / wall,
    }


def describe(r: dict) -> str:
    """One line per run: rates, lateness, and CPU per sample and cores used, per process."""
    cores = "+".join(f"{core:.2f}" for core in r["worker_core"])
    return (
        f"{r['rate']:5.0f}/s x{r['workers']} workers: {r['window']} samples in window, "
        f"ok {r['ok']:.1%}, late>{LATE_MS:.0f}ms {r['late']:.1%} | "
        f"master {r['master_us']:.1f} us/sample ({r['master_core']:.3f} core) | "
        f"workers {r['worker_us']:.0f} us/req ({cores} core) | "
        f"platform {r['platform_us']:.0f} us/req "
        f"({r['platform_core']:.2f} core)" + (f" | failed: {r['failed']}" if r["failed"] else "")
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="50,250,500")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warm", type=float, default=2.0)
    parser.add_argument("--profile", type=Path, help="py-spy collapsed stacks of the last master")
    args = parser.parse_args()
    rates = [float(x) for x in args.rates.split(",")]
    counts = [int(x) for x in args.workers.split(",")]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        with platform(tmp_path / "platform") as plat:
            for rate in rates:
                for n in counts:
                    results.append(one_run(plat, tmp_path, rate, n, args, None))
                    print(describe(results[-1]), flush=True)
            if args.profile is not None:
                # A run of its own: py-spy sampling at 1000/s costs the master CPU too.
                rate, n = rates[-1], counts[-1]
                profiled = one_run(plat, tmp_path / "profiled", rate, n, args, args.profile)
                print(f"(profiled, not in the fit) {describe(profiled)}", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for n in counts:
        print(f"{n} worker(s): " + master_fit([r for r in results if r["workers"] == n]))
    if args.profile is not None:
        print("\n".join(profile_summary(args.profile)))
    top = max(rates)
    worst = max(r["master_us"] for r in results if r["rate"] == top)
    print(
        f"at {top:.0f}/s the master used at most {worst:.1f} us per sample, fixed cost "
        f"included: one master core takes about {1e6 / worst:.0f} samples/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
