"""A long run of the demo stack, watched from outside: does any process's memory keep growing?

Starts what ``make demo`` starts (stub, reference target on SQLite, seed), runs the
shipped scenario's four phases stretched to ``--minutes`` with Locust as a master and
``--workers`` worker processes (0: one local process, as the demo runs it), and reads
every process's RSS every ``--interval`` seconds. Then it prints, per process (each
generator, the master, the platform, the stub): RSS first, last and max, and the slope
in MiB per 10 minutes over the constant-rate phases; the ERROR and CRITICAL lines
the platform logged during the run, as the run's report counts them (``--platform-log``);
the live metrics the master serves (``--prometheus``), read at the same moments, by
their series and bytes, which must not grow with the run; and the run directory's size
per million samples.

The slope is a least-squares line through the readings of the phases at the longest
phase's rate, the first phase left out (sustain and recover in the shipped scenario:
the ramp is warm-up, the burst a transient), each phase with its own intercept, so a
step between phases (memory the burst took and kept) is not read as growth. A
process that leaks grows at a steady rate there; one that only fills a bounded cache
flattens.

Memory does not depend on the machine's speed; lateness does. The machine's load
average is printed before and after, and the run's own verdict says whether it
stayed valid (a run on a busy machine can go invalid and still show where memory goes).

    .venv/bin/python -m bench.soak --minutes 5               # a check that it works
    .venv/bin/python -m bench.soak --minutes 20 --out results/<date>-soak
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psutil

from engine import run_record
from engine.run_record import RUN_FILE, PhaseRecord
from inputs.scenario import load_scenario
from reports.summary import SUMMARY_FILE, read_summary
from runner.settings import RUNS_DIR, run_stamp
from stack.local import LOCUST, LocalStack, StackOptions
from stack.platforms import local_stack
from stack.processes import ROOT, free_port, stop

# Seconds between RSS readings: 60+ readings per phase in a 20-minute run.
DEFAULT_INTERVAL_S = 10.0
DEFAULT_WORKERS = 1
MIB = 2**20
# Slopes are stated per this many seconds, as the issue measured them.
SLOPE_PER_S = 600.0
# Time after the last phase for the drain, follow-ups and the report before we give up.
END_GRACE_S = 300.0
# Readings a phase needs before it adds to a slope: two points make any line.
MIN_READINGS = 3


@dataclass(frozen=True)
class Reading:
    """One process's resident memory at one moment (unix time)."""

    epoch: float
    process: str
    rss_bytes: int


@dataclass(frozen=True)
class ProcessMemory:
    """What one process's RSS did over the run: MiB first, last and max, and MiB per 10 min
    over the steady phases together and in each (None: too few readings for a line)."""

    process: str
    first_mib: float
    last_mib: float
    max_mib: float
    slope: float | None
    slope_by_phase: dict[str, float | None]
    slope_readings: int


@dataclass(frozen=True)
class MetricsReading:
    """The master's live metrics page at one moment: its series (sample lines) and bytes."""

    epoch: float
    series: int
    size: int


class Sampler:
    """Reads each named process's RSS, and the master's metrics page, every ``interval``
    seconds on a thread until stopped."""

    def __init__(self, pids: dict[str, int], interval: float, metrics_url: str) -> None:
        self.processes = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.interval = interval
        self.metrics_url = metrics_url
        self.readings: list[Reading] = []
        self.metrics: list[MetricsReading] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()
        self._read()

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._read()
            self._stopped.wait(self.interval)

    def _read(self) -> None:
        now = time.time()
        for name, process in self.processes.items():
            try:
                self.readings.append(Reading(now, name, process.memory_info().rss))
            except psutil.NoSuchProcess:
                continue
        try:
            with urllib.request.urlopen(self.metrics_url, timeout=self.interval) as answer:
                page = answer.read()
        except OSError:
            return  # not serving yet (the master starting) or no more (its linger ended)
        series = sum(1 for line in page.splitlines() if line and not line.startswith(b"#"))
        self.metrics.append(MetricsReading(now, series, len(page)))


def steady_phases(phases: list[PhaseRecord]) -> list[PhaseRecord]:
    """The phases at the longest phase's rate, the first phase left out (its warm-up)."""
    longest = max(phases, key=lambda p: p.duration_s)
    return [p for p in phases[1:] if p.rate == longest.rate]


def pooled_slope(points: list[tuple[int, float, float]]) -> float | None:
    """Least-squares slope of (group, x, y) points with one intercept per group, or None."""
    by_group: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for group, x, y in points:
        by_group[group].append((x, y))
    cross = spread = 0.0
    for pairs in by_group.values():
        if len(pairs) < MIN_READINGS:
            continue
        xs, ys = np.array(pairs).T
        cross += float(((xs - xs.mean()) * (ys - ys.mean())).sum())
        spread += float(((xs - xs.mean()) ** 2).sum())
    return cross / spread if spread > 0 else None


def memory_of(
    process: str, readings: list[Reading], start_epoch: float, phases: list[PhaseRecord]
) -> ProcessMemory:
    """One process's first/last/max RSS while load ran (t = 0 to the last phase's end: not
    a generator still importing, nor one that has exited), and its slope over the steady
    phases."""
    end_s = phases[-1].end_s
    mine = [r for r in readings if r.process == process and 0 <= r.epoch - start_epoch <= end_s]
    rss = [r.rss_bytes / MIB for r in mine]
    points = [
        (group, r.epoch - start_epoch, r.rss_bytes / MIB)
        for group, phase in enumerate(steady_phases(phases))
        for r in mine
        if phase.start_s <= r.epoch - start_epoch < phase.end_s
    ]
    by_phase = {
        phase.name: _per_10min(pooled_slope([p for p in points if p[0] == group]))
        for group, phase in enumerate(steady_phases(phases))
    }
    return ProcessMemory(
        process, rss[0], rss[-1], max(rss), _per_10min(pooled_slope(points)), by_phase, len(points)
    )


def _per_10min(slope_per_s: float | None) -> float | None:
    return None if slope_per_s is None else slope_per_s * SLOPE_PER_S


def locust_commands(
    stack: LocalStack,
    run_dir: Path,
    args: argparse.Namespace,
    scale: float,
    metrics_port: int,
) -> list[list[str]]:
    """The master's command (or the one local process's), then each worker's."""
    workers = args.workers
    run = [
        *LOCUST,
        "--headless",
        "--only-summary",
        "--scenario",
        str(args.scenario),
        *stack.locust_options(),
        "--scale",
        str(scale),
        "--run-dir",
        str(run_dir),
        "--topology",
        stack.topology,
        "--prometheus",
        str(metrics_port),
    ]
    if workers == 0:
        return [run]
    port = str(free_port())
    master = [*run, "--master", "--expect-workers", str(workers)]
    master += ["--master-bind-host", "127.0.0.1", "--master-bind-port", port]
    worker = [*LOCUST, "--worker", "--master-host", "127.0.0.1", "--master-port", port]
    return [master, *[worker] * workers]


@dataclass(frozen=True)
class Soak:
    """What one soak run left: Locust's exit code, the readings and the machine's load."""

    code: int
    generator: str
    scale: float
    processes: tuple[str, ...]
    readings: list[Reading]
    metrics: list[MetricsReading]
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]


def run_soak(args: argparse.Namespace, run_dir: Path) -> Soak:
    """Start the stack (on a throwaway PostgreSQL with ``--postgres``), run Locust to its end
    while sampling every process, stop everything."""
    scale = args.minutes * 60 / load_scenario(args.scenario).duration_s
    (run_dir / "soak").mkdir(parents=True, exist_ok=True)
    generator = (
        "Locust in one local process"
        if args.workers == 0
        else f"Locust as a master and {args.workers} worker process(es)"
    )
    load_before = os.getloadavg()
    with contextlib.ExitStack() as held:
        url = held.enter_context(postgres(run_dir / "postgres")) if args.postgres else None
        options = StackOptions(workdir=run_dir / "stack", generator=generator, database_url=url)
        stack = held.enter_context(local_stack(options))
        code, names, sampler = soak_stack(stack, args, run_dir, scale)
    printed = [*sorted(names, key=lambda n: n == "master"), "platform", "stub"]
    return Soak(
        code,
        generator,
        scale,
        tuple(printed),
        sampler.readings,
        sampler.metrics,
        load_before,
        os.getloadavg(),
    )


def postgres(directory: Path) -> contextlib.AbstractContextManager[str]:
    """A throwaway PostgreSQL 15 cluster's URL, its log kept in ``directory``."""
    from stack.postgres import throwaway_postgres

    directory.mkdir(parents=True, exist_ok=True)
    return throwaway_postgres(directory)


def soak_stack(
    stack: LocalStack, args: argparse.Namespace, run_dir: Path, scale: float
) -> tuple[int, list[str], Sampler]:
    """Run Locust against a started stack to its end while sampling every process: its exit
    code, the generator processes' names and the sampler with what it read."""
    metrics_port = free_port()
    commands = locust_commands(stack, run_dir, args, scale, metrics_port)
    names = ["generator.0"] if args.workers == 0 else ["master"]
    names += [f"generator.{i}" for i in range(args.workers)]
    procs = []
    try:
        for name, command in zip(names, commands, strict=True):
            with (run_dir / "soak" / f"{name}.log").open("wb") as output:
                procs.append(
                    subprocess.Popen(
                        command,
                        cwd=ROOT,
                        env=stack.locust_env(),
                        stdout=output,
                        stderr=subprocess.STDOUT,
                    )
                )
        pids = {"platform": stack.target.pid, "stub": stack.stub.pid}
        pids.update({name: p.pid for name, p in zip(names, procs, strict=True)})
        sampler = Sampler(pids, args.interval, f"http://127.0.0.1:{metrics_port}/metrics")
        sampler.start()
        code = procs[0].wait(timeout=args.minutes * 60 + END_GRACE_S)
        sampler.stop()
    finally:
        for proc in procs:
            stop(proc)
    return code, names, sampler


def describe(soak: Soak, args: argparse.Namespace, run_dir: Path) -> list[str]:
    """The figures, from the readings and the run's own run.json and summary.json."""
    if not (run_dir / SUMMARY_FILE).exists():
        raise SystemExit(f"soak: Locust exited {soak.code} without a report; see {run_dir}")
    record = run_record.read(run_dir / RUN_FILE)
    summary = read_summary(run_dir)
    validity = summary.validity
    start, phases = record.start_epoch, record.phases
    steady = ", ".join(p.name for p in steady_phases(phases))
    before, after = (
        " ".join(f"{v:.2f}" for v in load) for load in (soak.load_before, soak.load_after)
    )
    lines = [
        f"soak: {args.minutes:g} min (scale {soak.scale:.3f}), {soak.generator}, RSS every "
        f"{args.interval:g} s; Locust exit {soak.code}",
        f"load average (1, 5, 15 min) before {before}, after {after}; {os.cpu_count()} CPUs",
        f"verdict: {summary.headline}",
        f"validity: offered {validity.offered:,}, recorded {validity.recorded:,}, "
        f"late {validity.late:,}: {validity.status}",
        "",
        f"RSS in MiB: first, last and max while load ran (t = 0 to {phases[-1].end_s:.0f} s); "
        f"MiB/10 min: least squares over {steady} together (each its own intercept), then each",
        f"{'process':<13} {'first':>7} {'last':>7} {'max':>7} {'MiB/10 min':>10}"
        + "".join(f" {name:>9}" for name in steady.split(", "))
        + "  readings",
    ]
    for name in soak.processes:
        m = memory_of(name, soak.readings, start, phases)
        lines.append(
            f"{m.process:<13} {m.first_mib:>7.1f} {m.last_mib:>7.1f} {m.max_mib:>7.1f} "
            f"{_signed(m.slope):>10}"
            + "".join(f" {_signed(v):>9}" for v in m.slope_by_phase.values())
            + f"  {m.slope_readings:>8}"
        )
    logged = summary.platform_log.line if summary.platform_log else "none named"
    return [
        *lines,
        "",
        metrics_line(soak.metrics, start, phases[-1].end_s),
        run_size_line(run_dir, validity.recorded),
        f"platform log (the report's count): {logged}",
    ]


def metrics_line(metrics: list[MetricsReading], start: float, end_s: float) -> str:
    """The live metrics page while load ran: series and KiB first, last and max."""
    during = [m for m in metrics if 0 <= m.epoch - start < end_s]
    if not during:
        return "live metrics: no page read while load ran"
    first, last = during[0], during[-1]
    return (
        f"live metrics ({len(during)} reads while load ran): series first {first.series:,}, "
        f"last {last.series:,}, max {max(m.series for m in during):,}; KiB first "
        f"{first.size / 1024:.1f}, last {last.size / 1024:.1f}, "
        f"max {max(m.size for m in during) / 1024:.1f}"
    )


def run_size_line(run_dir: Path, samples: int) -> str:
    """What the run wrote (its directory less the soak's readings and the stack's files), in
    MiB and per million samples."""
    size = sum(
        f.stat().st_size
        for f in run_dir.rglob("*")
        if f.is_file() and f.relative_to(run_dir).parts[0] not in ("soak", "stack")
    )
    per_million = size / MIB / (samples / 1e6) if samples else float("nan")
    return (
        f"run directory: {size / MIB:.1f} MiB for {samples:,} samples "
        f"({per_million:.1f} MiB per million), the soak's readings and the stack's files aside"
    )


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}"


def write_readings(path: Path, readings: list[Reading]) -> None:
    """Every reading, for whoever wants to plot or refit them."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["epoch", "process", "rss_bytes"])
        writer.writerows((f"{r.epoch:.3f}", r.process, r.rss_bytes) for r in readings)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, required=True, help="length of the four phases")
    parser.add_argument(
        "--workers",
        type=int,
        default=DEFAULT_WORKERS,
        help=f"Locust worker processes under one master (0: one local process; "
        f"default {DEFAULT_WORKERS})",
    )
    parser.add_argument("--interval", type=float, default=DEFAULT_INTERVAL_S)
    parser.add_argument(
        "--scenario",
        type=Path,
        default=ROOT / "scenario.yaml",
        help="the scenario to run (default: the shipped one, as make demo runs it)",
    )
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="the reference platform on a throwaway PostgreSQL 15 cluster (default: SQLite)",
    )
    parser.add_argument("--out", type=Path, help="run directory (default runs/soak-<UTC stamp>)")
    args = parser.parse_args(argv)
    if not args.minutes > 0 or args.workers < 0 or not args.interval > 0:
        parser.error("--minutes and --interval must be above 0, --workers 0 or more")
    run_dir = (args.out or ROOT / RUNS_DIR / f"soak-{run_stamp()}").resolve()
    soak = run_soak(args, run_dir)
    write_readings(run_dir / "soak" / "rss.csv", soak.readings)
    text = "\n".join(describe(soak, args, run_dir)) + "\n"
    (run_dir / "soak" / "soak.txt").write_text(text)
    print(text, end="")
    print(f"run directory: {run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
