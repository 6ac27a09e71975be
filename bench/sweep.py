"""One command for a capacity sweep against a platform: start, seed, sweep, report.

Starts the stub and the platform on loopback (stack/<platform>.py; the reference
target unless ``--platform`` says), runs a
concurrency sweep (users mode) or a rate sweep (open arrival) with every probe
(API RSS and Private_Dirty, /metrics, the stub's /stats and knobs, Postgres when
given), then writes the sweep report (reports/sweep/) beside the run's own.
``--zero-delay`` makes the stub answer at once: what is left is the platform's
own overhead, the framework-overhead bench of the durable-runs seed.

    python -m bench.sweep --sweep-users 64 --step-s 10 --rest-s 10 --out runs/sweep-users
    python -m bench.sweep --sweep-rates 4,8,16,32 --step-s 10 --out runs/sweep-rates
    python -m bench.sweep --zero-delay --sweep-users 64 --step-s 10 --out runs/overhead
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

from reports.rundir import load_run
from reports.sweep.analysis import Sweep, build
from reports.sweep.command import write
from stack.local import LocalStack, StackOptions, child_env, headless_command
from stack.platforms import STACKS, local_stack
from stack.processes import ROOT
from workloads.platforms import DEFAULT_PLATFORM

# The model the sweeps run against unless told: a short, realistic-shaped answer.
DEFAULT_STUB = ("--first-token-ms", "500", "--token-ms", "10", "--tokens", "8")
# The zero-delay bench's mix: the two workloads that call the model, never cancelled.
OVERHEAD_SCENARIO = "bench/overhead.yaml"
# A model that answers at once: only the platform's own time is left.
ZERO_DELAY_STUB = ("--first-token-ms", "0", "--token-ms", "0", "--tokens", "8")


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The bench's options; --sweep-users or --sweep-rates is required."""
    parser = argparse.ArgumentParser(prog="python -m bench.sweep", description=__doc__)
    parser.add_argument("--sweep-users", help="concurrency sweep: N (1, 2, 4, ... N) or a list")
    parser.add_argument("--sweep-rates", help="rate sweep: arrivals per second, e.g. 4,8,16")
    parser.add_argument("--step-s", default="10", help="seconds per step (default 10)")
    parser.add_argument("--rest-s", default="10", help="seconds of no load at the end")
    parser.add_argument("--out", required=True, type=Path, help="run directory to write")
    parser.add_argument(
        "--scenario",
        default=None,
        help=f"mix, timeouts, thresholds (default scenario.yaml; {OVERHEAD_SCENARIO} with "
        "--zero-delay)",
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL"),
        help="Postgres URL for the target (default: $DATABASE_URL, else SQLite); prefer the "
        "variable when the URL carries a password",
    )
    parser.add_argument("--zero-delay", action="store_true", help="stub answers at once")
    parser.add_argument(
        "--platform",
        choices=STACKS,
        default=DEFAULT_PLATFORM,
        help=f"the platform whose local stack is swept (default {DEFAULT_PLATFORM})",
    )
    parser.add_argument(
        "--stub-args",
        default=None,
        help=f"the stub's delays, as its options (default {' '.join(DEFAULT_STUB)!r})",
    )
    parser.add_argument(
        "--target-env", action="append", default=[], help="KEY=VALUE for the target, repeatable"
    )
    args = parser.parse_args(argv)
    if bool(args.sweep_users) == bool(args.sweep_rates):
        parser.error("give exactly one of --sweep-users and --sweep-rates")
    return args


def stub_args(args: argparse.Namespace) -> tuple[str, ...]:
    """The stub's options: --stub-args as given, else zero delay or the default model."""
    if args.stub_args is not None:
        return tuple(shlex.split(args.stub_args))
    return ZERO_DELAY_STUB if args.zero_delay else DEFAULT_STUB


def sweep_stack(
    stack: LocalStack, scenario: Path, out: Path, sweep: list[str], step_s: str, rest_s: str
) -> tuple[int, Sweep]:
    """Sweep a started stack (``sweep``: the --sweep-users or --sweep-rates option and its
    value) into ``out`` and write the sweep report beside the run's own; Locust's exit code
    (its verdict) and the sweep, whose report is built whatever that code."""
    command = headless_command(stack, scenario, out)
    command += ["--topology", stack.topology, *sweep, "--step-s", step_s, "--rest-s", rest_s]
    done = subprocess.run(command, cwd=ROOT, env=child_env(), check=False)
    result = build(load_run(out))
    write(result, out)
    return done.returncode, result


def main(argv: list[str]) -> int:
    """Run the sweep; the exit code is Locust's (its verdict), the sweep report is always built."""
    args = parse_args(argv)
    out: Path = args.out
    if out.exists():
        print(f"bench.sweep: --out {out} exists; pass a new directory", file=sys.stderr)
        return 2
    work = out.with_name(out.name + "-stack")
    target_env = dict(kv.split("=", 1) for kv in args.target_env)
    options = StackOptions(
        workdir=work,
        database_url=args.database_url,
        stub_args=stub_args(args),
        target_env=target_env,
        platform=args.platform,
    )
    sweep = (
        ["--sweep-users", args.sweep_users]
        if args.sweep_users
        else ["--sweep-rates", args.sweep_rates]
    )
    with local_stack(options) as stack:
        scenario = Path(
            args.scenario or (OVERHEAD_SCENARIO if args.zero_delay else "scenario.yaml")
        )
        code, result = sweep_stack(stack, scenario, out, sweep, args.step_s, args.rest_s)
    print(f"{result.mode}: knee {result.knee_text}; {result.plateau_text}")
    print(f"memory: {result.memory.text}")
    print(f"sweep report: {out / 'sweep.md'}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
