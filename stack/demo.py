"""``make demo``: the whole job on embedded defaults, for someone who just cloned the repo.

Starts the stub and the reference target (agno's AgentOS with PLATFORM=agno), seeds,
runs the four phases headless at full length (SCALE=1: about 6 minutes of load, the
least that offers every check its minimum count, so the verdict can be a pass),
builds the reports, stops what it started (also on Ctrl-C, SIGTERM, SIGHUP or failure,
and when this process is killed: stack/processes.py) and exits with the report's code:
0 pass, 1 a check failed or could not be measured or a workload did not recover, 2 the
run was invalid, could not judge a check, or never ran. The code is the one the run's
summary.json holds, never Locust's own status. Locust's run prints each workload's
figures and the verdict as its last lines; the demo does not print them again.
SCALE=0.1 is the quick look (about 35 s of load): it judges 14 of the 28 checks (the
latency limits, the sustain and burst error rates of reads, chat, runs and retrieval,
and the reads' recovery) and leaves the other 14 inconclusive (uploads and webhooks
throughout, and recover for all but the reads: too few arrivals), says so before load,
and ends INCONCLUSIVE (exit 2) unless something it judged failed. With the shipped
scenario's three-call agent runs the default pool is exhausted in the burst and both
lengths end FAIL on recovery (the README's measured runs; a raised pool passes). agno and LangGraph
run from environments of their own, built on first use (about a minute).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from inputs.scenario import DEFAULT_PATH, load_scenario
from runner.run_end import NO_VERDICT, verdict_exit_code
from runner.settings import RUNS_DIR, run_stamp
from stack.local import LOCUST, LocalStack, StackOptions
from stack.platforms import STACKS, local_stack, platform_stack
from stack.processes import ROOT, Interrupted, run_load, stopped_by_signals
from workloads.platforms import DEFAULT_PLATFORM

# The full four phases (345 s of load): every check gets its minimum count, so the run can
# pass; at 0.1, 14 of the 28 checks have too few arrivals to judge.
DEFAULT_SCALE = 1.0

# The target's pool knobs; when set they are passed on and named in the topology line.
POOL_KNOBS = ("DB_POOL_SIZE", "DB_MAX_OVERFLOW", "DB_POOL_TIMEOUT")


# The shipped scenarios with a fault window each (make demo FAULTS=NAME), beside scenario.yaml.
SCENARIOS = ROOT / "scenarios"


def locust_command(
    stack: LocalStack, run_dir: Path, scale: float, scenario: Path | None = None
) -> list[str]:
    """The headless four-phase run against the local stack, with every probe it can take (and
    ``scenario`` instead of the shipped one, given after the stack's own)."""
    return [
        *LOCUST,
        "--headless",
        *stack.locust_options(),
        *(["--scenario", str(scenario)] if scenario else []),
        "--scale",
        str(scale),
        "--run-dir",
        str(run_dir),
        "--topology",
        stack.topology,
    ]


def fault_scenario(name: str) -> Path | None:
    """The shipped scenario with the fault window ``name`` (None for ""); ValueError naming
    the ones there are when there is none by that name."""
    if not name:
        return None
    path = SCENARIOS / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in SCENARIOS.glob("*.yaml")))
        raise ValueError(f"FAULTS={name}: no scenarios/{name}.yaml; use one of {known}")
    return path


def parse_args(argv: list[str], prog: str = "loadkit demo") -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument(
        "--scale",
        type=float,
        default=float(os.environ.get("SCALE", DEFAULT_SCALE)),
        help=f"phase lengths x this, rates unchanged (env SCALE, default {DEFAULT_SCALE})",
    )
    parser.add_argument(
        "--run-dir",
        type=Path,
        help="where samples and reports go (default runs/demo-<UTC timestamp>)",
    )
    parser.add_argument(
        "--platform",
        choices=STACKS,
        default=os.environ.get("PLATFORM") or DEFAULT_PLATFORM,
        help="the platform started and tested: "
        + ", ".join(f"{name} ({platform_stack(name).WHAT})" for name in STACKS)
        + f"; env PLATFORM, default {DEFAULT_PLATFORM}",
    )
    parser.add_argument(
        "--faults",
        default=os.environ.get("FAULTS", ""),
        help="run the shipped scenario with this fault window (scenarios/NAME.yaml: "
        + ", ".join(sorted(p.stem for p in SCENARIOS.glob("*.yaml")))
        + "; env FAULTS, default none: the shipped scenario as it is)",
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DEMO_DATABASE_URL"),
        help="run the target on this database instead of a fresh SQLite file",
    )
    return parser.parse_args(argv)


def main(argv: list[str], prog: str = "loadkit demo") -> int:
    """Run the demo and return the report's exit code."""
    args = parse_args(argv, prog)
    if not args.scale > 0:
        print(f"SCALE={args.scale}: must be above 0, e.g. SCALE=0.1 or SCALE=1", file=sys.stderr)
        return NO_VERDICT
    try:
        scenario = fault_scenario(args.faults)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return NO_VERDICT
    run_dir = (args.run_dir or ROOT / RUNS_DIR / f"demo-{run_stamp()}").resolve()
    pool = {knob: os.environ[knob] for knob in POOL_KNOBS if knob in os.environ}
    options = StackOptions(
        workdir=run_dir / "stack",
        database_url=args.database_url,
        target_env=pool,
        platform=args.platform,
    )
    what = platform_stack(args.platform).WHAT
    print(f"demo: starting stub and {what}, seeding ({run_dir / 'stack'})", flush=True)
    started = time.time()
    try:
        with stopped_by_signals(), local_stack(options) as stack:
            print(
                f"demo: load at scale {args.scale} ({_load_seconds(args.scale, scenario)})"
                + (f" with the fault window {args.faults}" if scenario else "")
                + "; "
                "one progress line, then each workload's figures and the verdict",
                flush=True,
            )
            run_load(locust_command(stack, run_dir, args.scale, scenario), stack.locust_env())
    except (RuntimeError, TimeoutError) as exc:
        print(f"demo: {exc}; logs are in {run_dir / 'stack'}", file=sys.stderr)
        return NO_VERDICT
    except Interrupted as exc:
        print(
            f"demo: {exc}: the load, the stub and the {what} are stopped; a run that had begun "
            f"is interrupted (run.json in {run_dir})",
            file=sys.stderr,
        )
    code = verdict_exit_code(run_dir, started)
    if code is None:
        return NO_VERDICT
    print(f"demo: stub and {what} stopped; open {run_dir / 'report.html'}")
    return code


def _load_seconds(scale: float, scenario: Path | None = None) -> str:
    """How long the scenario's phases last at ``scale``, in words."""
    phases = load_scenario(scenario or DEFAULT_PATH).scaled(scale).phases
    seconds = sum(p.duration_s for p in phases)
    return f"{seconds:.0f} s of load" if seconds < 120 else f"{seconds / 60:.1f} min of load"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
