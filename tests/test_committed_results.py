"""Every committed run under results/ rebuilds, through the typed run.json, to the verdict its
summary.json records, or differs from it only by a verdict rule made after it was committed.

The rules since: a check over fewer arrivals than its minimum is inconclusive (7040a71,
scenario.yaml's judging.min_counts; before, pass or not measured), and accepted work nothing
verified is never a pass (fa1744d; the 2026-11-29 runs had no follow-up). A result's summary
is what was published, so it is compared, not rewritten; any other difference fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest

from reports.rundir import load_run
from reports.stats import run_stats
from reports.summarise import summarise
from reports.system import system_stats
from reports.verdict import judge
from stack.processes import ROOT

RUNS = sorted(path.parent for path in (ROOT / "results").rglob("run.json"))
# How a check's rebuilt reading says a later rule decided it, and the status that rule gives.
LATER_RULES = (
    (re.compile(r"^[\d,]+ (timed )?arrivals? offered; the check needs [\d,]+$"), "inconclusive"),
    (re.compile(r"not verifiable"), "not measured"),
)
pytestmark = [pytest.mark.slow]


def _verdict(facts: dict) -> dict:
    """What a verdict is: its word, exit code, validity and each check's status."""
    return {
        "verdict": facts["verdict"],
        "exit_code": facts["exit_code"],
        "validity": facts.get("validity", {}).get("status"),
        "checks": {
            (t["workload"], t["phase"], t["metric"]): t["status"] for t in facts["thresholds"]
        },
    }


def _rebuilt(run_dir: Path) -> dict:
    run = load_run(run_dir)
    stats = run_stats(run)
    system = system_stats(run)
    return msgspec.to_builtins(summarise(run, stats, system, judge(run, stats, system)))


def test_there_are_committed_runs():
    assert len(RUNS) > 40


@pytest.mark.parametrize("run_dir", RUNS, ids=[str(r.relative_to(ROOT / "results")) for r in RUNS])
def test_a_committed_run_rebuilds_to_its_verdict(run_dir):
    facts = _rebuilt(run_dir)
    now = _verdict(facts)
    then = _verdict(json.loads((run_dir / "summary.json").read_text()))
    if then["validity"] is None:  # summaries from before validity was written
        then["validity"] = now["validity"]
    readings = {(t["workload"], t["phase"], t["metric"]): t["reading"] for t in facts["thresholds"]}
    changed = {
        check for check in now["checks"] if now["checks"][check] != then["checks"].get(check)
    }
    unexplained = [
        (check, then["checks"].get(check), now["checks"][check], readings[check])
        for check in changed
        if not any(
            rule.search(readings[check]) and now["checks"][check] == status
            for rule, status in LATER_RULES
        )
    ]
    assert not unexplained
    assert set(now["checks"]) == set(then["checks"])
    if not changed:
        assert now == then
