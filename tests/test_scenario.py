"""The scenario loader refuses each bad field with one line naming it, before any load."""

import copy

import pytest
import yaml

from scenario import DEFAULT_PATH, ScenarioError, load_scenario, scenario_from_dict

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
