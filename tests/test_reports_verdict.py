"""The verdict judges burst and recover: doctored run directories that must fail, and one that
must recover at the right time.

Each run is the seeded synthetic run of bench/synthetic_runs.py with one thing broken by
hand: a workload shed entirely in recover, a workload failing as much in sustain
as in recover, a recover that is slow for its first seconds and good after.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench.synthetic_runs import schedule, synthetic_samples, write_run_dir
from engine.samples import OPERATOR_STOP
from inputs.scenario import ScenarioError, load_scenario, scenario_from_dict
from reports.build import build_report
from reports.live import STOPPED, final_verdict
from reports.recovery import NOT_JUDGED, NOT_RECOVERED, RECOVERED, RECOVERY_WINDOW
from reports.rundir import load_run
from reports.stats import run_stats
from reports.system import system_stats
from reports.thresholds import FAIL, NOT_MEASURED
from reports.verdict import judge
from tests.support.rundirs import ANY_COUNT, edit_run_json, judged_at_any_count
from webui.verdict_tab import verdict_rows

# Long enough that recover holds a few windows of every large workload (12 s at 12/s); every
# check judged however few its arrivals (the minimums are tested in test_reports_inconclusive).
SCENARIO = judged_at_any_count(load_scenario().scaled(0.2))


def _recover_start() -> float:
    return next(p["start_s"] for p in schedule(SCENARIO) if p["name"] == "recover")


def _shed(samples, phase: str, workload: str):
    rows = (samples["phase"] == phase) & (samples["workload"] == workload)
    samples.loc[rows, ["status", "ok", "outcome", "detail"]] = [429, 0, "shed", "HTTP 429"]
    samples.loc[rows, "ttft_ms"] = np.nan
    return samples


def _verdict(path):
    run = load_run(path)
    stats = run_stats(run)
    return judge(run, stats, system_stats(run))


def test_a_clean_run_passes_and_recovers_at_once(tmp_path):
    path = write_run_dir(tmp_path / "clean", SCENARIO)
    assert build_report(path) == 0
    summary = json.loads((path / "summary.json").read_text())
    assert summary["recovery"]["status"] == RECOVERED
    assert all(w["time_to_recover_s"] == 0.0 for w in summary["recovery"]["workloads"].values())


def test_everything_shed_in_recover_fails(tmp_path, capsys):
    samples = _shed(synthetic_samples(SCENARIO), "recover", "agent_run")
    path = write_run_dir(tmp_path / "shed", SCENARIO, samples)
    assert build_report(path) == 1
    out = capsys.readouterr().out
    # Each workload's figures over the whole run, then the verdict once.
    assert out.startswith("  whole run ") and out.count("\nFAIL (exit 1)") == 1
    # The console's short list: kind, phase, workload, metric, limit and measured with units, n.
    line = next(x for x in out.splitlines() if "recover" in x and "error rate" in x)
    assert "≤ 1.00%" in line and "100.00%" in line
    n = int((samples.phase == "recover").mul(samples.workload == "agent_run").sum())
    assert line.split()[-1] == str(n)
    assert "agent_run never, within the phase" in out
    summary = json.loads((path / "summary.json").read_text())
    assert summary["recovery"]["workloads"]["agent_run"] == {
        "status": NOT_RECOVERED,
        "time_to_recover_s": None,
        "why": "",
    }
    kinds = {(f["kind"], f["phase"], f["workload"]) for f in summary["findings"]}
    assert ("failed", "recover", "agent_run") in kinds
    assert ("not recovered", "recover", "agent_run") in kinds
    assert ("failed", "burst", "agent_run") not in kinds


def test_recovery_fails_a_run_even_without_a_recover_threshold(tmp_path):
    samples = _shed(synthetic_samples(SCENARIO), "recover", "agent_run")
    path = write_run_dir(tmp_path / "bare", SCENARIO, samples)
    edit_run_json(path, scenario={"thresholds": []})
    verdict = _verdict(path)
    assert [c.workload for c in verdict.unrecovered] == ["agent_run"]
    assert verdict.exit_code == 1
    edit_run_json(
        path, scenario={"judging": {"recovery": "informational", "min_counts": ANY_COUNT}}
    )
    assert _verdict(path).exit_code == 0
    assert build_report(path) == 0
    summary = json.loads((path / "summary.json").read_text())
    assert summary["headline"] == (
        "PASS (exit 0): 0 checks; recovery (informational): 1 not recovered, 5 recovered; 1 flagged"
    )
    kinds = [f["kind"] for f in summary["findings"]]
    assert kinds == ["not recovered (informational)", "flag"]


def test_failing_equally_in_sustain_and_recover_is_not_recovered(tmp_path):
    broken = {(phase, "rag_query"): 0.98 for phase in ("ramp", "sustain", "burst", "recover")}
    path = write_run_dir(
        tmp_path / "broken", SCENARIO, synthetic_samples(SCENARIO, error_rates=broken)
    )
    verdict = _verdict(path)
    check = next(c for c in verdict.recovery.checks if c.workload == "rag_query")
    assert check.status == NOT_JUDGED and check.time_to_recover_s is None
    failed = {(t.workload, t.phase) for t in verdict.thresholds if t.status == FAIL}
    assert {("rag_query", "sustain"), ("rag_query", "recover")} <= failed
    assert verdict.exit_code == 1
    assert build_report(path) == 1
    summary = json.loads((path / "summary.json").read_text())
    assert summary["recovery"]["workloads"]["rag_query"]["status"] == "not judged"
    assert "rag_query not judged" in summary["recovery_line"]


@pytest.mark.parametrize("slow_for_s", [3.0, 6.0])
def test_slow_then_good_recover_times_within_one_window(tmp_path, slow_for_s):
    samples = synthetic_samples(SCENARIO)
    start = _recover_start()
    slow = (
        (samples.phase == "recover")
        & (samples.workload == "api_read")
        & (samples.due_s < start + slow_for_s)
    )
    samples.loc[slow, ["latency_ms", "latency_due_ms"]] *= 20
    path = write_run_dir(tmp_path / "slow", SCENARIO, samples)
    check = next(c for c in _verdict(path).recovery.checks if c.workload == "api_read")
    assert check.status == RECOVERED
    api_rate = SCENARIO.phases[-1].rate * SCENARIO.mix["api_read"]
    window_s = RECOVERY_WINDOW / api_rate
    assert abs(check.time_to_recover_s - slow_for_s) <= window_s
    assert build_report(path) == 0
    ttr = json.loads((path / "summary.json").read_text())["recovery"]["workloads"]["api_read"]
    assert ttr["time_to_recover_s"] == pytest.approx(check.time_to_recover_s)
    assert "time to recover" in (path / "report.md").read_text()


@pytest.mark.parametrize(("above_p95_ms", "status"), [(40.0, RECOVERED), (80.0, NOT_RECOVERED)])
def test_the_band_allows_a_small_absolute_rise_on_a_fast_workload(tmp_path, above_p95_ms, status):
    # api_read's sustain p95 is about 65 ms: +40 ms is far above 1.2 x, within +50 ms.
    samples = synthetic_samples(SCENARIO)
    sustain = samples[(samples.phase == "sustain") & (samples.workload == "api_read")]
    p95 = np.sort(sustain.latency_ms.to_numpy())[int(np.ceil(0.95 * len(sustain))) - 1]
    recover = (samples.phase == "recover") & (samples.workload == "api_read")
    samples.loc[recover, "latency_ms"] = p95 + above_p95_ms
    path = write_run_dir(tmp_path / "band", SCENARIO, samples)
    check = next(c for c in _verdict(path).recovery.checks if c.workload == "api_read")
    assert check.status == status


def test_a_workload_skipped_at_preflight_is_named_and_not_measured(tmp_path):
    reason = "the trigger refused the signature (HTTP 403): run make seed"
    path = write_run_dir(tmp_path / "skipped", SCENARIO, skipped={"trigger_fire": reason})
    verdict = _verdict(path)
    row = next(t for t in verdict.thresholds if t.phase == "preflight")
    assert (row.workload, row.status, row.why) == ("trigger_fire", NOT_MEASURED, reason)
    assert verdict.exit_code == 1
    assert build_report(path) == 1
    markdown = (path / "report.md").read_text()
    assert f"- trigger_fire: {reason}" in markdown
    glance = markdown.split("## What was run")[0]
    assert "not measured: trigger_fire samples in preflight" in glance


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"phases": ["sustain", "nope"]}, "thresholds[0].phases"),
        ({"phases": ["sustain", "sustain"]}, "thresholds[0].phases"),
        ({"phases": "sometimes"}, "thresholds[0].phases"),
        ({"phase": "burst", "phases": ["burst"]}, "thresholds[0]"),
    ],
)
def test_bad_threshold_phases_are_one_line_naming_the_field(change, field):
    raw = SCENARIO.to_dict()
    raw["thresholds"][0].pop("phases")
    raw["thresholds"][0].update(change)
    with pytest.raises(ScenarioError) as caught:
        scenario_from_dict(raw)
    assert str(caught.value).startswith(f"{field}:") and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("judging", "field"),
    [
        ({"recovery": "maybe"}, "judging.recovery"),
        ({"latency_phases": ["warmup"]}, "judging.latency_phases"),
        ({"when": 1}, "judging.when"),
    ],
)
def test_bad_judging_is_one_line_naming_the_field(judging, field):
    raw = SCENARIO.to_dict()
    raw["judging"] = judging
    with pytest.raises(ScenarioError) as caught:
        scenario_from_dict(raw)
    assert str(caught.value).startswith(f"{field}:")


def test_shipped_defaults_judge_error_rates_after_sustain_and_latency_in_sustain():
    by_metric = {(t.workload, t.metric): t.phases for t in SCENARIO.thresholds}
    assert by_metric[("agent_run", "error_rate")] == ("sustain", "burst", "recover")
    assert by_metric[("api_read", "p95_ms")] == ("sustain",)
    assert SCENARIO.judging.recovery_required
    everywhere = scenario_from_dict(
        {
            **SCENARIO.to_dict(),
            "thresholds": [{**SCENARIO.to_dict()["thresholds"][0], "phases": "all"}],
        }
    )
    assert everywhere.thresholds[0].phases == tuple(p.name for p in SCENARIO.phases)


def test_an_operators_stop_is_invalid_at_its_time_and_blames_nothing_else(tmp_path):
    """The Stop cut off arrivals in flight and some not yet sent: they are abandoned, but no
    error rate counts them, no lateness either, and the verdict names only the Stop."""
    samples = synthetic_samples(SCENARIO)
    stop_s = float(samples["due_s"].quantile(0.6))
    cut = samples["finished_s"] > stop_s
    never_sent = samples["sent_s"] > stop_s
    abandoned = ["abandoned", "abandoned at end", 0, 0]
    samples.loc[cut, ["outcome", "detail", "ok", "status"]] = abandoned
    samples.loc[cut, "finished_s"] = stop_s
    samples.loc[never_sent, "sent_s"] = np.nan
    path = write_run_dir(
        tmp_path / "run", SCENARIO, samples, stopped=OPERATOR_STOP, duration_s=stop_s
    )
    run = load_run(path)
    stats = run_stats(run)
    total = stats.whole.total
    assert total.abandoned == total.stop_cut == int(cut.sum()) > 0
    assert total.error_rate == 0.0 and total.failures == 0
    assert stats.lateness.late == 0
    verdict = judge(run, stats, system_stats(run))
    assert verdict.exit_code == 2
    assert verdict.invalid_reasons == (
        f"stopped by the operator at t = {stop_s:.1f} s; a partial run is not a result",
    )
    assert verdict.thresholds == () and verdict.jumps == () and verdict.recovery is None
    # The live tab, before the report and after it, agrees: never "valid so far" under "final".
    assert final_verdict(path, run.record) == STOPPED
    build_report(path)
    rows = verdict_rows(path, None)
    head, validity = (row["workload"] for row in rows[:2])
    assert head.startswith("final: INVALID (exit 2)") and "stopped by the operator" in head
    assert "valid so far" not in validity
    # ... and it judges nothing, and says so, in the head and in every workload's row.
    assert "nothing is judged: the operator stopped the run" in head
    workloads = [row for row in rows if row.get("thresholds")]
    assert workloads and all(
        row["thresholds"] == "not judged (stopped by the operator)" for row in workloads
    )


def _api_read_recover(samples):
    rows = samples[(samples.phase == "recover") & (samples.workload == "api_read")]
    return rows.sort_values("due_s").index


def _recovery_of_api_read(tmp_path, samples):
    path = write_run_dir(tmp_path / "tail", SCENARIO, samples)
    return next(c for c in _verdict(path).recovery.checks if c.workload == "api_read")


def test_two_slow_reads_at_the_end_of_recover_are_not_a_platform_that_never_came_back(tmp_path):
    """Seen on `make demo PLATFORM=langgraph` on a busy machine: two reads of 196 and 82 ms
    in the phase's last second (p95 over recover 7.9 ms, sustain's 5.5 ms) made the last
    window's p95 (its 19th value) leave the band, and the verdict said "never"."""
    samples = synthetic_samples(SCENARIO)
    last_two = _api_read_recover(samples)[-3:-1]
    samples.loc[last_two, ["latency_ms", "latency_due_ms"]] *= 40
    check = _recovery_of_api_read(tmp_path, samples)
    assert (check.status, check.time_to_recover_s) == (RECOVERED, 0.0)


def test_a_recover_that_slows_again_for_its_last_tenth_has_not_recovered(tmp_path):
    samples = synthetic_samples(SCENARIO)
    index = _api_read_recover(samples)
    samples.loc[index[-len(index) // 10 :], ["latency_ms", "latency_due_ms"]] *= 20
    assert _recovery_of_api_read(tmp_path, samples).status == NOT_RECOVERED


def test_one_failure_in_the_last_window_is_never_noise(tmp_path):
    samples = synthetic_samples(SCENARIO)
    last = _api_read_recover(samples)[-1:]
    samples.loc[last, ["status", "ok", "outcome", "detail"]] = [500, 0, "failed", "HTTP 500"]
    assert _recovery_of_api_read(tmp_path, samples).status == NOT_RECOVERED


def test_slow_at_first_and_a_blip_at_the_end_recovers_when_it_came_back(tmp_path):
    samples = synthetic_samples(SCENARIO)
    start = _recover_start()
    index = _api_read_recover(samples)
    early = samples.loc[index, "due_s"] < start + 3.0
    samples.loc[index[early.to_numpy()], ["latency_ms", "latency_due_ms"]] *= 20
    samples.loc[index[-3:-1], ["latency_ms", "latency_due_ms"]] *= 40
    check = _recovery_of_api_read(tmp_path, samples)
    api_rate = SCENARIO.phases[-1].rate * SCENARIO.mix["api_read"]
    assert check.status == RECOVERED
    assert abs(check.time_to_recover_s - 3.0) <= RECOVERY_WINDOW / api_rate
