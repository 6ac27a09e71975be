"""Real runs against what the plan knows before load: too few arrivals, workloads not offered,
and the connections the offered workloads need.

A plan too small for a check's minimum says so before any load, one line per check
with what reaches it, and the run ends INCONCLUSIVE with exit 2 (issue 19). A
workload the scenario gives no share is not preflighted, not sized for and not
judged, and the connection bound warns only when it really binds (issue 25).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.dataset import FOLLOWUPS
from engine.limits import FD_RESERVE
from inputs.scenario import DEFAULT_PATH
from stack.generator_runs import read_run, read_table, write_scenario
from tests.support.generator_env import invalid_reasons, run_local

pytestmark = [pytest.mark.system, pytest.mark.slow]

# A busy shared machine's scheduling jitter (as tests/test_generator_run.py allows): these
# runs are about what is judged, not about the machine's speed.
LATENESS = {"late_after_ms": 250.0, "max_late_fraction": 0.05}
# Open files a load process gets in the connection tests: reads only, it holds a socket per
# concurrent arrival beside FD_RESERVE (engine/limits.py process_connection_limit).
FILES = FD_RESERVE + 500
HOLDS = FILES - FD_RESERVE
READS_ONLY = {"api_read": 1, "chat_stream": 0, "agent_run": 0, "rag_query": 0, "ingest": 0}
# What marks a line said before load about a check the plan cannot judge.
BEFORE_LOAD = "inconclusive before load: "


def _out_of_reach(tmp: Path) -> Path:
    """The shipped scenario (phases, mix, minimums) with every limit out of reach and a busy
    machine's lateness allowed: only a plan too small can keep such a run from passing."""
    raw = yaml.safe_load(DEFAULT_PATH.read_text())
    for threshold in raw["thresholds"]:
        threshold["limit"] = 1.0 if threshold["metric"] == "error_rate" else 600_000
    raw["lateness"] = LATENESS
    path = tmp / "scenario.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _said_before_load(stderr: str) -> list[str]:
    """The lines said before load about checks the plan cannot judge; load starts with the
    conductor's "run <id>: N load process(es)" line, which must come after all of them."""
    lines = stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if "load process(es)" in line)
    said = [i for i, line in enumerate(lines) if BEFORE_LOAD in line]
    assert said and max(said) < start, stderr[-3000:]
    return [lines[i].split(BEFORE_LOAD, 1)[1] for i in said]


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def test_scale_0_05_plans_no_trigger_fire_in_recover_and_ends_inconclusive(plat, tmp_path):
    run_dir = tmp_path / "run"
    result = run_local(plat, _out_of_reach(tmp_path), run_dir, "--scale", "0.05")
    said = _said_before_load(result.stderr)
    assert (
        "trigger_fire error rate in recover: the plan offers 0 arrivals, the check needs 20; "
        "--scale 0.95 offers 21" in said
    )
    assert said[-1] == "23 checks; --scale 0.95 offers every one its minimum"
    assert result.returncode == 2, invalid_reasons(run_dir, result)
    summary = _summary(run_dir)
    assert (summary["verdict"], summary["validity"]["status"]) == ("inconclusive", "valid")
    assert summary["headline"].startswith("INCONCLUSIVE (exit 2): ")
    inconclusive = {
        (t["workload"], t["metric"], t["phase"])
        for t in summary["thresholds"]
        if t["status"] == "inconclusive"
    }
    assert ("trigger_fire", "error_rate", "recover") in inconclusive
    assert "INCONCLUSIVE (exit 2)" in result.stdout


def test_a_short_constant_rate_ends_inconclusive_with_the_run_time_that_reaches_it(plat, tmp_path):
    """Also a second run of the module's run directory name against its platform: the
    platform sees a new run (webhook ids it never saw), so its delivery is followed to the
    routine run it became, not waited on for the whole grace as a deduped one was."""
    run_dir = tmp_path / "run"
    scenario = _out_of_reach(tmp_path)
    result = run_local(plat, scenario, run_dir, "--rate", "5", "--run-time", "10s")
    said = _said_before_load(result.stderr)
    assert any(
        line.startswith("trigger_fire error rate in rate1@5/s: the plan offers 1 arrival")
        and line.endswith("--run-time 134s at 5/s offers 20")
        for line in said
    ), said
    assert result.returncode == 2, invalid_reasons(run_dir, result)
    summary = _summary(run_dir)
    statuses = {(t["workload"], t["metric"]): t["status"] for t in summary["thresholds"]}
    # 22 api_read arrivals are enough to judge; ingest's 3 and trigger_fire's 1 are not.
    assert statuses[("api_read", "error_rate")] == "pass"
    assert statuses[("ingest", "error_rate")] == "inconclusive"
    assert statuses[("trigger_fire", "error_rate")] == "inconclusive"
    deliveries = [r for r in read_table(run_dir, FOLLOWUPS) if r["workload"] == "trigger_fire"]
    assert deliveries and {r["state"] for r in deliveries} == {"processed"}, deliveries


@pytest.mark.parametrize(
    ("timeout_s", "binds"),
    [
        # 10/s x api_read's own 40 s = 400, within the 500 one process holds; sized by the
        # slowest timeout of the mix (90 s, workloads never offered) it was 900 and warned.
        (40, False),
        # 10/s x 60 s = 600: more than one process holds, so the cap binds and says so.
        (60, True),
    ],
)
def test_connections_follow_the_offered_workloads_and_warn_only_when_capped(
    plat, tmp_path, timeout_s, binds
):
    scenario = write_scenario(
        tmp_path,
        [("sustain", 2.0, 10.0)],
        workloads=READS_ONLY,
        timeouts={"default_s": timeout_s, "chat_stream_s": 90, "agent_run_s": 90},
        lateness=LATENESS,
    )
    run_dir = tmp_path / "run"
    result = run_local(plat, scenario, run_dir, open_files=FILES)
    record = read_run(run_dir)
    assert record["connections_needed"] == 10 * timeout_s
    warned = [line for line in result.stderr.splitlines() if "--connections: " in line]
    if binds:
        assert len(warned) == 1 and f"capped at {HOLDS}" in warned[0], result.stderr[-2000:]
        assert record["connections"] == HOLDS and "capped" in record["connections_note"]
    else:
        assert warned == [], warned
        assert record["connections"] == 10 * timeout_s and record["connections_note"] == ""
    assert result.returncode == 0, invalid_reasons(run_dir, result)


def test_a_reads_only_scenario_against_a_fixture_without_a_trigger_passes(plat, tmp_path):
    """Only api_read has a share: nothing else is preflighted (the missing trigger is not
    even looked at), sized for or judged, and the report lists the rest once as not
    offered by the scenario. The shipped thresholds name every workload; api_read's
    limits are loosened for a busy machine, since what is under test is who is judged."""
    fixture = json.loads(plat.fixture.read_text())
    fixture["seeded"]["trigger_id"] = None
    no_trigger = tmp_path / "fixture.json"
    no_trigger.write_text(json.dumps(fixture))
    thresholds = yaml.safe_load(DEFAULT_PATH.read_text())["thresholds"]
    for threshold in thresholds:
        if threshold["workload"] == "api_read":
            threshold["limit"] = 0.05 if threshold["metric"] == "error_rate" else 5_000
    scenario = write_scenario(
        tmp_path,
        [("sustain", 3.0, 10.0)],
        workloads={**READS_ONLY, "trigger_fire": 0},
        thresholds=thresholds,
        lateness=LATENESS,
    )
    run_dir = tmp_path / "run"
    result = run_local(plat, scenario, run_dir, "--fixture", str(no_trigger))
    assert result.returncode == 0, invalid_reasons(run_dir, result)
    assert "trigger_fire skipped" not in result.stderr
    assert BEFORE_LOAD not in result.stderr
    record = read_run(run_dir)
    assert record["skipped"] == {}
    assert record["connections_needed"] == 10 * 10  # api_read's own 10 s timeout, at 10/s
    summary = _summary(run_dir)
    assert summary["verdict"] == "pass"
    assert {t["workload"] for t in summary["thresholds"]} == {"api_read"}
    not_offered = {"chat_stream", "agent_run", "rag_query", "ingest", "trigger_fire"}
    assert set(summary["not_offered"]) == not_offered
    markdown = (run_dir / "report.md").read_text()
    for name in not_offered:
        rows = [line for line in markdown.splitlines() if line.startswith(f"| {name} |")]
        assert len(rows) == 1 and "Not offered by the scenario" in rows[0], rows
