"""The open-files limit is raised to what the process needs, and a hard limit too low is said.

Each check runs in a child process whose limits it sets first (an unprivileged
operator's: CAP_SYS_RESOURCE dropped, so the hard limit is theirs to raise, not the
kit's), and prints what ``engine.limits`` made of them.
"""

import json
import subprocess
import sys

import pytest

from engine.limits import FD_RESERVE, files_needed
from stack.processes import ROOT
from tests.support.generator_env import open_files_limited

pytestmark = pytest.mark.system

ASK = """
import json, resource
from engine.limits import process_connection_limit
hold = process_connection_limit({wanted})
print(json.dumps([*hold, resource.getrlimit(resource.RLIMIT_NOFILE)[0]]))
"""


def _hold(soft: int, hard: int, wanted: int) -> tuple[int, str, int]:
    """(arrivals held, why short, soft limit after) in a process started with these limits."""
    out = subprocess.run(
        [sys.executable, "-c", ASK.format(wanted=wanted)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        preexec_fn=open_files_limited(soft, hard),
        timeout=60,
    ).stdout
    arrivals, why, after = json.loads(out)
    return arrivals, why, after


def test_the_soft_limit_goes_to_the_hard_one_and_what_fits_is_held_silently():
    wanted = 200
    arrivals, why, after = _hold(256, files_needed(wanted) + 10, wanted)
    assert (arrivals, why) == (wanted, "")
    assert after == files_needed(wanted) + 10


def test_a_hard_limit_below_the_need_caps_the_arrivals_and_says_how_to_raise_it():
    arrivals, why, after = _hold(300, 400, 1000)
    assert after == 400
    assert arrivals == 400 - FD_RESERVE
    assert "open-files limit is 400" in why and str(files_needed(1000)) in why
    assert "ulimit -Hn" in why and "LimitNOFILE" in why and "--ulimit nofile" in why
