"""``make demo``: the whole job on embedded defaults, for someone who just cloned the repo.

Starts the stub and the reference target (agno's AgentOS with PLATFORM=agno), seeds,
runs the four phases headless
(short by default: SCALE=0.1), builds the reports, stops what it started (also on
Ctrl-C, SIGTERM, SIGHUP or failure, and when this process is killed: stack/processes.py),
prints the verdict's short list and where the reports are, and exits with the report's
code: 0 pass, 1 a check failed, 2 the run was invalid, could not judge a check (the
default SCALE offers too few uploads and webhooks; it says so before load), or never ran.
The code is the one the run's summary.json holds, never Locust's own status.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from reports.headline import console_text
from runner.run_end import NO_VERDICT, verdict_exit_code
from runner.settings import RUNS_DIR, run_stamp
from stack.local import LOCUST, LocalStack, StackOptions
from stack.platforms import local_stack, platform_stack
from stack.processes import ROOT, Interrupted, run_load, stopped_by_signals
from workloads.platforms import PLATFORMS

# Short enough for a first look (about 35 s of load), long enough to show each phase.
DEFAULT_SCALE = 0.1

# The target's pool knobs; when set they are passed on and named in the topology line.
POOL_KNOBS = ("DB_POOL_SIZE", "DB_MAX_OVERFLOW", "DB_POOL_TIMEOUT")


def locust_command(stack: LocalStack, run_dir: Path, scale: float) -> list[str]:
    """The headless four-phase run against the local stack, with every probe it can take."""
    return [
        *LOCUST,
        "--headless",
        *stack.locust_options(),
        "--scale",
        str(scale),
        "--run-dir",
        str(run_dir),
        "--topology",
        stack.topology,
    ]


def verdict_table(run_dir: Path) -> str:
    """The report's short list from summary.json: verdict, findings with units and n, recovery,
    validity; the same text a headless run prints when it ends."""
    return console_text(json.loads((run_dir / "summary.json").read_text()))


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
        choices=PLATFORMS,
        default=os.environ.get("PLATFORM") or "agenticos",
        help="the reference target (agenticos, default) or agno's AgentOS (agno); env PLATFORM",
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
            print(f"demo: load at scale {args.scale}; Locust's progress follows", flush=True)
            run_load(locust_command(stack, run_dir, args.scale), stack.locust_env())
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
    print(verdict_table(run_dir))
    print(f"report: {run_dir / 'report.md'}\n        {run_dir / 'report.html'}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
