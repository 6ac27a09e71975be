"""What the plan knows before load: the checks it offers too few arrivals to judge, and the
concurrency it can need. Pure functions; tests/test_generator_plan_checks.py runs them.
"""

from collections import Counter

import pytest

from engine.mix import Mix
from engine.schedule import Plan, Segment
from engine.shortfall import run_time_fixes, scale_fixes, shortfalls
from inputs.scenario import load_scenario, scenario_from_dict

SHIPPED = load_scenario()


def _reads_only(**timeouts):
    raw = SHIPPED.to_dict()
    for name, spec in raw["workloads"].items():
        spec["share"] = 1.0 if name == "api_read" else 0.0
    raw["timeouts"].update(timeouts)
    return scenario_from_dict(raw)


def test_counting_a_range_at_once_is_the_mix_arrival_by_arrival():
    mix = Mix.from_scenario(SHIPPED)
    for first, count in ((0, 4_740), (987_654, 50_000)):
        # A uniform segment at 1/s offers one arrival a second.
        picked, cancelled = mix.counts_in(Segment("sustain", 1.0, 0.0, count, first))
        indexes = range(first, first + count)
        assert picked == mix.counts(indexes)
        assert cancelled == Counter(mix.pick(k) for k in indexes if mix.cancels(k))


def test_the_full_size_plan_can_judge_every_check():
    assert shortfalls(SHIPPED, Plan.from_scenario(SHIPPED)) == ()


def test_a_plan_at_scale_0_05_names_each_check_it_cannot_judge_and_the_scale_that_can():
    small = SHIPPED.scaled(0.05)
    found = shortfalls(small, Plan.from_scenario(small))
    trigger = next(
        s
        for s in found
        if (s.workload, s.check, s.phase) == ("trigger_fire", "error rate", "recover")
    )
    assert (trigger.planned, trigger.needed) == (0, 20)
    # agent_run's p95 counts the 16 sustain arrivals it times; chat's first token all of its.
    agent = next(s for s in found if (s.workload, s.check) == ("agent_run", "p95"))
    assert agent.timed and agent.planned == 16
    lines = scale_fixes(SHIPPED, found, 0.05)
    assert len(lines) == len(found) + 1
    assert (
        "inconclusive before load: trigger_fire error rate in recover: the plan offers 0 "
        "arrivals, the check needs 20; --scale 0.95 offers 21" in lines
    )
    assert lines[-1].endswith("--scale 0.95 offers every one its minimum")


def test_a_short_constant_rate_names_the_run_time_that_reaches_each_check():
    plan = Plan.constant(5.0).closed_at(10.0)
    found = shortfalls(SHIPPED, plan)
    assert {s.phase for s in found} == {"rate1@5/s"}
    lines = run_time_fixes(SHIPPED, found, 5.0)
    trigger = next(line for line in lines if "trigger_fire error rate" in line)
    assert trigger.endswith(
        "the plan offers 1 arrival, the check needs 20; --run-time 134s at 5/s offers 20"
    )
    longer = Plan.constant(5.0).closed_at(134.0)
    assert not any(s.workload == "trigger_fire" for s in shortfalls(SHIPPED, longer))


def test_an_open_plan_or_a_closed_loop_has_nothing_to_count():
    assert shortfalls(SHIPPED, Plan.constant(5.0)) == ()
    users = Plan.from_scenario(SHIPPED.scaled(0.05))
    users = Plan(tuple(s.__class__(s.name, 0.0, s.start_s, s.end_s, 0) for s in users.segments))
    assert shortfalls(SHIPPED.scaled(0.05), users) == ()


def test_a_workload_the_scenario_does_not_offer_has_no_checks_and_needs_no_connections():
    reads = _reads_only()
    found = shortfalls(reads, Plan.from_scenario(reads.scaled(0.05)))
    assert {s.workload for s in found} <= {"api_read"}
    # 36/s x api_read's own 60 s: the 90 s chat and agent-run timeouts do not count.
    assert reads.connections_needed() == 36 * 60
    assert reads.connections_needed(2_000.0) == 120_000


@pytest.mark.parametrize(("rate", "expected"), [(None, 2_538), (100.0, 7_050)])
def test_the_shipped_mix_needs_each_workload_in_flight_for_its_own_timeout(rate, expected):
    # peak x (0.45 x 60 + 0.20 x 90 + 0.15 x 90 + 0.12 x 60 + 0.05 x 60 + 0.03 x 60)
    assert SHIPPED.connections_needed(rate) == expected
