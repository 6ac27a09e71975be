"""Which chat turns continue which conversation is a pure function of the run's chat turns:
the same on 1 and 3 load processes, every conversation's turns on one process (issue 28)."""

from __future__ import annotations

import copy
from collections import Counter

import yaml

from engine.conversations import ConversationCursor, ConversationWalk, planned_depths
from engine.mix import Mix
from engine.schedule import Plan
from inputs.agent import Conversations
from inputs.scenario import DEFAULT_PATH, scenario_from_dict

SHAPE = Conversations(continuing=0.6, turns=5, gap=4)


def _scenario():
    raw = copy.deepcopy(yaml.safe_load(DEFAULT_PATH.read_text()))
    raw["workloads"]["chat_stream"]["conversations"] = {"continuing": 0.6, "turns": 5, "gap": 4}
    return scenario_from_dict(raw).scaled(0.2)


def _walk(workers: int) -> dict[int, tuple[int, int, int]]:
    """index -> (process, conversation head, depth) for every chat turn, over W processes."""
    scenario = _scenario()
    plan, mix = Plan.from_scenario(scenario), Mix.from_scenario(scenario)
    served = {}
    for slot in range(workers):
        cursor = ConversationCursor(slot, workers, mix, SHAPE)
        while (upcoming := cursor.peek(plan)) is not None:
            _, k, _ = upcoming
            assert k not in served, f"arrival {k} served twice"
            served[k] = slot
            cursor.advance()
    assert sorted(served) == list(range(plan.total())), "every arrival once"
    chat = [k for k in range(plan.total()) if mix.pick(k) == "chat_stream"]
    walk = ConversationWalk(SHAPE)
    turns = {k: walk.next(k) for k in chat}
    return {k: (served[k], t.head, t.depth) for k, t in turns.items()}


def test_the_same_turns_continue_on_one_and_three_processes():
    one, three = _walk(1), _walk(3)
    assert {k: v[1:] for k, v in one.items()} == {k: v[1:] for k, v in three.items()}
    continued = sum(1 for _, _, depth in one.values() if depth > 1)
    assert 0.4 < continued / len(one) < 0.6, continued / len(one)
    depths = Counter(depth for _, _, depth in one.values())
    assert set(depths) == set(range(1, SHAPE.turns + 1))
    # Every conversation's turns are served by the process of its first turn.
    for k, (process, head, _) in three.items():
        assert process == head % 3 == three[head][0], k


def test_a_conversations_turns_share_one_session_and_grow_by_one():
    scenario = _scenario()
    plan, mix = Plan.from_scenario(scenario), Mix.from_scenario(scenario)
    cursor = ConversationCursor(0, 1, mix, SHAPE)
    by_session: dict[int, list[int]] = {}
    kept = []  # alive, so no two sessions share an id()
    while (upcoming := cursor.peek(plan)) is not None:
        if cursor.conversation is not None:
            kept.append(cursor.conversation)
            by_session.setdefault(id(cursor.conversation), []).append(upcoming[1])
        cursor.advance()
    chat = [k for k in range(plan.total()) if mix.pick(k) == "chat_stream"]
    depth = dict(zip(chat, planned_depths(chat, SHAPE), strict=True))
    chains = [ks for ks in by_session.values() if len(ks) > 1]
    assert chains
    for ks in chains:
        assert [depth[k] for k in ks] == list(range(1, len(ks) + 1)), ks


def test_no_continuing_share_is_every_turn_a_stranger():
    walk = ConversationWalk(Conversations())
    assert {walk.next(k).depth for k in range(500)} == {1}
