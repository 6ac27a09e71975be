"""The scenario's fault windows: read, refused in one line naming the field and the fix, scaled
with their phase, and written back as run.json records them (inputs/faults.py)."""

from __future__ import annotations

import pytest
import yaml

from inputs.faults import FaultKind, scale_lines
from inputs.scenario import DEFAULT_PATH, ScenarioError, scenario_from_dict


def _with(*faults: dict) -> dict:
    raw = yaml.safe_load(DEFAULT_PATH.read_text())
    raw["faults"] = list(faults)
    return raw


def _problems(*faults: dict) -> list[str]:
    with pytest.raises(ScenarioError) as refused:
        scenario_from_dict(_with(*faults))
    return refused.value.problems


def test_every_kind_is_read_with_its_settings():
    scenario = scenario_from_dict(
        _with(
            {"name": "down", "phase": "sustain", "start_s": 60, "duration_s": 30, "kind": "outage"},
            {"phase": "ramp", "kind": "outage", "refuse": True, "start_s": 10, "duration_s": 5},
            {"phase": "burst", "kind": "rate_limit", "retry_after_s": 2, "share": 0.5},
            {"phase": "recover", "kind": "slowdown", "factor": 5, "duration_s": 20},
            {"phase": "recover", "kind": "stall", "after_tokens": 8, "stall_s": 3, "start_s": 30},
            {"phase": "ramp", "kind": "hang", "start_s": 30, "duration_s": 5},
            {"phase": "sustain", "kind": "freeze", "pid": "api", "start_s": 100, "duration_s": 10},
            {"phase": "sustain", "kind": "command", "at_start": "true", "at_end": ["true"]},
        )
    )
    by_name = {f.name: f for f in scenario.faults}
    down = by_name["down"]
    assert (down.kind, down.start_s, down.end_s, down.model) == (FaultKind.OUTAGE, 60, 90, True)
    # No duration: the rest of the phase.
    assert by_name["rate_limit@burst"].duration_s == 45
    assert by_name["stall@recover"].duration_s == 30
    assert by_name["freeze@sustain"].api_pid and not by_name["freeze@sustain"].model
    assert by_name["command@sustain"].at_start == ("/bin/sh", "-c", "true")
    assert by_name["command@sustain"].duration_s == 180
    # run.json's scenario reads back as the same windows.
    again = scenario_from_dict(scenario.to_dict(), as_run=True)
    assert again.faults == scenario.faults


def test_a_scenario_without_faults_writes_none():
    scenario = scenario_from_dict(_with())
    assert scenario.faults == ()
    assert "faults" not in scenario.to_dict()


def test_bad_windows_are_one_line_each_naming_the_field_and_the_fix():
    problems = _problems(
        {"phase": "sustain", "start_s": 60, "duration_s": 300, "kind": "outage"},
        {"phase": "sustain", "start_s": 200, "kind": "outage"},
        {"phase": "nope", "kind": "hang"},
        {"phase": "sustain", "kind": "explode"},
        {"phase": "sustain", "kind": "slowdown", "factor": 0.5},
        {"phase": "sustain", "kind": "freeze"},
        {"phase": "sustain", "kind": "freeze", "pid": 1},
        {"phase": "sustain", "kind": "command"},
        {"phase": "sustain", "kind": "hang", "factor": 2},
        {"phase": "sustain", "kind": "hang", "limits": {"p95": 3}},
    )
    assert problems == [
        "faults[0].duration_s: 300 s from 60 s ends past sustain's 180 s; give at most 120, "
        "or start earlier",
        "faults[1].start_s: 200 s is past the end of sustain (180 s); start it before 180",
        "faults[2].phase: 'nope' is not a phase; use one of ('ramp', 'sustain', 'burst', "
        "'recover')",
        "faults[3].kind: 'explode' is unknown; use one of ('outage', 'rate_limit', 'slowdown', "
        "'stall', 'hang', 'freeze', 'command')",
        "faults[4].factor: 0.5 is no slowdown; give more than 1, e.g. 5",
        "faults[5]: give pid (a PID, or 'api': the run's --api-pid) or pid_file, one",
        "faults[6].pid: 1 is not a process id from 2 to 4194304 nor 'api'; give the PID of "
        "the process to freeze",
        "faults[7]: give at_start, at_end or both: the command each end of it runs",
        "faults[8].factor: unknown for a hang window; use one of ('name', 'phase', 'kind', "
        "'start_s', 'duration_s', 'limits')",
        "faults[9].limits.p95: unknown; use one of ('time_to_recover_s', 'amplification')",
    ]


def test_overlaps_that_cannot_be_undone_are_refused_and_the_rest_allowed():
    problems = _problems(
        {"name": "a", "phase": "sustain", "start_s": 10, "duration_s": 30, "kind": "outage"},
        {"name": "b", "phase": "sustain", "start_s": 30, "duration_s": 5, "kind": "hang"},
        {
            "name": "c",
            "phase": "sustain",
            "start_s": 10,
            "duration_s": 9,
            "kind": "freeze",
            "pid": 7,
        },
        {
            "name": "d",
            "phase": "sustain",
            "start_s": 15,
            "duration_s": 9,
            "kind": "freeze",
            "pid": 7,
        },
        # A freeze of another process, and a command, may overlap anything.
        {
            "name": "e",
            "phase": "sustain",
            "start_s": 15,
            "duration_s": 9,
            "kind": "freeze",
            "pid": 8,
        },
        {"name": "f", "phase": "sustain", "kind": "command", "at_start": "true"},
        # Back to back is no overlap.
        {
            "name": "g",
            "phase": "sustain",
            "start_s": 40,
            "duration_s": 5,
            "kind": "slowdown",
            "factor": 2,
        },
    )
    assert problems == [
        "faults[1]: b overlaps a (sustain 10-40 s): the stub holds one model fault at a time; "
        "start it at or after 40 s of sustain, or end it before",
        "faults[3]: d overlaps c (sustain 10-19 s): both freeze PID 7, and the first thaw would "
        "end the second; start it at or after 19 s of sustain, or end it before",
    ]


def test_a_window_scales_with_its_phase_and_the_run_says_so():
    raw = _with(
        {"name": "down", "phase": "sustain", "start_s": 60, "duration_s": 30, "kind": "outage"}
    )
    scaled = scenario_from_dict(raw).scaled(0.1)
    (down,) = scaled.faults
    assert (down.start_s, down.duration_s) == pytest.approx((6.0, 3.0))
    assert scale_lines(scaled.faults) == [
        "faults.down: 3 s from 6 s of sustain at this --scale (30 s from 60 s as written): a "
        "window scales with its phase"
    ]
    assert scale_lines(scenario_from_dict(raw).faults) == []


SCENARIOS = DEFAULT_PATH.parent / "scenarios"


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_each_shipped_fault_scenario_is_the_shipped_one_with_its_window(path):
    raw = yaml.safe_load(path.read_text())
    base = yaml.safe_load(DEFAULT_PATH.read_text())
    (fault,) = raw.pop("faults")
    assert (raw.pop("name"), fault["name"]) == (path.stem, path.stem)
    base.pop("name")
    assert raw == base
    assert scenario_from_dict(yaml.safe_load(path.read_text())).faults[0].name == path.stem
