"""The kit's options, declared once (runner/options.py): every one is listed by ``--help`` with
its default, read by the typed settings from the same table, and its default reads."""

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from inputs.bad_input import SettingsError
from runner.options import KIT_OPTIONS, SWEEP_OPTIONS
from stack.processes import ROOT

OPTIONS = (*KIT_OPTIONS, *SWEEP_OPTIONS)
# The commands whose --help lists the kit's options (the README sends users to the first):
# ``locust -f locustfile.py --help`` cannot (test_locusts_own_help_prints_before_the_kit_loads).
HELP_COMMANDS = {
    "loadkit run": [str(Path(sys.executable).with_name("loadkit")), "run", "--help"],
    "python -m runner": [sys.executable, "-m", "runner", "--help"],
}
LOCUST_HELP = [str(Path(sys.executable).with_name("locust")), "-f", "locustfile.py", "--help"]


def help_entries(text: str) -> dict[str, str]:
    """Each option's entry in argparse's --help, its lines joined, by the option's first name."""
    entries: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("  -"):
            current = line.split()[0].rstrip(",")
            entries[current] = line
        elif current is not None and line.startswith("    "):
            entries[current] += " " + line
        else:
            current = None
    return {name: " ".join(entry.split()) for name, entry in entries.items()}


@pytest.mark.parametrize("command", list(HELP_COMMANDS))
def test_help_lists_every_option_of_the_table_with_its_default(command):
    result = subprocess.run(
        HELP_COMMANDS[command], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    entries = help_entries(result.stdout)
    for option in OPTIONS:
        assert option.name in entries, f"{command} --help lacks {option.name}"
        assert " ".join(option.shown_default.split()) in entries[option.name], option.name


def test_locusts_own_help_prints_before_the_kit_loads():
    """Why the kit's options are listed by the two commands above and not by Locust's own
    ``--help``: Locust 2.47 prints it in parse_locustfile_option (locust/argument_parser.py
    lines 351-353, ``if options.help ...: get_parser().parse_args(args=args)``), which
    locust/main.py calls at line 157, before it imports the locustfile at line 167; so the
    locustfile's init_command_line_parser listener (runner/hooks.py) is not there yet. The one
    module Locust imports earlier is ``locust_plugins`` (main.py line 37), a name another
    distribution owns. Should a Locust print the locustfile's options, this fails, and the
    docs that send users to ``loadkit run --help`` can say Locust's help is complete too."""
    result = subprocess.run(LOCUST_HELP, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    entries = help_entries(result.stdout)
    assert "-f" in entries and "--expect-workers-max-wait" in entries
    assert not [option.name for option in OPTIONS if option.name in entries]


def test_each_option_is_declared_once_and_says_its_default():
    names = [option.name for option in OPTIONS]
    assert len(names) == len(set(names))
    for option in OPTIONS:
        # A default that is no value (or off) is said in words.
        assert option.switch or option.default not in (None, "") or option.default_said, option
        assert "(default" not in option.help, f"{option.name}: the table adds the default"


@pytest.mark.parametrize("option", OPTIONS, ids=lambda option: option.name)
def test_each_default_reads(option):
    option.value(SimpleNamespace())


@pytest.mark.parametrize(
    ("name", "given", "line"),
    [
        ("--scale", "0", "--scale: '0' is outside its bound; give a number above 0, at most 1000"),
        ("--rest-s", "-1", "--rest-s: '-1' is outside its bound; give a number of 0 or more"),
        ("--step-s", "soon", "--step-s: 'soon' is not a number; give e.g. --step-s 2"),
        ("--sweep-users", "1,x", "--sweep-users: '1,x' is not a list of numbers"),
        ("--api-pid", "inf", "--api-pid: 'inf' is not a number"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_option(name, given, line):
    option = next(option for option in OPTIONS if option.name == name)
    with pytest.raises(SettingsError) as refused:
        option.value(SimpleNamespace(**{option.dest: given}))
    assert str(refused.value).startswith(line)


def test_a_sweep_of_n_users_doubles_up_to_n():
    option = next(option for option in OPTIONS if option.name == "--sweep-users")
    assert option.value(SimpleNamespace(sweep_users="20")) == (1, 2, 4, 8, 16, 20)
    assert option.value(SimpleNamespace(sweep_users="3,1")) == (3, 1)
