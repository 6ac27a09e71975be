"""`python -m reports build RUN_DIR`, `python -m reports compare BASE RUN` and
`python -m reports schema` (summary.json's and sweep.json's JSON Schemas, written from
their types).

The exit code is the answer: build gives 2 when the run is invalid or a file is
malformed, else 1 when a check failed or was not measured, else 2 when a check was
inconclusive (too few arrivals to judge), else 0; compare gives 1 when a regression
is found and 2 when it refuses.
"""

from __future__ import annotations

import argparse
import sys

from reports.build import build_report
from reports.compare import command as compare
from reports.schemas import SCHEMAS, schema_text

BUILD_DESCRIPTION = (
    "Write report.md, report.html, summary.json and junit.xml into RUN_DIR. Exit 2 when "
    "the run is invalid (offered != recorded, late dispatches beyond tolerance, or a "
    "malformed file); else 1 when a check fails or is not measured; else 2 when a check is "
    "inconclusive (its plan offered fewer arrivals than its minimum); else 0."
)


def add_build_arguments(build: argparse.ArgumentParser) -> None:
    """What ``build`` takes: one run directory."""
    build.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<timestamp>)")


def parser() -> argparse.ArgumentParser:
    """The command line: three subcommands, each documented in its --help."""
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
    compare.add_arguments(
        commands.add_parser(
            "compare",
            help="compare two runs; exit 1 on a regression between runs of one plan and platform",
            description=compare.DESCRIPTION,
        )
    )
    commands.add_parser(
        "schema",
        help=f"write {' and '.join(f.name for f in SCHEMAS)} from the types of summary.json and "
        "sweep.json (never edit them by hand)",
    )
    return top


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand and return its exit code."""
    args = parser().parse_args(argv)
    if args.command == "build":
        return build_report(args.run_dir)
    if args.command == "schema":
        for file in SCHEMAS:
            file.write_text(schema_text(file))
            print(f"wrote {file}")
        return 0
    return compare.compare_runs(args.base, args.run, compare.rules_of(args), args.force)


def build_main(argv: list[str], prog: str) -> int:
    """``build`` alone under another name (``loadkit report``)."""
    build = argparse.ArgumentParser(prog=prog, description=BUILD_DESCRIPTION)
    add_build_arguments(build)
    return build_report(build.parse_args(argv).run_dir)


if __name__ == "__main__":
    sys.exit(main())
