"""The ``loadkit`` command: one name per job, each handed to the module that already does it.

Dispatching by hand rather than through argparse subparsers keeps each
subcommand's ``--help`` the module's own, complete list of its options (argparse
would print only the options it was told about here), under the name typed.
Modules are imported only for the subcommand asked for: ``loadkit run`` must
import Locust (and so gevent's monkey-patching) before anything else.
"""

from __future__ import annotations

import sys
from importlib import import_module

# Subcommand -> (module whose main(argv, prog) does it, one line for ``loadkit --help``).
COMMANDS = {
    "demo": (
        "stack.demo",
        "stub + platform on loopback, seed, the four phases headless, report (make demo)",
    ),
    "ui": ("stack.ui", "the same stack and Locust's web UI at an arrival rate you set (make ui)"),
    "platforms": (
        "workloads.platforms",
        "every platform found (built-in, installed, named) and where from",
    ),
    "check-platform": (
        "workloads.check",
        "a platform package against the contract; with --api-url, one request of each workload",
    ),
    "seed": ("workloads.seed", "build the fixture through a platform's API (make seed)"),
    "preflight": ("workloads.preflight", "check that the fixture's deployment can do the work"),
    "run": ("loadkit.run", "the generator, headless, against a seeded deployment (make load-test)"),
    "report": ("reports.__main__", "build report.md, report.html and summary.json of a run"),
    "compare": (
        "reports.compare.command",
        "compare two runs; exit 1 on a regression between runs of one plan on one platform",
    ),
    "sweep": (
        "reports.sweep.command",
        "the sweep report (knee, overhead, memory) of a sweep's run",
    ),
    "export": ("reports.export", "write a run's tables as CSV (samples.csv, ...) beside them"),
}
# The function each module runs for a subcommand, where it is not ``main``.
ENTRY = {"report": "build_main"}

# Exit code for a command line this dispatcher cannot read.
USAGE = 2

EXIT_CODES = """exit codes:
  run, demo, report  0 pass; 1 fail: a check failed or could not be measured, or a workload
                     did not recover; 2 invalid, inconclusive (a plan too small to judge a
                     check), or never ran (bad input, a refused preflight, a signal)
  compare            0 no regression; 1 a regression; 2 no answer: a run invalid or
                     unreadable, different plans, or two platforms (a side-by-side)
  sweep              0 written; 2 unreadable or not a sweep (nothing written)
  export             0 written; 2 not a run written as a dataset
`loadkit COMMAND --help` lists a command's options and what its exit codes mean"""


def usage() -> str:
    """The top-level help: every subcommand with its one line, and the exit codes."""
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()]
    commands = "\n".join(lines)
    return f"usage: loadkit COMMAND [OPTIONS]\n\ncommands:\n{commands}\n\n{EXIT_CODES}\n"


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand with the rest of the arguments; its exit code is ours."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(usage())
        return 0 if argv else USAGE
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(
            f"loadkit: {name[:80]!r} is not a command; use one of {', '.join(COMMANDS)}",
            file=sys.stderr,
        )
        return USAGE
    module = import_module(COMMANDS[name][0])
    return getattr(module, ENTRY.get(name, "main"))(rest, prog=f"loadkit {name}")
