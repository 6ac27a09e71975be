"""`python -m reports build RUN_DIR` and `python -m reports compare BASE RUN`.

The exit code is the answer: build gives 2 when the run is invalid or a file is
malformed, else 1 when a check failed or was not measured, else 2 when a check was
inconclusive (too few arrivals to judge), else 0; compare gives 1 when a regression
is found and 2 when it refuses.
"""

from __future__ import annotations

import argparse
import sys

from reports import build_report, compare_runs
from reports.compare import DEFAULT_MIN_SAMPLES, DEFAULT_P95_FLOOR_MS, DEFAULT_TOLERANCE


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give e.g. 0.2") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative; give e.g. 0.2 for 20%")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give e.g. 30") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is below 1; give e.g. 30")
    return value


BUILD_DESCRIPTION = (
    "Write report.md, report.html, summary.json and junit.xml into RUN_DIR. Exit 2 when "
    "the run is invalid (offered != recorded, late dispatches beyond tolerance, or a "
    "malformed file); else 1 when a check fails or is not measured; else 2 when a check is "
    "inconclusive (its plan offered fewer arrivals than its minimum); else 0."
)
COMPARE_DESCRIPTION = (
    "Write compare-<BASE run id>.md and .html into RUN: per phase and workload, the "
    "change in p95 from due (each failure at its timeout), error rate and "
    "throughput, CPU and memory, the regressions and the improvements. "
    "A regression needs enough samples on both sides, a rise above an absolute floor "
    "and a relative tolerance, and a 99% bootstrap interval excluding zero; a "
    "different machine, topology, stub lateness or generator lag is stated on top. "
    "Exit 1 when a regression is found, 2 when either run is invalid or the runs "
    "ran different scenarios (unless --force)."
)


def add_build_arguments(build: argparse.ArgumentParser) -> None:
    """What ``build`` takes: one run directory."""
    build.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<timestamp>)")


def add_compare_arguments(comp: argparse.ArgumentParser) -> None:
    """What ``compare`` takes: two run directories and the thresholds of a regression."""
    comp.add_argument("base", metavar="BASE", help="the earlier run directory")
    comp.add_argument("run", metavar="RUN", help="the run directory to judge against BASE")
    comp.add_argument("--force", action="store_true", help="compare even when the scenarios differ")
    comp.add_argument(
        "--p95-tolerance",
        type=_fraction,
        default=DEFAULT_TOLERANCE,
        help="p95 rise that is a regression, as a fraction (default %(default)s)",
    )
    comp.add_argument(
        "--rss-tolerance",
        type=_fraction,
        default=DEFAULT_TOLERANCE,
        help="peak API RSS rise that is a regression, as a fraction (default %(default)s)",
    )
    comp.add_argument(
        "--min-samples",
        type=_count,
        default=DEFAULT_MIN_SAMPLES,
        help="samples each side needs before a p95 or error rate is compared (default %(default)s)",
    )
    comp.add_argument(
        "--p95-floor-ms",
        type=_fraction,
        default=DEFAULT_P95_FLOOR_MS,
        help="smallest p95 rise in ms that can be a regression (default %(default)s)",
    )


def parser() -> argparse.ArgumentParser:
    """The command line: two subcommands, each documented in its --help."""
    top = argparse.ArgumentParser(
        prog="python -m reports",
        description="Turn a run directory's samples into statistics, a verdict and reports.",
    )
    commands = top.add_subparsers(dest="command", required=True)
    add_build_arguments(
        commands.add_parser(
            "build",
            help="write report.md, report.html, summary.json and junit.xml into a run directory",
            description=BUILD_DESCRIPTION,
        )
    )
    add_compare_arguments(
        commands.add_parser(
            "compare",
            help="compare two runs of the same scenario; exit 1 on a regression",
            description=COMPARE_DESCRIPTION,
        )
    )
    return top


def _compare(args: argparse.Namespace) -> int:
    return compare_runs(
        args.base,
        args.run,
        args.force,
        args.p95_tolerance,
        args.rss_tolerance,
        args.min_samples,
        args.p95_floor_ms,
    )


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand and return its exit code."""
    args = parser().parse_args(argv)
    if args.command == "build":
        return build_report(args.run_dir)
    return _compare(args)


def build_main(argv: list[str], prog: str) -> int:
    """``build`` alone under another name (``loadkit report``)."""
    build = argparse.ArgumentParser(prog=prog, description=BUILD_DESCRIPTION)
    add_build_arguments(build)
    return build_report(build.parse_args(argv).run_dir)


def compare_main(argv: list[str], prog: str) -> int:
    """``compare`` alone under another name (``loadkit compare``)."""
    comp = argparse.ArgumentParser(prog=prog, description=COMPARE_DESCRIPTION)
    add_compare_arguments(comp)
    return _compare(comp.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
