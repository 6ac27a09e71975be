"""The scenario loader refuses each bad field with one line naming it, before any load."""

import copy

import pytest
import yaml

from inputs.agent import Agent
from inputs.scenario import DEFAULT_PATH, ScenarioError, load_scenario, scenario_from_dict

RAW = yaml.safe_load(DEFAULT_PATH.read_text())


def test_shipped_scenario_normalises_shares_and_sizes_connections():
    sc = load_scenario()
    assert sc.mix["api_read"] == pytest.approx(0.45)
    assert sum(sc.mix.values()) == pytest.approx(1.0)
    assert [p.name for p in sc.phases] == ["ramp", "sustain", "burst", "recover"]
    # Every request of every workload in flight for its own timeout at 36/s:
    # 36 x (0.45 x 60 + 0.20 x 90 + 0.15 x 90 + 0.12 x 60 + 0.05 x 60 + 0.03 x 60) = 2538.
    assert sc.connections_needed() == 2538
    assert len(sc.thresholds) >= 8


def test_scale_shortens_durations_never_rates_and_keeps_two_seconds():
    sc = load_scenario().scaled(0.01)
    assert [p.rate for p in sc.phases] == [4, 12, 36, 12]
    assert [p.duration_s for p in sc.phases] == [2.0, 2.0, 2.0, 2.0]


def test_round_trip_through_to_dict_keeps_the_mix():
    sc = load_scenario()
    assert scenario_from_dict(sc.to_dict()).mix == pytest.approx(sc.mix)


def _broken(path, value):
    raw = copy.deepcopy(RAW)
    node = raw
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return raw


@pytest.mark.parametrize(
    ("path", "value", "names"),
    [
        (("workloads", "api_write"), {"share": 1}, "workloads.api_write"),
        (("phases", 1, "rate"), 0, "phases.sustain.rate"),
        (("phases", 2, "duration_s"), -5, "phases.burst.duration_s"),
        (("thresholds", 0, "metric"), "p97_ms", "thresholds[0].metric"),
        (("thresholds", 1, "workload"), "nope", "thresholds[1].workload"),
        # api_read streams nothing: a threshold on its gaps between tokens could never judge.
        (("thresholds", 0, "metric"), "p99_itl_ms", "thresholds[0].metric"),
        (("thresholds", 0, "metric"), "max_stall_ms", "thresholds[0].metric"),
        (("chat_cancel_share",), 1.5, "chat_cancel_share"),
        (("timeouts", "default_s"), "soon", "timeouts.default_s"),
        (("thresold",), [], "thresold"),
    ],
)
def test_each_bad_field_is_named(path, value, names):
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(_broken(path, value))
    message = str(err.value)
    assert message.startswith(names)
    assert "\n" not in message


def test_shares_summing_to_zero_are_refused():
    raw = copy.deepcopy(RAW)
    for spec in raw["workloads"].values():
        spec["share"] = 0
    with pytest.raises(ScenarioError, match="shares sum to 0"):
        scenario_from_dict(raw)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("rate: .inf", "phases.sustain.rate"),
        ("rate: .nan", "phases.sustain.rate"),
        ("rate: 1.0e+12", "phases.sustain.rate"),
        ("rate: 1" + "0" * 400, "phases.sustain.rate"),
        ("duration_s: 1.0e+9", "phases.sustain.duration_s"),
    ],
)
def test_every_number_is_finite_and_within_its_bound(tmp_path, text, names):
    """YAML's .inf, .nan, a rate that would plan forever, an integer too big for a float."""
    key, value = text.split(": ")
    data = copy.deepcopy(RAW)
    next(p for p in data["phases"] if p["name"] == "sustain")[key] = "PLACEHOLDER"
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(data).replace("PLACEHOLDER", value))
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value).startswith(names) and "\n" not in str(err.value), str(err.value)
    assert len(str(err.value)) < 300


def test_timeouts_and_lateness_are_bounded_too():
    raw = _broken(("timeouts", "default_s"), float("inf"))
    raw["lateness"] = {"late_after_ms": 1e9}
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(raw)
    assert [line.split(":")[0] for line in err.value.problems] == [
        "timeouts.default_s",
        "lateness.late_after_ms",
    ]


def test_every_problem_is_reported_at_once_one_line_each():
    raw = copy.deepcopy(RAW)
    raw["workloads"]["api_write"] = 1
    raw["phases"][1]["rate"] = float("inf")
    raw["phases"][2]["duration_s"] = "soon"
    raw["thresholds"][0]["metric"] = "p97_ms"
    raw["timeouts"] = {"default_s": -1}
    raw["chat_cancel_share"] = 2
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(raw)
    fields = [line.split(":")[0] for line in str(err.value).splitlines()]
    assert fields == [
        "workloads.api_write",
        "phases.sustain.rate",
        "phases.burst.duration_s",
        "thresholds[0].metric",
        "chat_cancel_share",
        "timeouts.default_s",
    ]


def test_a_long_value_is_cut_in_its_message():
    raw = copy.deepcopy(RAW)
    raw["workloads"]["x" * 1_000_000] = 1
    raw["thresholds"][0]["metric"] = "m" * 1_000_000
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(raw)
    assert len(err.value.problems) == 2
    assert all(len(line) < 400 for line in err.value.problems)
    assert "1000002 characters" in str(err.value)


@pytest.mark.parametrize("scale", [float("inf"), float("nan"), 1e6])
def test_a_scale_that_overflows_a_phase_is_refused_with_the_largest_that_fits(scale):
    with pytest.raises(ScenarioError, match=r"^--scale: "):
        load_scenario().scaled(scale)


def _ttft(scenario):
    return next(t for t in scenario.thresholds if t.metric == "p95_ttft_ms")


def test_a_platform_limit_applies_to_that_platform_only_and_the_run_records_it():
    """LangGraph's first-token limit is its own, with its reason; the others keep the
    scenario's; the scenario a run records has the limit it was judged on and no others."""
    shipped = load_scenario()
    assert shipped.platforms_named == {"langgraph"}
    langgraph, agenticos = shipped.for_platform("langgraph"), shipped.for_platform("agenticos")
    assert (_ttft(langgraph).limit, _ttft(agenticos).limit) == (2500, 1500)
    assert "queue" in _ttft(langgraph).why and "queue" not in _ttft(agenticos).why
    recorded = scenario_from_dict(langgraph.to_dict(), as_run=True)
    assert _ttft(recorded).limit == 2500 and _ttft(recorded).per_platform == ()
    assert [t.limit for t in langgraph.thresholds if t.metric != "p95_ttft_ms"] == [
        t.limit for t in agenticos.thresholds if t.metric != "p95_ttft_ms"
    ]


NOT_OFFERED = {"ingest": "no uploads", "trigger_fire": "no webhooks"}


def test_what_a_platform_does_not_offer_is_left_out_and_the_rest_keep_their_rates():
    """A platform that offers no uploads nor webhooks: share 0 there, with its reason as the
    report shows it; each phase offers 92% of its rate, so every other workload arrives at the
    rate the scenario states; the recorded scenario keeps the shares and reasons it ran with."""
    shipped = load_scenario()
    a2a = shipped.for_platform("a2a", NOT_OFFERED)
    assert set(a2a.offered) == {"api_read", "chat_stream", "agent_run", "rag_query"}
    why = {w.name: w.why for w in a2a.workloads if w.why}
    assert why == {
        "ingest": "Not offered by a2a: no uploads",
        "trigger_fire": ("Not offered by a2a: no webhooks"),
    }
    assert [p.rate for p in a2a.phases] == pytest.approx([p.rate * 0.92 for p in shipped.phases])
    for name in a2a.offered:
        for ran, stated in zip(a2a.phases, shipped.phases, strict=True):
            assert ran.rate * a2a.mix[name] == pytest.approx(stated.rate * shipped.mix[name])
    recorded = scenario_from_dict(a2a.to_dict(), as_run=True)
    assert recorded.mix == pytest.approx(a2a.mix)
    assert {w.name: w.why for w in recorded.workloads if w.why} == why
    assert all(w.per_platform == () for w in recorded.workloads)
    # A platform that offers everything runs the scenario as written.
    assert shipped.for_platform("agno", {}) == shipped.for_platform("agno")
    assert shipped.for_platform("agno").phases == shipped.phases


def test_a_share_the_scenario_sets_for_a_platform_is_its_own_mix_there():
    """A scenario's per_platform share (0 here) is the scenario's mix on that platform: the
    others renormalise and the phases keep their rates, unlike what a platform leaves out."""
    raw = copy.deepcopy(RAW)
    raw["workloads"]["ingest"]["per_platform"] = {"agno": {"share": 0, "why": "measured apart"}}
    scenario = scenario_from_dict(raw)
    agno = scenario.for_platform("agno")
    assert [p.rate for p in agno.phases] == [p.rate for p in scenario.phases]
    assert "ingest" not in agno.offered and sum(agno.mix.values()) == pytest.approx(1.0)
    assert next(w.why for w in agno.workloads if w.name == "ingest") == "measured apart"


def test_a_trace_that_names_its_workloads_drops_what_the_platform_does_not_offer():
    raw = copy.deepcopy(RAW)
    offsets, named = [0.0, 1.0, 2.0, 3.0], ["api_read", "ingest", "chat_stream", "trigger_fire"]
    raw["phases"] = [
        {
            "name": "replay",
            "duration_s": 4,
            "arrivals": {"trace": "t.csv", "offsets": offsets, "workloads": named},
        }
    ]
    raw["thresholds"] = []
    raw["judging"] = {"error_rate_phases": ["replay"], "latency_phases": ["replay"]}
    raw["phases"][0]["rate"] = 1.0
    scenario = scenario_from_dict(raw, as_run=True)
    left = scenario.for_platform("a2a", NOT_OFFERED).phases[0]
    assert (left.arrivals.offsets, left.arrivals.workloads) == (
        (0.0, 2.0),
        ("api_read", "chat_stream"),
    )
    assert left.rate == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("value", "names"),
    [
        (
            {"opencode": {"share": 0}},
            "workloads.ingest.per_platform.opencode: expected {share, why}",
        ),
        ({"opencode": {"share": -1, "why": "x"}}, "workloads.ingest.per_platform.opencode.share"),
        (["opencode"], "workloads.ingest.per_platform: expected a mapping"),
    ],
)
def test_a_platform_share_needs_its_reason_and_a_number(value, names):
    raw = copy.deepcopy(RAW)
    raw["workloads"]["ingest"]["per_platform"] = value
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(raw)
    assert any(line.startswith(names) for line in err.value.problems), err.value.problems


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ({"langgraph": {"limit": 2500}}, "per_platform.langgraph: expected {limit, why}"),
        ({"langgraph": {"limit": -1, "why": "x"}}, "per_platform.langgraph.limit"),
        (["langgraph"], "per_platform: expected a mapping"),
    ],
)
def test_a_platform_limit_needs_its_reason_and_a_number(value, names):
    raw = copy.deepcopy(RAW)
    ttft = next(t for t in raw["thresholds"] if t["metric"] == "p95_ttft_ms")
    ttft["per_platform"] = value
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(raw)
    (line,) = str(err.value).splitlines()
    assert names in line, line


@pytest.mark.parametrize(
    ("workload", "key", "value", "names"),
    [
        ("agent_run", "steps", 0, "workloads.agent_run.steps: 0 is not a whole number from 1"),
        ("chat_stream", "steps", 65, "workloads.chat_stream.steps: 65 is not a whole number"),
        ("agent_run", "steps", 2.5, "workloads.agent_run.steps: 2.5"),
        ("agent_run", "parallel_tools", 17, "workloads.agent_run.parallel_tools: 17"),
        ("chat_stream", "tool_ms", -1, "workloads.chat_stream.tool_ms: -1 is not a time"),
        ("agent_run", "prompt_bytes", 10**9, "workloads.agent_run.prompt_bytes: 1000000000"),
        ("agent_run", "answer_tokens", 0, "workloads.agent_run.answer_tokens: 0"),
        ("agent_run", "stepz", 3, "workloads.agent_run.stepz: unknown; use one of ('share'"),
        ("api_read", "steps", 3, "workloads.api_read.steps: unknown; use one of ('share', 'desc"),
        ("agent_run", "conversations", {}, "workloads.agent_run.conversations: unknown"),
        (
            "chat_stream",
            "conversations",
            {"continuing": 1.5},
            "workloads.chat_stream.conversations.continuing: 1.5 is not a share",
        ),
        (
            "chat_stream",
            "conversations",
            {"turns": 0},
            "workloads.chat_stream.conversations.turns: 0",
        ),
        (
            "chat_stream",
            "conversations",
            {"depth": 3},
            "workloads.chat_stream.conversations.depth: unknown; use one of ('continuing'",
        ),
    ],
)
def test_the_agents_shape_is_refused_field_by_field(workload, key, value, names):
    """Today an unknown key under a workload was silently ignored: a scenario with steps: 0
    under agent_run ran as one call per run. Every key the kit does not know is refused."""
    raw = copy.deepcopy(RAW)
    raw["workloads"][workload][key] = value
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(raw)
    assert str(err.value).startswith(names)
    assert "\n" not in str(err.value)


def test_the_agents_shape_defaults_to_the_seeds_one_call_and_round_trips():
    assert Agent() == Agent(steps=1, parallel_tools=1, tool_ms=0.0, prompt_bytes=0)
    sc = load_scenario()
    for workload in ("chat_stream", "api_read"):
        assert sc.agent(workload).steps == 1
        assert sc.agent(workload).conversations.continuing == 0
    assert set(sc.to_dict()["workloads"]["chat_stream"]) == {"share", "description"}
    # The shipped scenario's agent runs act: two tool calls, then the answer.
    assert sc.agent("agent_run").steps == 3
    raw = copy.deepcopy(RAW)
    raw["workloads"]["chat_stream"].update(
        steps=3, parallel_tools=2, tool_ms=5, conversations={"continuing": 0.5, "turns": 4}
    )
    shaped = scenario_from_dict(raw)
    again = scenario_from_dict(shaped.to_dict(), as_run=True)
    assert again.agent("chat_stream") == shaped.agent("chat_stream")
    assert (again.agent("chat_stream").steps, again.agent("chat_stream").conversations.gap) == (
        3,
        8,
    )
