"""The schedule and the mix are the generator's spec: absolute due times and exact counts.

These are pure functions; the Locust-level tests check that real runs follow them.
"""

from collections import Counter

import pytest

from engine.mix import Mix
from engine.schedule import Plan, SlotCursor
from inputs.scenario import load_scenario, scenario_from_dict


def _walk(plan: Plan, slot: int, workers: int) -> list[tuple[int, int, float]]:
    cursor, seen = SlotCursor(slot, workers), []
    while (upcoming := cursor.peek(plan)) is not None:
        seen.append(upcoming)
        cursor.advance()
    return seen


def test_due_times_are_absolute_and_phases_tile_the_run():
    plan = Plan.from_scenario(load_scenario().scaled(0.1))
    assert [s.name for s in plan.segments] == ["ramp", "sustain", "burst", "recover"]
    # 6 s x 4/s, 18 s x 12/s, 4.5 s x 36/s, 6 s x 12/s: scaling noise must not add arrivals.
    assert [s.count() for s in plan.segments] == [24, 216, 162, 72]
    assert plan.total() == 474
    for number, segment in enumerate(plan.segments):
        assert segment.due_s(0) == segment.start_s
        last = segment.due_s(segment.count() - 1)
        assert segment.start_s <= last < segment.end_s
        if number:
            assert segment.start_s == plan.segments[number - 1].end_s
            previous = plan.segments[number - 1]
            assert segment.first_index == previous.first_index + previous.count()


@pytest.mark.parametrize("workers", [1, 2, 3, 5])
def test_worker_slots_partition_the_global_indexes(workers):
    plan = Plan.from_scenario(load_scenario().scaled(0.05))
    union = []
    for slot in range(workers):
        walked = _walk(plan, slot, workers)
        assert all(k % workers == slot for _, k, _ in walked)
        assert [due for *_, due in walked] == sorted(due for *_, due in walked)
        union += walked
    single = _walk(plan, 0, 1)
    assert sorted(union) == single
    assert [k for _, k, _ in single] == list(range(plan.total()))


def test_golden_ratio_mix_holds_shares_and_is_identical_across_worker_splits():
    scenario = load_scenario()
    mix = Mix.from_scenario(scenario)
    counts = mix.counts(range(10_000))
    for name, share in scenario.mix.items():
        # A low-discrepancy sequence is within a few arrivals of the exact share.
        assert abs(counts[name] - share * 10_000) <= 3, name
    by_worker = Counter()
    for slot in range(3):
        by_worker += mix.counts(range(slot, 10_000, 3))
    assert by_worker == counts


def test_cancelled_share_of_chat_turns_is_spread_not_clumped():
    scenario = load_scenario()
    mix = Mix.from_scenario(scenario)
    chats = [k for k in range(20_000) if mix.pick(k) == "chat_stream"]
    cancelled = [k for k in chats if mix.cancels(k)]
    assert abs(len(cancelled) / len(chats) - scenario.chat_cancel_share) < 0.01
    # Within any 50 consecutive chat turns the share stays near 20%, not in runs.
    windows = [sum(map(mix.cancels, chats[i : i + 50])) for i in range(0, len(chats) - 50, 50)]
    assert min(windows) >= 6 and max(windows) <= 14


def test_a_zero_share_workload_is_never_picked():
    scenario = load_scenario()
    raw = scenario.to_dict()
    raw["workloads"]["trigger_fire"]["share"] = 0
    mix = Mix.from_scenario(scenario_from_dict(raw))
    assert mix.counts(range(5_000))["trigger_fire"] == 0


def test_a_rate_change_continues_the_global_index_at_the_change_time():
    plan = Plan.constant(10.0)
    changed = plan.with_rate(40.0, 2.5)
    first, second = changed.segments
    assert first.end_s == 2.5 and first.count() == 25
    assert second.start_s == 2.5 and second.first_index == 25 and second.count() is None
    bounded = changed.closed_at(3.0)
    assert bounded.total() == 25 + 20
    walked = _walk(bounded, 0, 1)
    assert [k for _, k, _ in walked] == list(range(45))
    assert walked[25][2] == 2.5


def test_a_cursor_follows_a_plan_that_changes_under_it():
    cursor = SlotCursor(1, 2)
    plan = Plan.constant(10.0)
    seen = []
    for _ in range(5):
        seen.append(cursor.peek(plan))
        cursor.advance()
    plan = plan.with_rate(20.0, 1.0).closed_at(1.5)
    while (upcoming := cursor.peek(plan)) is not None:
        seen.append(upcoming)
        cursor.advance()
    assert [k for _, k, _ in seen] == list(range(1, 20, 2))
    assert seen[5] == (1, 11, 1.05)


def test_indexes_before_cuts_at_a_time():
    plan = Plan.from_scenario(load_scenario().scaled(0.1))
    early = list(plan.indexes_before(7.0))
    assert len(early) == 24 + 12
    assert list(plan.indexes_before()) == [(n, k) for n, k in _indexes(plan)]


def _indexes(plan):
    for number, segment in enumerate(plan.segments):
        for j in range(segment.count()):
            yield number, segment.first_index + j


def test_due_before_counts_what_the_schedule_offered_by_then():
    plan = Plan.from_scenario(load_scenario().scaled(0.1))  # ramp 6 s at 4/s, then 12/s
    assert plan.due_before(0.0) == 0
    assert plan.due_before(6.0) == 24
    # Sustain's arrivals due at 6 + j / 12 before 7 s: j = 0..11.
    assert plan.due_before(7.0) == 24 + 12
    assert plan.due_before(plan.end_s) == plan.total()
