"""The stub decides from one request alone: the marker's plan, the step it has reached."""

from __future__ import annotations

import json

from protocol.marker import Marker, read_marker, write_marker
from stub.plan import ANSWER, NO_TOOL, TOOL_CALLS, reply_to

LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup",
        "parameters": {
            "type": "object",
            "properties": {
                "topic": {"type": "string"},
                "limit": {"type": ["integer", "null"]},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "optional": {"type": "string"},
            },
            "required": ["topic", "limit", "mode"],
        },
    },
}
BASH = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}


def _marker(**fields) -> str:
    plan = {"run": "r", "arrival": 5, "steps": 3, "parallel": 1, "tool": None, "args": None}
    plan.update(fields)
    plan.setdefault("tokens", None)
    return write_marker(Marker(**plan))


def _turn(marker: str, done_steps: int, parallel: int = 1, earlier: list | None = None) -> list:
    """A request's messages after done_steps tool-calling answers of this turn."""
    messages = [{"role": "system", "content": "be brief"}, *(earlier or [])]
    messages.append({"role": "user", "content": f"Load test turn 5. {marker}"})
    for step in range(1, done_steps + 1):
        ids = [f"call_5_{step}_{i}" for i in range(parallel)]
        calls = [{"id": i, "type": "function", "function": {"name": "lookup"}} for i in ids]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": i, "content": "ok"} for i in ids]
    return messages


def test_marker_round_trips_and_writes_only_what_differs():
    marker = Marker("run-1", 42, 3, 2, "lookup", {"topic": "x"}, 8)
    assert read_marker("before " + write_marker(marker) + " after") == marker
    plain = Marker("run-1", 42, 1, 1, None, None, None)
    assert write_marker(plain) == '<loadkit>{"run":"run-1","arrival":42}</loadkit>'


def test_not_the_kits_marker_is_no_marker():
    assert read_marker("<loadkit>not json</loadkit>") is None
    assert read_marker('<loadkit>{"run": "r"}</loadkit>') is None
    assert read_marker("<loadkit>{") is None
    assert reply_to({"messages": [{"role": "user", "content": "hi"}]}).marker is None


def test_steps_counted_by_tool_calling_answers_after_the_marker():
    marker = _marker(parallel=2)
    kinds = []
    for done in range(3):
        reply = reply_to({"messages": _turn(marker, done, parallel=2), "tools": [LOOKUP]})
        kinds.append((reply.step, reply.kind, len(reply.calls)))
    assert kinds == [(1, TOOL_CALLS, 2), (2, TOOL_CALLS, 2), (3, ANSWER, 0)]


def test_a_continued_conversation_reads_its_own_turns_marker():
    earlier = _turn(_marker(arrival=1, steps=2), 1)[1:]
    earlier.append({"role": "assistant", "content": "done"})
    reply = reply_to({"messages": _turn(_marker(), 0, earlier=earlier), "tools": [LOOKUP]})
    assert (reply.marker.arrival, reply.step, reply.turns, reply.kind) == (5, 1, 2, TOOL_CALLS)
    assert reply.calls[0].id == "call_5_1_0"


def test_named_tool_plain_arguments_and_a_missing_tool():
    reply = reply_to({"messages": _turn(_marker(tool="lookup"), 0), "tools": [BASH, LOOKUP]})
    assert reply.calls[0].name == "lookup"
    assert json.loads(reply.calls[0].arguments) == {"topic": "loadkit", "limit": 1, "mode": "fast"}
    first = reply_to({"messages": _turn(_marker(), 0), "tools": [BASH, LOOKUP]})
    assert first.calls[0].name == "bash"
    missing = reply_to({"messages": _turn(_marker(tool="read"), 0), "tools": [BASH]})
    assert (missing.kind, missing.calls) == (NO_TOOL, ())
    assert reply_to({"messages": _turn(_marker(), 0)}).kind == NO_TOOL


def test_given_arguments_content_parts_and_no_parallel_calls():
    marker = _marker(parallel=3, args={"topic": "pools", "wait_ms": 5})
    messages = _turn(marker, 0)
    messages[-1]["content"] = [{"type": "text", "text": messages[-1]["content"]}]
    reply = reply_to({"messages": messages, "tools": [LOOKUP], "parallel_tool_calls": False})
    assert [json.loads(c.arguments) for c in reply.calls] == [{"topic": "pools", "wait_ms": 5}]
