"""A fault window's section and checks on synthetic runs whose answers are known
(reports/faults.py).

The run: sustain 60 s and recover 20 s at 10 arrivals a second, every answer 100 ms, and an
outage in sustain from 20 s to 30 s. Every arrival due from 20 s to 35 s fails (the window,
then five seconds the platform takes to come back), so each workload's time to recover is
exactly the due time of its first arrival from 35 s on, less 30 s. The stub's record gives
every turn one model call, and three to the chat turns and two to the agent runs due in the
window: amplification 3.0 and 2.0.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from jsonschema import Draft202012Validator

from bench.synthetic_runs import synthetic_samples, write_run_dir
from engine.dataset import STUB_CALLS, write_table
from engine.fault_record import (
    APPLIED,
    FAULTS_DIR,
    GUARD_EVENTS,
    STUB_EVENTS,
    UNDO_FAILED,
    UNDONE,
    FaultEvent,
    append_event,
)
from inputs.scenario import scenario_from_dict
from reports.build import write_report
from reports.faults import AMPLIFICATION, TIME_TO_RECOVER
from reports.rundir import RunDirError, load_run
from reports.stats import run_stats
from reports.summary import SCHEMA_FILE, read_summary
from reports.system import system_stats
from reports.thresholds import FAIL, INCONCLUSIVE, PASS
from reports.verdict import judge
from runner.live_metrics import RunMetrics

SCHEMA = json.loads(SCHEMA_FILE.read_text())
START_EPOCH = 1795000000.0
RUN_ID = "faulty"


def _scenario(faults: list[dict], thresholds: list[dict] | None = None):
    return scenario_from_dict(
        {
            "name": "faulty",
            "workloads": {"api_read": 50, "chat_stream": 30, "agent_run": 20},
            "phases": [
                {"name": "sustain", "duration_s": 60, "rate": 10},
                {"name": "recover", "duration_s": 20, "rate": 10},
            ],
            "thresholds": thresholds
            or [{"workload": "api_read", "metric": "error_rate", "limit": 0.2}],
            "faults": faults,
            "chat_cancel_share": 0.0,
        }
    )


OUTAGE = {
    "name": "down",
    "phase": "sustain",
    "kind": "outage",
    "start_s": 20,
    "duration_s": 10,
    "limits": {"time_to_recover_s": 4.9, "amplification": 2.5},
}


def _samples(scenario, failing: tuple[float, float]) -> pd.DataFrame:
    samples = synthetic_samples(scenario, RUN_ID)
    samples["latency_ms"] = 100.0
    samples["finished_s"] = samples["sent_s"] + 0.1
    samples["latency_due_ms"] = (samples["finished_s"] - samples["due_s"]) * 1000.0
    bad = (samples["due_s"] >= failing[0]) & (samples["due_s"] < failing[1])
    stream = samples["workload"] == "chat_stream"
    samples.loc[bad, ["status", "ok", "outcome", "detail"]] = [500, 0, "failed", "HTTP 500"]
    samples["ttft_ms"] = np.where(stream & ~bad, 30.0, np.nan)
    samples["tokens"] = np.where(stream & ~bad, 8, 0)
    return samples


def _calls(run_dir: Path, samples: pd.DataFrame, window: tuple[float, float]) -> None:
    """The stub's record: a call per turn, three per chat turn and two per agent run due in
    the window."""
    turns = samples[samples["workload"].isin(["chat_stream", "agent_run"])]
    inside = (turns["due_s"] >= window[0]) & (turns["due_s"] < window[1])
    many = np.where(inside, np.where(turns["workload"] == "chat_stream", 3, 2), 1)
    arrivals = np.repeat(turns["index"].to_numpy(), many)
    n = len(arrivals)
    write_table(
        run_dir,
        STUB_CALLS,
        f"{RUN_ID}@{START_EPOCH:.3f}",
        {
            "arrival": arrivals,
            "step": np.ones(n, dtype=int),
            "steps": np.ones(n, dtype=int),
            "reply": ["answer"] * n,
            "tool_calls": np.zeros(n, dtype=int),
            "turns": np.ones(n, dtype=int),
            "prompt_tokens": np.ones(n, dtype=int),
            "started_at": np.full(n, START_EPOCH),
            "first_ms": np.full(n, 10.0),
            "total_ms": np.full(n, 20.0),
            "outcome": ["ok"] * n,
        },
    )


def _event(
    name: str, event: str, at_s: float, detail: str = "", by: str = "stub process 0"
) -> FaultEvent:
    return FaultEvent(name, "outage", by, event, START_EPOCH + at_s, START_EPOCH + at_s, detail)


def _run(tmp_path: Path, faults: list[dict], failing=(20.0, 35.0), events=None, **kwargs) -> Path:
    scenario = _scenario(faults, **kwargs)
    samples = _samples(scenario, failing)
    run_dir = write_run_dir(tmp_path / "run", scenario, samples, start_epoch=START_EPOCH)
    _calls(run_dir, samples, (20.0, 30.0))
    (run_dir / FAULTS_DIR).mkdir()
    for f in faults:
        start = f["start_s"]
        for e in (
            events if events is not None else [(APPLIED, start), (UNDONE, start + f["duration_s"])]
        ):
            append_event(run_dir / FAULTS_DIR / STUB_EVENTS, _event(f["name"], *e))
    return run_dir


def _verdict(run_dir: Path):
    with load_run(run_dir) as run:
        stats = run_stats(run)
        return run, stats, judge(run, stats, system_stats(run))


def _first_due(run_dir: Path, workload: str, at_or_after: float) -> float:
    with load_run(run_dir) as run:
        (due,) = run.samples.one(
            "SELECT min(due_s) FROM samples WHERE workload = ? AND due_s >= ?",
            [workload, at_or_after],
        )
    return float(due)


def test_time_to_recover_and_amplification_are_exact(tmp_path):
    run_dir = _run(tmp_path, [OUTAGE])
    _, _, verdict = _verdict(run_dir)
    (window,) = verdict.faults
    by_name = {w.workload: w for w in window.workloads}
    for name, w in by_name.items():
        expected = _first_due(run_dir, name, 35.0) - 30.0
        assert w.recover.metric == TIME_TO_RECOVER
        assert w.recover.measured == pytest.approx(expected, abs=1e-9), name
        # The limit is 4.9 s: the five seconds after the window are over it.
        assert w.recover.status == (PASS if expected <= 4.9 else FAIL)
        assert w.during.errors == w.during.calls > 0
        assert w.before.errors == 0
        assert w.after.error_rate == pytest.approx(
            _count(run_dir, name, 30.0, 35.0) / _count(run_dir, name, 30.0, 40.0)
        )
    chat, runs = by_name["chat_stream"].amplification, by_name["agent_run"].amplification
    assert chat is not None and runs is not None and by_name["api_read"].amplification is None
    assert (chat.metric, chat.measured, chat.status) == (AMPLIFICATION, 3.0, FAIL)
    assert (runs.measured, runs.status) == (2.0, PASS)
    assert by_name["chat_stream"].calls_before == 1.0 and by_name["chat_stream"].calls_during == 3.0


def _count(run_dir: Path, workload: str, start: float, end: float) -> int:
    with load_run(run_dir) as run:
        (n,) = run.samples.one(
            "SELECT count(*) FROM samples WHERE workload = ? AND due_s >= ? AND due_s < ?",
            [workload, start, end],
        )
    return int(n)


def test_a_phase_is_judged_without_what_the_window_touched(tmp_path):
    # Every arrival the window touched failed; sustain's limit of 0.0 still holds, since the
    # failures after it are moved into the window too (failing 20-30 s only).
    thresholds = [{"workload": "api_read", "metric": "error_rate", "limit": 0.0}]
    run_dir = _run(
        tmp_path, [{**OUTAGE, "limits": {}}], failing=(20.0, 30.0), thresholds=thresholds
    )
    _, stats, verdict = _verdict(run_dir)
    (sustain,) = [t for t in verdict.thresholds if t.phase == "sustain"]
    assert sustain.status == PASS
    # The phase's own tables still show every arrival it offered.
    assert stats.phase("sustain").by_offer.workload("api_read").counts.errors > 0
    (window,) = verdict.faults
    assert {w.recover.measured for w in window.workloads} == {0.0}
    assert verdict.exit_code == 0


def test_a_window_too_short_to_judge_is_inconclusive(tmp_path):
    short = {**OUTAGE, "duration_s": 1}
    run_dir = _run(tmp_path, [short], failing=(20.0, 21.0))
    _, _, verdict = _verdict(run_dir)
    (window,) = verdict.faults
    statuses = {c.status for c in window.checks}
    assert statuses == {INCONCLUSIVE}
    assert "during the window; time to recover needs 20 each" in window.workloads[0].recover.reading
    assert verdict.exit_code == 2 and verdict.word == "inconclusive"


def test_a_window_not_applied_is_judged_nowhere(tmp_path):
    refused = [("not applied", 20.0, "the stub did not take it: ConnectionError")]
    run_dir = _run(tmp_path, [OUTAGE], events=refused)
    _, _, verdict = _verdict(run_dir)
    (window,) = verdict.faults
    assert window.not_applied == "stub process 0: the stub did not take it: ConnectionError"
    assert {c.status for c in window.checks} == {INCONCLUSIVE}


def test_an_undo_that_failed_is_the_first_line_and_the_run_is_invalid(tmp_path):
    run_dir = _run(tmp_path, [OUTAGE])
    append_event(
        run_dir / FAULTS_DIR / GUARD_EVENTS,
        _event("down", UNDO_FAILED, 30.0, "SIGCONT of PID 7: Operation not permitted", by="guard"),
    )
    code, text = write_report(run_dir)
    assert code == 2
    assert text.splitlines()[0].startswith("FAULT NOT UNDONE: fault down: its undoing failed")
    report = (run_dir / "report.md").read_text()
    first = next(line for line in report.splitlines()[1:] if line.strip())
    assert first.startswith("A FAULT WAS NOT UNDONE")
    banner = next(line for line in report.splitlines() if line.startswith("> **"))
    assert banner == "> **A fault was NOT undone:**"
    summary = json.loads((run_dir / "summary.json").read_text())
    Draft202012Validator(SCHEMA).validate(summary)
    assert summary["verdict"] == "invalid"
    assert summary["invalid_reasons"][0].startswith("fault down: its undoing failed (guard: ")


def test_the_outputs_carry_each_window(tmp_path):
    run_dir = _run(tmp_path, [OUTAGE])
    code, _ = write_report(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    Draft202012Validator(SCHEMA).validate(summary)
    (window,) = summary["faults"]["windows"]
    assert (window["name"], window["start_s"], window["end_s"]) == ("down", 20.0, 30.0)
    chat = window["workloads"]["chat_stream"]
    assert chat["amplification"]["measured"] == 3.0 and chat["amplification"]["status"] == FAIL
    assert [e["event"] for e in window["events"]] == [APPLIED, UNDONE]
    assert code == 1
    junit = (run_dir / "junit.xml").read_text()
    assert 'classname="faulty.fault.down"' in junit and "chat_stream amplification" in junit
    report = (run_dir / "report.md").read_text()
    assert "## Fault window: down" in report
    assert "failed: chat_stream amplification in fault down" in summary["headline"] + report
    html = (run_dir / "report.html").read_text()
    assert html.count(">down</text>") >= 1 or " down" in html


def test_the_prometheus_metrics_carry_each_window_once_reported(tmp_path):
    run_dir = _run(tmp_path, [OUTAGE])
    write_report(run_dir)
    metrics = RunMetrics()
    with load_run(run_dir) as run:
        metrics.begin(RUN_ID, run.scenario, [p.name for p in run.phases])
    assert not any(f.name.startswith("loadkit_fault") for f in metrics.collect())
    metrics.faults(RUN_ID, read_summary(run_dir))
    families = {f.name: f for f in metrics.collect()}
    recover = {
        s.labels["workload"]: s.value
        for s in families["loadkit_fault_time_to_recover_seconds"].samples
    }
    chat = _first_due(run_dir, "chat_stream", 35.0) - 30.0
    assert recover["chat_stream"] == pytest.approx(chat)
    amplified = {
        s.labels["workload"]: s.value for s in families["loadkit_fault_amplification"].samples
    }
    assert amplified == {"chat_stream": 3.0, "agent_run": 2.0}
    (undone,) = families["loadkit_fault_undo_failed"].samples
    assert (undone.labels["fault"], undone.value) == ("down", 0)


def test_a_run_without_faults_has_no_fault_key(tmp_path):
    scenario = _scenario([])
    run_dir = write_run_dir(tmp_path / "run", scenario, _samples(scenario, (0.0, 0.0)))
    write_report(run_dir)
    assert "faults" not in json.loads((run_dir / "summary.json").read_text())


def test_how_the_platform_shed_load_during_a_window(tmp_path):
    scenario = _scenario([OUTAGE])
    samples = _samples(scenario, (20.0, 35.0))
    reads = (samples["workload"] == "api_read") & (samples["due_s"] >= 20) & (samples["due_s"] < 30)
    rows = samples.index[reads]
    said = ["HTTP 429, Retry-After 1", "HTTP 429, no Retry-After", "HTTP 429"]
    for i, row in enumerate(rows):
        samples.loc[row, ["status", "ok", "outcome", "detail"]] = [429, 0, "shed", said[i % 3]]
    run_dir = write_run_dir(tmp_path / "run", scenario, samples, start_epoch=START_EPOCH)
    (run_dir / FAULTS_DIR).mkdir()
    for event in ((APPLIED, 20.0), (UNDONE, 30.0)):
        append_event(run_dir / FAULTS_DIR / STUB_EVENTS, _event("down", *event))
    _, _, verdict = _verdict(run_dir)
    (reads_around,) = [w for w in verdict.faults[0].workloads if w.workload == "api_read"]
    n = len(rows)
    assert (reads_around.shed, reads_around.shed_retry_after, reads_around.shed_no_retry_after) == (
        n,
        len(range(0, n, 3)),
        len(range(1, n, 3)),
    )


def test_a_record_cut_mid_line_is_read_to_the_cut_and_a_bad_line_is_refused(tmp_path):
    run_dir = _run(tmp_path, [OUTAGE])
    record = run_dir / FAULTS_DIR / GUARD_EVENTS
    record.write_bytes(b'{"fault":"down","kind":"outage","by":"guard","ev')
    with load_run(run_dir) as run:
        assert [e.event for e in run.fault_events] == [APPLIED, UNDONE]
    record.write_bytes(b'{"fault": 3}\n')
    with pytest.raises(RunDirError, match=r"faults/guard.jsonl: line 1: "):
        load_run(run_dir)
