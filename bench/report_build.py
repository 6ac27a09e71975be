"""How long `loadkit report` takes on a long run, and the memory it needs, at run sizes given.

A full run has about 7000 samples; a day at 100 arrivals a second is 8.6 million, and the
report has to read it on the same machine the platform and the stub run on. For each size
the synthetic run is written by one process, as the kit writes it (the ``samples`` dataset,
engine/dataset.py, a million samples at a time), and its report is built by another,
``python -m reports build``, so the figures are the build's own: its wall time and its peak
resident memory (the kernel's high-water mark for that process, from wait4). The shipped
scenario's phases are stretched to hold the samples, up to the longest phase a scenario
allows (a day); past that its rates are raised, so 8.6 million is a day and a half of the
shipped mix at about 60 arrivals a second.

    python -m bench.report_build 1000000 2000000 8600000 20000000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from inputs.phases import MAX_PHASE_S
from inputs.scenario import Scenario, load_scenario, scenario_from_dict

ROOT = Path(__file__).resolve().parent.parent
# Arrivals the shipped scenario offers at scale 1 (4x60 + 12x180 + 36x45 + 12x60).
SHIPPED_ARRIVALS = 4740
ERROR_RATES = {("burst", "agent_run"): 0.3, ("recover", "api_read"): 0.01}


def sized(samples: int) -> Scenario:
    """The shipped scenario offering about ``samples`` arrivals: its phases longer by the
    factor needed, as far as a phase may last, its rates higher by the rest."""
    shipped = load_scenario()
    factor = samples / SHIPPED_ARRIVALS
    longest = max(p.duration_s for p in shipped.phases)
    stretch = min(factor, MAX_PHASE_S / longest)
    raw = shipped.scaled(stretch).to_dict()
    for phase in raw["phases"]:
        phase["rate"] = round(phase["rate"] * factor / stretch, 6)
    return scenario_from_dict(raw)


def write(run_dir: Path, samples: int) -> int:
    """The synthetic run of about ``samples`` arrivals, as the kit writes it; how many."""
    from bench.synthetic_runs import synthetic_chunks, synthetic_probes, write_chunked_run

    scenario = sized(samples)
    chunks = synthetic_chunks(scenario, error_rates=ERROR_RATES)
    return write_chunked_run(run_dir, scenario, chunks, synthetic_probes(scenario))


def measured(argv: list[str]) -> tuple[int, float, float]:
    """Run ``argv`` as a process of its own: its exit code, wall seconds and peak resident
    memory in MiB (ru_maxrss of that process alone, not of every child so far)."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, time.perf_counter() - started, usage.ru_maxrss / 1024


def main() -> int:
    """For each size: write the run in one process, build its report in another, print both."""
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("samples", nargs="*", type=int, default=[1_000_000])
    args.add_argument("--write", type=Path, help=argparse.SUPPRESS)
    parsed = args.parse_args()
    if parsed.write is not None:
        print(f"{write(parsed.write, parsed.samples[0]):,}")
        return 0
    for samples in parsed.samples:
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = Path(tmp) / "run"
            me = [sys.executable, "-m", "bench.report_build"]
            code, wrote_s, wrote_mib = measured([*me, "--write", str(run_dir), str(samples)])
            if code:
                print(f"{samples:,}: writing the run failed (exit {code})")
                return 1
            size = sum(f.stat().st_size for f in (run_dir / "samples").iterdir()) / 2**20
            code, took_s, peak_mib = measured(
                [sys.executable, "-m", "reports", "build", str(run_dir)]
            )
            if not (run_dir / "summary.json").exists():
                print(f"{samples:,}: the build wrote no report (exit {code}; its stderr above)")
                return 1
            print(
                f"{samples:,} samples (dataset {size:,.0f} MiB, written in {wrote_s:.1f} s at "
                f"{wrote_mib:,.0f} MiB): report built in {took_s:.1f} s, peak {peak_mib:,.0f} "
                f"MiB resident (exit {code})",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
