"""What one chat request asks of the stub: answer now, or call a tool, and which.

The kit drives an agent's loop without knowing the platform's insides: it writes
its plan into the user's message as a marker (protocol/marker.py), and
every platform passes that message to its model. The stub reads the plan from
the request alone, so it stays stateless and any number of stub processes agree:

- the plan is the last ``user`` message that carries a marker (a continued
  conversation's earlier turns carry their own, older markers);
- the step this call is = 1 + the ``assistant`` messages after that one that
  carry ``tool_calls`` (each is one tool-calling answer the stub already gave in
  this turn; k parallel results still make one step, and a platform that sends
  back fewer results than it was asked for is still at the step it reached);
- below ``steps`` it asks for ``parallel`` calls of one tool, else it answers.

The tool is the one the marker names if the request offers it; a marker that
names none takes the first tool offered. A named tool the request does not offer,
or a request that offers no tools at all, is answered with text and recorded as
such, so the kit sees the turn stop short instead of the stub calling a tool the
agent was never given (opencode offers bash among its tools).

Arguments: the marker's ``args`` when it gives them, else each required
parameter of the tool's JSON schema filled with a plain value of its type.
Call ids are ``call_<arrival>_<step>_<i>``: unique within a conversation, since
each turn is its own arrival, and the same on every stub process.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from protocol.marker import Marker, read_marker

# What a tool-calling answer is, and what a text answer is, in the per-call record.
TOOL_CALLS = "tool_calls"
ANSWER = "answer"
# A text answer where the plan wanted a tool: the request offered none, or not the one named.
NO_TOOL = "no_tool"
# Values a required parameter gets when the marker gives no arguments, by JSON-schema type.
_PLAIN = {
    "string": "loadkit",
    "integer": 1,
    "number": 1,
    "boolean": True,
    "array": [],
    "object": {},
}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the stub asks for: its id, the function's name and its JSON arguments."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Reply:
    """What the stub answers this request: tool calls (non-empty) or text of ``tokens``."""

    marker: Marker | None
    step: int
    turns: int
    calls: tuple[ToolCall, ...]
    kind: str


_ENCODER = msgspec.json.Encoder()


def text_of(content: object) -> str:
    """A message's text: the string, or its text parts joined (the content-parts form)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text") or "" for part in content if isinstance(part, dict)
        )  # a part without text (an image) adds nothing
    return ""


def reply_to(body: dict) -> Reply:
    """Decide, from the request alone, whether to call tools (and which) or to answer."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return Reply(None, 1, 0, (), ANSWER)
    # From the newest message back: the tool-calling answers seen before the marked user
    # message are this turn's steps so far, and older turns' markers are never read.
    marker, step, turns = None, 1, 0
    for message in reversed(messages):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "user":
            turns += 1
            if marker is None:
                content = message.get("content")
                marker = read_marker(content if isinstance(content, str) else text_of(content))
        elif role == "assistant" and marker is None and message.get("tool_calls"):
            step += 1
    if marker is None:
        return Reply(None, 1, turns, (), ANSWER)
    if step >= marker.steps or body.get("tool_choice") == "none":
        return Reply(marker, step, turns, (), ANSWER)
    tool = _offered(body.get("tools"), marker.tool)
    if tool is None:
        return Reply(marker, step, turns, (), NO_TOOL)
    name, parameters = tool
    arguments = _ENCODER.encode(
        marker.args if marker.args is not None else _plain_arguments(parameters)
    ).decode()
    parallel = 1 if body.get("parallel_tool_calls") is False else marker.parallel
    calls = tuple(
        ToolCall(f"call_{marker.arrival}_{step}_{i}", name, arguments) for i in range(parallel)
    )
    return Reply(marker, step, turns, calls, TOOL_CALLS)


def _offered(tools: object, wanted: str | None) -> tuple[str, dict] | None:
    """(name, parameters schema) of the tool to call: the wanted one if offered, else the
    first offered when none is wanted; None when the request offers no such tool."""
    if not isinstance(tools, list):
        return None
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict):
            continue
        name = function.get("name")
        if isinstance(name, str) and (wanted is None or name == wanted):
            parameters = function.get("parameters")
            return name, parameters if isinstance(parameters, dict) else {}
    return None


def _plain_arguments(schema: dict) -> dict:
    """Each required parameter of a JSON schema given a plain value of its type."""
    properties = schema.get("properties") or {}
    arguments = {}
    for name in schema.get("required") or ():
        spec = properties.get(name) if isinstance(properties, dict) else None
        kind = spec.get("type") if isinstance(spec, dict) else None
        if isinstance(kind, list):  # ["string", "null"]: the first non-null type
            kind = next((k for k in kind if k != "null"), None)
        enum = spec.get("enum") if isinstance(spec, dict) else None
        plain = _PLAIN.get(kind, "loadkit") if isinstance(kind, str) else "loadkit"
        arguments[name] = enum[0] if enum else plain
    return arguments
