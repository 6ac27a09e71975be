"""Benchmark: is a master + N workers run on time from its first arrival, run after run?

Starts a stub, the reference target and a seed on 127.0.0.1 (the test suite's
platform), then runs ``--runs`` short headless distributed runs in a row and
prints, per run: its verdict, the dispatches sent more than the scenario's
lateness bound (100 ms) after their due time in the first second and in the
whole run, the worst lateness in the first second, each worker's first event-loop
lag reading (its worst stall in the first two seconds), the start lead the master
picked, the round trips it measured and how late each worker woke for t = 0, and what
each worker spent before it said ready (sign-in, connecting, settling memory: ms).

    python bench/distributed_start.py [--runs 20] [--rate 16] [--seconds 4] [--workers 2]

The machine may be shared with other work: the figures say what happened here
and now, and the report quoting them says so beside them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from engine.dataset import PROBES, read_table
from stack.generator_runs import (
    lateness_ms,
    platform,
    read_run,
    read_samples,
    run_distributed,
    write_scenario,
)

# The scenario's default lateness bound: a dispatch later than this counts as late.
LATE_AFTER_MS = 100.0
# "The first second" of a run, where a slow start shows.
FIRST_S = 1.0


def one_run(plat, scenario: Path, run_dir: Path, workers: int) -> str:
    """Run once and describe it in one line."""
    result = run_distributed(plat, scenario, run_dir, workers)
    samples = read_samples(run_dir)
    record = read_run(run_dir)
    first = [s for s in samples if float(s["due_s"]) < FIRST_S]
    late_first = sum(1 for s in first if lateness_ms(s) > LATE_AFTER_MS)
    late_all = sum(1 for s in samples if lateness_ms(s) > LATE_AFTER_MS)
    worst_first = max((lateness_ms(s) for s in first), default=0.0)
    lag: dict[str, float] = {}
    for row in read_table(run_dir, PROBES).to_pylist():
        if row["probe"].startswith("generator.") and row["metric"] == "loop_lag_ms":
            lag.setdefault(row["probe"].split(".")[1], float(row["value"]))
    start = record.get("start", {})
    processes = sorted(start.get("processes", {}).items())
    behind = {slot: p.get("behind_ms") for slot, p in processes}
    ready = {
        slot: f"{p.get('sign_in_ms')}/{p.get('connect_ms')}/{p.get('settle_ms')}"
        for slot, p in processes
    }
    return (
        f"exit {result.returncode}  offered {record['offered']} recorded {len(samples)}  "
        f"late first 1 s {late_first}/{len(first)} (worst {worst_first:.1f} ms)  "
        f"late whole run {late_all}  first loop lag ms {lag}  lead {start.get('lead_s')} s  "
        f"rtt ms {start.get('round_trip_ms')}  woke behind ms {behind}  "
        f"sign-in/connect/settle ms {ready}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rate", type=float, default=16.0)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        scenario = write_scenario(tmp_path, [("sustain", args.seconds, args.rate)])
        with platform(tmp_path / "platform") as plat:
            late_runs = 0
            for n in range(args.runs):
                line = one_run(plat, scenario, tmp_path / f"run{n}", args.workers)
                late_runs += "late first 1 s 0/" not in line
                print(f"run {n + 1:2d}: {line}", flush=True)
            print(f"{args.runs - late_runs} of {args.runs} runs had no late dispatch in 1 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
