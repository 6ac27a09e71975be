"""Arrival kinds are schedule: Poisson gaps at the asked rate, traces replayed exactly, and any
split over processes offering the single process's due times.

Pure functions over the plan, no real time; test_generator_run.py holds a real
two-worker run to the same plan.
"""

import itertools
import json
import math
import statistics
from collections import Counter

import msgspec
import pytest
import yaml
from jsonschema import Draft202012Validator

from bench.synthetic_runs import write_run_dir
from engine.arrivals import KINDS, poisson_offsets
from engine.mix import Mix
from engine.schedule import Plan, SlotCursor
from inputs.phases import ArrivalKind
from inputs.scenario import DEFAULT_PATH, Scenario, ScenarioError, load_scenario, scenario_from_dict
from reports.build import build_report
from reports.summary import SCHEMA_FILE
from runner.messages import PlanUpdate, decode, encode


def _scenario(tmp_path, phases, **extra):
    """The shipped scenario's mix with these phases (no thresholds), loaded from tmp_path."""
    raw = yaml.safe_load(DEFAULT_PATH.read_text())
    raw.pop("judging")
    raw.update(phases=phases, thresholds=[])
    raw.update(extra)
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return load_scenario(path)


def _walk(plan, slot, workers):
    cursor, seen = SlotCursor(slot, workers), []
    while (upcoming := cursor.peek(plan)) is not None:
        seen.append(upcoming)
        cursor.advance()
    return seen


def _due(segment):
    return [segment.due_s(j) for j in range(segment.count())]


@pytest.mark.parametrize("seed", [0, 1, 7, 2**32 - 1])
def test_poisson_gaps_have_the_rate_and_a_coefficient_of_variation_near_one(tmp_path, seed):
    rate, seconds = 20.0, 3600.0
    phase = {"name": "sustain", "duration_s": seconds, "rate": rate, "arrivals": "poisson"}
    segment = Plan.from_scenario(_scenario(tmp_path, [phase], seed=seed)).segments[0]
    due = _due(segment)
    gaps = [b - a for a, b in zip([0.0, *due], due, strict=False)]
    n, expected = len(due), rate * seconds
    # A Poisson count has a standard deviation of sqrt(expected): 268 here; 5 of them.
    assert abs(n - expected) < 5 * math.sqrt(expected)
    mean = statistics.fmean(gaps)
    assert mean == pytest.approx(1 / rate, rel=0.02)
    # Exponential gaps: standard deviation equals the mean (a uniform phase's is 0).
    assert statistics.pstdev(gaps) / mean == pytest.approx(1.0, abs=0.02)
    # And the tail an exponential has: P(gap > mean) = 1/e.
    assert sum(g > mean for g in gaps) / n == pytest.approx(math.exp(-1), abs=0.01)
    assert due[0] > 0 and all(a < b for a, b in itertools.pairwise(due))
    assert due[-1] < segment.end_s


def test_poisson_due_times_depend_on_seed_phase_and_index_only(tmp_path):
    long = poisson_offsets(3, "sustain", 12.0, 600.0)
    short = poisson_offsets(3, "sustain", 12.0, 60.0)
    # A shorter phase (--scale) offers the beginning of the same sequence, bit for bit.
    assert list(short) == list(long[: len(short)]) and long[len(short)] >= 60.0
    assert list(poisson_offsets(4, "sustain", 12.0, 60.0)) != list(short)
    assert list(poisson_offsets(3, "burst", 12.0, 60.0)) != list(short)
    # The rate scales the same draws.
    doubled = poisson_offsets(3, "sustain", 24.0, 30.0)
    assert list(doubled) == pytest.approx([o / 2 for o in short[: len(doubled)]], rel=1e-12)


def _mixed_plan(tmp_path):
    """Four phases, one of each kind and a trace with workloads, shortened as --scale does."""
    lines = [
        f"{0.37 * k * (1 + k % 3)},{('api_read', 'ingest', 'chat_stream')[k % 3]}"
        for k in range(90)
    ]
    (tmp_path / "trace.csv").write_text("offset_s,workload\n" + "\n".join(lines) + "\n")
    phases = [
        {"name": "ramp", "duration_s": 20, "rate": 4},
        {"name": "sustain", "duration_s": 30, "rate": 12, "arrivals": "poisson"},
        {"name": "burst", "duration_s": 10, "arrivals": {"trace": "trace.csv"}},
        {"name": "recover", "duration_s": 20, "rate": 12, "arrivals": "poisson"},
    ]
    scenario = _scenario(tmp_path, phases, seed=11)
    return scenario, Plan.from_scenario(scenario)


@pytest.mark.parametrize("workers", [2, 3, 5])
def test_any_split_over_processes_offers_the_single_process_due_times(tmp_path, workers):
    scenario, plan = _mixed_plan(tmp_path)
    # Each process gets the plan and the scenario as the master sends them.
    received = decode(PlanUpdate, encode(PlanUpdate("run", 0.0, plan))).plan
    wired = msgspec.msgpack.decode(msgspec.msgpack.encode(scenario), type=Scenario)
    mix = Mix.from_scenario(wired)
    single = _walk(plan, 0, 1)
    assert [k for _, k, _ in single] == list(range(plan.total()))
    union = []
    for slot in range(workers):
        walked = _walk(received, slot, workers)
        assert all(k % workers == slot for _, k, _ in walked)
        union += walked
    assert sorted(union) == single
    picks = {k: mix.pick_in(received.segments[n], k) for n, k, _ in union}
    original = Mix.from_scenario(scenario)
    assert picks == {k: original.pick_in(plan.segments[n], k) for n, k, _ in single}


def test_a_trace_replays_exactly_spread_over_its_phase(tmp_path):
    # Unsorted, with a header, a blank line and a first offset after the trace's start.
    offsets = [2.0, 0.5, 9.5, 4.0, 4.0, 7.25]
    workloads = ["chat_stream", "api_read", "ingest", "rag_query", "api_read", "agent_run"]
    rows = [f"{o},{w}" for o, w in zip(offsets, workloads, strict=True)]
    (tmp_path / "prod.csv").write_text(
        "offset_s,workload\n" + "\n".join(rows[:3]) + "\n\n" + "\n".join(rows[3:]) + "\n"
    )
    phases = [
        {"name": "ramp", "duration_s": 5, "rate": 2},
        {"name": "sustain", "duration_s": 45, "arrivals": {"trace": "prod.csv"}},
    ]
    scenario = _scenario(tmp_path, phases)
    plan = Plan.from_scenario(scenario)
    segment = plan.segments[1]
    # Its length is the last offset plus the mean gap: 9.5 + 9 / 5 = 11.3 s, onto 45 s.
    ordered = sorted(zip(offsets, workloads, strict=True), key=lambda row: row[0])
    assert _due(segment) == [5.0 + o * 45.0 / 11.3 for o, _ in ordered]
    assert segment.count() == 6 and scenario.phases[1].rate == 6 / 45
    mix = Mix.from_scenario(scenario)
    first = segment.first_index
    assert [mix.pick_in(segment, first + j) for j in range(6)] == [w for _, w in ordered]
    # What the plan is counted to offer before load (engine/shortfall.py) is the same.
    assert mix.counts_in(segment)[0] == Counter(w for _, w in ordered)
    assert msgspec.to_builtins(segment.arrivals_record()) == {
        "kind": "trace",
        "file": "prod.csv",
        "arrivals": 6,
        "workloads": True,
    }
    # The run's record replays without the file.
    (tmp_path / "prod.csv").unlink()
    recorded = scenario_from_dict(json.loads(json.dumps(scenario.to_dict())))
    assert _due(Plan.from_scenario(recorded).segments[1]) == _due(segment)


def test_an_evenly_spaced_trace_replays_as_a_uniform_phase(tmp_path):
    (tmp_path / "even.csv").write_text("\n".join(str(k * 0.25) for k in range(40)) + "\n")
    phases = [
        {"name": "uniform", "duration_s": 8, "rate": 5},
        {"name": "trace", "duration_s": 8, "arrivals": {"trace": "even.csv"}},
    ]
    plan = Plan.from_scenario(_scenario(tmp_path, phases))
    uniform, trace = plan.segments
    assert trace.count() == uniform.count() == 40
    assert [d - 8.0 for d in _due(trace)] == pytest.approx(_due(uniform), abs=1e-12)
    # Without a workload column the mix picks, by global index, as in every phase.
    assert trace.arrivals.workloads == ()


def test_scaling_keeps_a_trace_s_rate_and_replays_its_beginning(tmp_path):
    (tmp_path / "even.csv").write_text("\n".join(str(k) for k in range(100)) + "\n")
    phases = [{"name": "sustain", "duration_s": 50, "arrivals": {"trace": "even.csv"}}]
    scenario = _scenario(tmp_path, phases)
    scaled = scenario.scaled(0.1)
    segment = Plan.from_scenario(scaled).segments[0]
    assert scaled.phases[0].rate == scenario.phases[0].rate == 2.0
    assert _due(segment) == [k / 2 for k in range(10)]


def test_a_trace_line_naming_a_workload_the_run_does_not_offer_takes_the_mix_s_pick(tmp_path):
    (tmp_path / "t.csv").write_text("0,trigger_fire\n1,api_read\n2,trigger_fire\n")
    scenario = _scenario(
        tmp_path, [{"name": "sustain", "duration_s": 10, "arrivals": {"trace": "t.csv"}}]
    )
    raw = scenario.to_dict()
    raw["workloads"]["trigger_fire"]["share"] = 0  # as preflight leaves a skipped workload
    skipped = scenario_from_dict(raw)
    segment = Plan.from_scenario(skipped).segments[0]
    mix = Mix.from_scenario(skipped)
    picks = [mix.pick_in(segment, k) for k in range(3)]
    assert picks == [mix.pick(0), "api_read", mix.pick(2)]
    assert "trigger_fire" not in picks


def test_every_kind_the_scenario_names_is_implemented_under_its_name():
    assert set(KINDS) == set(ArrivalKind)
    assert all(spacer.name == name for name, spacer in KINDS.items())


@pytest.mark.parametrize(
    ("arrivals", "trace", "expected"),
    [
        ("poison", None, "phases.sustain.arrivals: 'poison' is not an arrival process"),
        ("trace", None, "use uniform, poisson or {trace: FILE}"),
        ({"trace": "missing.csv"}, None, "phases.sustain.arrivals.trace: cannot read"),
        ({"trace": "t.csv", "scale": 2}, "0\n1\n", "['scale'] unknown"),
        ({"trace": "t.csv"}, "", "holds no offsets"),
        ({"trace": "t.csv"}, "3\n3\n", "needs two different offsets"),
        ({"trace": "t.csv"}, "0\nsoon\n", "t.csv line 2: 'soon' is not an offset in seconds"),
        ({"trace": "t.csv"}, "0\n-1\n", "line 2: -1 is not a finite offset of 0 s or more"),
        ({"trace": "t.csv"}, "0\ninf\n", "line 2: inf is not a finite offset"),
        ({"trace": "t.csv"}, "0,api_read\n1,lunch\n", "workload 'lunch' is not in the mix"),
        ({"trace": "t.csv"}, "0,api_read\n1\n", "names a workload on some lines, not all"),
        ({"trace": "t.csv"}, "0,api_read,x\n1\n", "line 1: 3 columns"),
    ],
)
def test_bad_arrivals_are_one_line_naming_the_field(tmp_path, arrivals, trace, expected):
    if trace is not None:
        (tmp_path / "t.csv").write_text(trace)
    phase = {"name": "sustain", "duration_s": 10, "arrivals": arrivals}
    if not isinstance(arrivals, dict):
        phase["rate"] = 5
    with pytest.raises(ScenarioError) as raised:
        _scenario(tmp_path, [phase])
    assert expected in str(raised.value)


def test_a_trace_phase_takes_its_rate_from_the_trace(tmp_path):
    (tmp_path / "t.csv").write_text("0\n1\n2\n3\n")
    phase = {"name": "sustain", "duration_s": 8, "rate": 5, "arrivals": {"trace": "t.csv"}}
    with pytest.raises(ScenarioError) as raised:
        _scenario(tmp_path, [phase])
    assert str(raised.value) == (
        "phases.sustain.rate: a trace phase's rate is its trace's (4 arrivals over 8 s, 0.5/s); "
        "drop rate"
    )


@pytest.mark.parametrize("seed", [-1, 2**32, 1.5, True, "7"])
def test_a_bad_seed_is_one_line(tmp_path, seed):
    with pytest.raises(
        ScenarioError, match=r"^seed: .* is not a whole number from 0 to 4294967295"
    ):
        _scenario(tmp_path, [{"name": "sustain", "duration_s": 10, "rate": 5}], seed=seed)


def test_the_report_and_summary_say_each_phase_s_arrival_process(tmp_path):
    _, plan = _mixed_plan(tmp_path)
    run_dir = write_run_dir(tmp_path / "run")
    record = json.loads((run_dir / "run.json").read_text())
    kinds = [msgspec.to_builtins(s.arrivals_record()) for s in plan.segments]
    for phase, kind in zip(record["phases"], kinds, strict=True):
        phase["arrivals"] = kind
    (run_dir / "run.json").write_text(json.dumps(record))
    build_report(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [p["arrivals"] for p in summary["phases"].values()] == kinds
    schema = json.loads(SCHEMA_FILE.read_text())
    Draft202012Validator(schema).validate(summary)
    report = (run_dir / "report.md").read_text()
    assert "| sustain | 3–12 | 12.0/s | poisson, seed 11 |" in report
    assert "Scheduled at 36.0/s (trace trace.csv: 90 arrivals, its own workloads)" in report
    assert "Scheduled at 4.0/s (uniform)" in report


def test_every_arrivals_problem_is_said_at_once_with_the_scenario_s_others(tmp_path):
    (tmp_path / "t.csv").write_text("0,api_read\n1,lunch\nsoon\n")
    (tmp_path / "ok.csv").write_text("0\n1\n3\n")
    phases = [
        {"name": "ramp", "duration_s": 10, "rate": 4, "arrivals": "poison"},
        {"name": "sustain", "duration_s": 10, "arrivals": {"trace": "t.csv"}},
        {"name": "burst", "duration_s": 10, "rate": 36, "arrivals": {"trace": "ok.csv"}},
        {"name": "recover", "duration_s": -1, "rate": 12},
    ]
    with pytest.raises(ScenarioError) as raised:
        _scenario(tmp_path, phases, seed=-3)
    assert [line.split(":")[0] for line in raised.value.problems] == [
        "phases.ramp.arrivals",
        "phases.sustain.arrivals.trace",
        "phases.sustain.arrivals.trace",
        "phases.burst.rate",
        "phases.recover.duration_s",
        "seed",
    ]
