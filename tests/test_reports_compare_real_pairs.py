"""`compare` on pairs of committed real runs: what it claims is what the pair can answer.

results/2026-12-02-compare-pairs holds `make demo` runs on this project's shared machine
(its README has the commands and the machine's load): the reference platform at SCALE=1
twice and at SCALE=0.1 twice, agno and LangGraph at 0.1. The earlier sets are
results/2026-12-01-two-platforms (a quiet machine) and -three-platforms (a busy one),
made before the API's wait for a CPU was probed.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from reports.compare import CompareRefused, compare, compare_runs
from reports.compare.differences import Pairing
from reports.rundir import load_run

RESULTS = Path(__file__).parent.parent / "results"
PAIRS = RESULTS / "2026-12-02-compare-pairs"
QUIET = RESULTS / "2026-12-01-two-platforms"
BUSY = RESULTS / "2026-12-01-three-platforms"


def runs(*paths: Path) -> list:
    return [load_run(p) for p in paths]


@pytest.mark.parametrize(
    "base, run",
    [
        (PAIRS / "full-2", PAIRS / "full-3"),
        (PAIRS / "s01-q1", PAIRS / "s01-q2"),
        (QUIET / "reference", QUIET / "repeat" / "reference"),
        (QUIET / "agno", QUIET / "repeat" / "agno"),
    ],
    ids=["scale-1", "scale-0.1", "quiet-reference", "quiet-agno"],
)
def test_the_same_plan_twice_finds_nothing_beyond_noise(base, run):
    comparison = compare(*runs(base, run))
    assert comparison.pairing is Pairing.GATE
    assert comparison.differences.plan == () and comparison.differences.platform is None
    # The stub's and the platform's random ports are no difference.
    assert not [line for line in comparison.environment if line.startswith(("topology", "host"))]
    assert comparison.rises == () and comparison.falls == ()
    # A busy machine may leave a rise untold (exit 2, not a pass); it never fails a build.
    assert comparison.exit_code in (0, 2)
    assert bool(comparison.untold) == (comparison.exit_code == 2)


def test_on_this_busy_machine_the_pair_says_it_cannot_tell():
    comparison = compare(*runs(PAIRS / "full-2", PAIRS / "full-3"))
    # Sustain's api_read p95 was 32 ms in one and 284 ms in the other while the platform
    # waited for a CPU half of its ready time: that is the machine, said as such.
    untold = {(c.where, c.workload) for c in comparison.untold}
    assert ("sustain", "api_read") in untold
    assert comparison.exit_code == 2
    assert "the API process waited for a CPU this share of its ready time" in " ".join(
        comparison.environment
    )


def test_scale_1_against_0_1_is_refused_and_judged_nowhere(tmp_path, capsys):
    base, run = PAIRS / "full-2", shutil.copytree(PAIRS / "s01-q1", tmp_path / "s01")
    said = re.escape("scale 1 in BASE, 0.1 in RUN; ramp 60 s at 4/s in BASE, 6 s at 4/s in RUN")
    with pytest.raises(CompareRefused, match=said):
        compare(*runs(base, run))
    assert compare_runs(base, run) == 2
    assert "burst 45 s at 36/s in BASE, 4.5 s at 36/s in RUN" in capsys.readouterr().err
    forced = compare(*runs(base, run), force=True)
    assert forced.pairing is Pairing.PLANS and forced.found == ()
    assert forced.regressions == () and forced.improvements == ()


@pytest.mark.parametrize("other", ["agno-01", "langgraph-01"])
def test_two_platforms_say_so_and_are_no_gate(other, tmp_path, capsys):
    base, run = PAIRS / "s01-q1", shutil.copytree(PAIRS / other, tmp_path / other)
    comparison = compare(*runs(base, run))
    assert comparison.pairing is Pairing.PLATFORMS
    assert comparison.regressions == () and comparison.improvements == ()
    assert comparison.exit_code == 2
    assert compare_runs(base, run) == 2
    platform = other.split("-")[0]
    assert capsys.readouterr().out.startswith(
        f"two platforms (agenticos in BASE, {platform} in RUN), not a regression gate: "
    )
    markdown = next(run.glob("compare-*.md")).read_text()
    assert markdown.index("Two platforms") < markdown.index("## Per phase and workload")


def test_runs_made_before_the_wait_was_probed_say_so():
    comparison = compare(*runs(BUSY / "reference", BUSY / "repeat" / "reference"))
    assert (
        "the API process's wait for a CPU was not probed in BASE and RUN: a latency change on "
        "a busier machine cannot be told from the release's"
    ) in comparison.environment
