"""``loadkit run``: Locust with this kit's locustfile, headless; exit 0 pass, 1 fail, 2 otherwise.

Locust runs in this process, so nothing is started that could outlive it: a
signal to ``loadkit run`` is a signal to the run, which ends it interrupted and
reported. The exit code is the verdict the run wrote (summary.json), never
Locust's own status alone: Locust exits 1 or -1 on its own start-up errors, which
a CI job would read as "the platform failed". A run that left no verdict (refused,
killed before its report) exits 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import locust.main  # before the kit's modules: importing Locust monkey-patches gevent
from locust.argument_parser import get_parser

from runner.options import add_options
from runner.run_end import NO_VERDICT, verdict_exit_code
from runner.settings import RUNS_DIR, run_stamp

LOCUSTFILE = Path(__file__).resolve().parent.parent / "locustfile.py"
# What ``loadkit run`` always passes Locust: this kit's locustfile, no web UI, one summary table.
FIXED = ("-f", str(LOCUSTFILE), "--headless", "--only-summary")
DESCRIPTION = (
    "Locust with agent-loadkit's locustfile, headless: the four phases of the scenario "
    "(or --rate, users mode with -u, a sweep). Exit 0 pass; 1 fail: a check failed or "
    "could not be measured, or a workload did not recover; 2 the run is invalid, could not "
    "judge a check (a plan too small), or never ran (bad input: one line). Every option "
    "below is passed on to Locust; the kit's own and the sweeps' are under their headings. "
    "The password comes from LOAD_PASSWORD, never an option."
)
# Locust's options this command sets itself (FIXED), and its web UI's and task tags', which
# a headless run of this locustfile never reads: left out of --help, still accepted.
NOT_SHOWN = {"--locustfile", "--headless", "--only-summary", "--autostart", "--autoquit"}
GROUPS_NOT_SHOWN = ("Web UI options", "Tag options")


def help_parser(prog: str):
    """Locust's parser with the kit's and the sweeps' options, less what this command sets
    or never reads: the ``--help`` of this command."""
    parser = get_parser()
    add_options(parser)
    parser.prog, parser.description = prog, DESCRIPTION
    parser.usage = f"{prog} [OPTIONS] [UserClass ...]"
    # Locust's epilog shows "locust -f my_test.py": not how this command is called.
    parser.epilog = None
    for group in parser._action_groups:
        hidden = group.title in GROUPS_NOT_SHOWN
        if hidden:
            group.description = None
        for action in group._group_actions:
            if hidden or NOT_SHOWN & set(action.option_strings):
                action.help = argparse.SUPPRESS
    return parser


def option_value(argv: list[str], name: str) -> str | None:
    """The value given to ``name`` as ``name VALUE`` or ``name=VALUE`` (the last one wins)."""
    value = None
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value


def main(argv: list[str], prog: str = "loadkit run") -> int:
    """Run Locust headless with ``argv`` and return the run's verdict as 0, 1 or 2."""
    if "-h" in argv or "--help" in argv:
        help_parser(prog).print_help()
        return 0
    argv = list(argv)
    run_dir = option_value(argv, "--run-dir")
    if run_dir is None and "--worker" not in argv:
        # Named here so the verdict can be read back: the same name the run would pick.
        run_dir = str(RUNS_DIR / run_stamp())
        argv += ["--run-dir", run_dir]
    started = time.time()
    sys.argv = ["locust", *FIXED, *argv]
    try:
        locust.main.main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    verdict = verdict_exit_code(Path(run_dir), started) if run_dir else None
    if verdict is not None:
        return verdict
    return 0 if code == 0 else NO_VERDICT
