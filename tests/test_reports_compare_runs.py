"""`compare` on real runs: one configuration twice does not regress; a slower model does.

Three short headless runs against real stubs and a real reference target on
127.0.0.1. Two run against the same platform; the third against a platform whose
model stub answers ten times slower, which is the slowdown a release could
cause in the run path. The exit codes are what a CI gate would see: on a machine
busy enough to hold the platform back, compare leaves a latency rise untold (exit 2,
not a pass) rather than guess, so each test holds on a quiet machine and a busy one.
"""

from __future__ import annotations

import pytest

from reports.compare import compare, compare_runs
from reports.rundir import load_run
from stack.generator_runs import QUICK_STUB, platform, write_scenario
from tests.support.generator_env import run_local

pytestmark = [pytest.mark.system, pytest.mark.slow]

# One judged phase, long enough for ~60 agent runs and ~60 reads per run (above the
# compare's minimum count), short enough for three runs on a busy machine.
PHASES = [("sustain", 10.0, 12.0)]
MIX = {"api_read": 50, "agent_run": 50}
# The model ten times slower in its first token and its pace: agent_run's p95 rises
# by hundreds of milliseconds, far past the floors.
SLOW_STUB = ("--first-token-ms", "300", "--token-ms", "50", "--tokens", "6")


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare-runs")
    scenario = write_scenario(root, PHASES, workloads=MIX)
    runs = {}
    with platform(root / "quick", QUICK_STUB) as plat:
        for name in ("base", "same"):
            done = run_local(plat, scenario, root / name)
            assert done.returncode in (0, 1), done.stderr[-2000:]
            runs[name] = root / name
    with platform(root / "slow", SLOW_STUB) as plat:
        done = run_local(plat, scenario, root / "slower")
        assert done.returncode in (0, 1), done.stderr[-2000:]
        runs["slower"] = root / "slower"
    return runs


def test_the_same_configuration_twice_is_no_regression(three_runs, capsys):
    code = compare_runs(three_runs["base"], three_runs["same"])
    out = capsys.readouterr().out
    assert code in (0, 2), out
    assert out.startswith(f"0 regressions (exit {code})")
    # Exit 2 only for a rise a busy machine left untold, said as such.
    assert (code == 2) == ("the machine leaves untold" in out.splitlines()[0])


def test_a_slower_model_is_a_regression_with_evidence(three_runs, capsys):
    code = compare_runs(three_runs["base"], three_runs["slower"])
    out = capsys.readouterr().out
    assert code in (1, 2), out
    comparison = compare(load_run(three_runs["base"]), load_run(three_runs["slower"]))
    # The model's slowdown is found: a regression, or on a busy machine a rise left untold,
    # never "no regression".
    found = comparison.regressions if code == 1 else comparison.untold
    slow = [r for r in found if r.workload == "agent_run" and r.what.startswith("p95")]
    assert slow, out
    assert "99% interval" in slow[0].what
    # Reads do not touch the model: they must not be blamed for it.
    assert not [r for r in comparison.regressions if r.workload == "api_read"]
