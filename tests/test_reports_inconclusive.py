"""Checks a run cannot judge, and checks it can judge on what is known.

A plan too small for a check's minimum count (scenario.yaml judging.min_counts)
is inconclusive, exit 2: not a pass, and not a failure the platform committed. A
failure that is certain whatever the missing arrivals or the unverifiable work
would have done is still a failure, exit 1. A workload the scenario gives no
share is neither judged nor counted, and is listed once.
"""

from __future__ import annotations

import json

import pandas as pd

from bench.synthetic_runs import synthetic_samples, write_run_dir
from engine.followups import COLUMNS as FOLLOWUP_COLUMNS
from engine.followups import FAILED_AFTER, NOT_VERIFIABLE, PROCESSED
from inputs.scenario import load_scenario, scenario_from_dict
from reports.build import build_report
from reports.rundir import load_run
from reports.stats import run_stats
from reports.system import system_stats
from reports.thresholds import FAIL, INCONCLUSIVE, NOT_MEASURED, PASS
from reports.verdict import judge
from webui.verdict_tab import verdict_rows

# The shipped scenario and its minimums, shortened until several checks fall below them.
SMALL = load_scenario().scaled(0.05)
FULL = load_scenario()


def _verdict(path):
    run = load_run(path)
    return judge(run, run_stats(run), system_stats(run))


def _row(verdict, workload, metric, phase):
    return next(
        t
        for t in verdict.thresholds
        if (t.workload, t.metric, t.phase) == (workload, metric, phase)
    )


def test_a_plan_too_small_for_its_checks_is_inconclusive_exit_2(tmp_path, capsys):
    path = write_run_dir(tmp_path / "small", SMALL)
    verdict = _verdict(path)
    trigger = _row(verdict, "trigger_fire", "error_rate", "recover")
    assert trigger.status == INCONCLUSIVE and trigger.min_count == 20
    assert trigger.reading.endswith("the check needs 20")
    assert FAIL not in verdict.checks and PASS in verdict.checks
    assert (verdict.exit_code, verdict.word) == (2, INCONCLUSIVE)
    assert build_report(path) == 2
    out = capsys.readouterr().out.splitlines()
    # Each workload's figures first, as k6 ends a run, then the verdict once.
    assert out[0].split()[:2] == ["whole", "run"]
    verdict_lines = [line for line in out if line.startswith("INCONCLUSIVE (exit 2): ")]
    assert len(verdict_lines) == 1 and out.index(verdict_lines[0]) > 6
    summary = json.loads((path / "summary.json").read_text())
    assert (summary["verdict"], summary["exit_code"]) == ("inconclusive", 2)
    assert any(f["kind"] == INCONCLUSIVE for f in summary["findings"])
    markdown = (path / "report.md").read_text()
    glance = markdown.split('<a id="charts"></a>')[0]
    assert "**INCONCLUSIVE (exit 2): " in glance
    # The first screen lists six findings and points to the Verdict section for the rest,
    # so each workload's headline still fits under them; the Verdict section lists all.
    more = len(summary["findings"]) - 6
    assert more > 0 and f"[{more} more, each in the Verdict section: " in glance
    assert glance.count("> - [inconclusive: ") == 6
    verdict_section = markdown.split('<a id="verdict"></a>')[1]
    assert verdict_section.count("> - [inconclusive: ") == len(summary["findings"])
    html = (path / "report.html").read_text()
    assert 'class="banner warn"' in html
    assert verdict_rows(path, offered=None)[0]["workload"].startswith(
        "final: INCONCLUSIVE (exit 2)"
    )


def test_a_full_size_plan_is_judged_in_every_phase(tmp_path):
    # 21 trigger_fire in recover: the smallest judged count at --scale 1, above every minimum.
    path = write_run_dir(tmp_path / "full", FULL)
    verdict = _verdict(path)
    assert INCONCLUSIVE not in verdict.checks
    assert verdict.exit_code == 0


def test_a_failure_certain_on_few_arrivals_still_fails_exit_1(tmp_path):
    samples = synthetic_samples(SMALL)
    # One of sustain's few ingest uploads lost: above a 0% limit however many more came.
    ingest = samples.index[(samples.phase == "sustain") & (samples.workload == "ingest")]
    samples.loc[ingest[0], ["status", "ok", "outcome", "detail"]] = [500, 0, "failed", "HTTP 500"]
    # agent_run's first arrivals slow: two above the limit make a p95 over 20 exceed it even
    # if the four missing had answered at once.
    agent = samples.index[(samples.phase == "sustain") & (samples.workload == "agent_run")]
    samples.loc[agent[:2], "latency_ms"] = 9_000.0
    path = write_run_dir(tmp_path / "certain", SMALL, samples)
    verdict = _verdict(path)
    lost = _row(verdict, "ingest", "error_rate", "sustain")
    assert lost.status == FAIL and lost.samples < lost.min_count
    assert "above the limit even had" in lost.reading
    slow = _row(verdict, "agent_run", "p95_ms", "sustain")
    assert slow.status == FAIL and slow.samples == len(agent) < 20
    assert f"even had {20 - len(agent)} more answered at once" in slow.reading
    assert INCONCLUSIVE in verdict.checks
    assert verdict.exit_code == 1


def _with_followups(path, states: dict[int, str]) -> None:
    rows = [(k, "ingest", f"doc-{k}", state, "the platform's words") for k, state in states.items()]
    pd.DataFrame(rows, columns=list(FOLLOWUP_COLUMNS)).to_csv(path / "followups.csv", index=False)


def _ingest_scenario(limit: float):
    raw = FULL.scaled(0.25).to_dict()
    raw["thresholds"] = [
        {"workload": "ingest", "metric": "error_rate", "limit": limit, "phases": ["sustain"]}
    ]
    return scenario_from_dict(raw)


def test_unverifiable_work_that_could_tip_a_rate_is_not_measured_with_both_figures(tmp_path):
    scenario = _ingest_scenario(0.0)
    samples = synthetic_samples(scenario)
    ingest = samples[(samples.phase == "sustain") & (samples.workload == "ingest")]["index"]
    path = write_run_dir(tmp_path / "tip", scenario, samples)
    _with_followups(
        path, {int(k): PROCESSED for k in ingest[3:]} | dict.fromkeys(ingest[:3], NOT_VERIFIABLE)
    )
    row = _row(_verdict(path), "ingest", "error_rate", "sustain")
    assert (row.status, row.measured, row.unverified) == (NOT_MEASURED, 0.0, 3)
    assert row.reading == f"0.00% known, up to {3 / len(ingest):.2%}: 3 not verifiable"


def test_unverifiable_work_that_cannot_tip_a_rate_passes_and_lost_work_fails(tmp_path):
    scenario = _ingest_scenario(0.5)
    samples = synthetic_samples(scenario)
    ingest = samples[(samples.phase == "sustain") & (samples.workload == "ingest")]["index"]
    path = write_run_dir(tmp_path / "cannot", scenario, samples)
    _with_followups(
        path, {int(k): PROCESSED for k in ingest[2:]} | dict.fromkeys(ingest[:2], NOT_VERIFIABLE)
    )
    row = _row(_verdict(path), "ingest", "error_rate", "sustain")
    assert row.status == PASS and "a pass even were the 2 not verifiable all lost" in row.reading
    lost = len(ingest) // 2 + 1
    _with_followups(
        path,
        dict.fromkeys(ingest[:lost], FAILED_AFTER)
        | dict.fromkeys(ingest[lost : lost + 2], NOT_VERIFIABLE)
        | {int(k): PROCESSED for k in ingest[lost + 2 :]},
    )
    row = _row(_verdict(path), "ingest", "error_rate", "sustain")
    assert row.status == FAIL
    assert row.reading == f"at least {lost / len(ingest):.2%} failed; 2 more not verifiable"


def test_a_workload_the_scenario_does_not_offer_is_listed_once_and_never_judged(tmp_path):
    raw = FULL.scaled(0.2).to_dict()
    for name, spec in raw["workloads"].items():
        spec["share"] = 1.0 if name == "api_read" else 0.0
    scenario = scenario_from_dict(raw)
    path = write_run_dir(tmp_path / "reads", scenario, synthetic_samples(scenario))
    verdict = _verdict(path)
    assert {t.workload for t in verdict.thresholds} == {"api_read"}
    assert {c.workload for c in verdict.recovery.checks} == {"api_read"}
    assert set(verdict.not_offered) == set(FULL.mix) - {"api_read"}
    assert build_report(path) == 0
    markdown = (path / "report.md").read_text()
    for name in verdict.not_offered:
        assert markdown.count(f"| {name} |") == 1, name
        row = next(line for line in markdown.splitlines() if line.startswith(f"| {name} |"))
        assert row.endswith("Not offered by the scenario: its share is 0. |"), row
    summary = json.loads((path / "summary.json").read_text())
    assert summary["headline"].startswith("PASS (exit 0): ")
    assert set(summary["not_offered"]) == set(verdict.not_offered)
    assert set(summary["whole_run"]["workloads"]) == {"api_read"}
