"""How long `reports build` takes on a long run: a million samples, timed stage by stage.

A full run has about 7000 samples, a long one a million; building the report
must take seconds, not minutes. Run: `python -m bench.report_build [SAMPLES]`.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

from inputs.scenario import load_scenario
from reports import build_report
from tests.support.rundirs import synthetic_probes, synthetic_samples, write_run_dir

# Arrivals the shipped scenario offers at scale 1 (4x60 + 12x180 + 36x45 + 12x60).
SHIPPED_ARRIVALS = 4740


def main() -> int:
    """Write a synthetic run of about SAMPLES arrivals, build its report, print each stage."""
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("samples", nargs="?", type=int, default=1_000_000)
    wanted = args.parse_args().samples
    scenario = load_scenario().scaled(math.ceil(wanted / SHIPPED_ARRIVALS))
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        samples = synthetic_samples(
            scenario, error_rates={("burst", "agent_run"): 0.3, ("recover", "api_read"): 0.01}
        )
        path = write_run_dir(Path(tmp) / "run", scenario, samples, synthetic_probes(scenario))
        print(f"wrote {len(samples):,} samples in {time.perf_counter() - started:.1f} s")
        clock = time.perf_counter()
        code = build_report(path)
        took = time.perf_counter() - clock
        print(f"build_report: {took:.2f} s for {len(samples):,} samples (exit {code})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
