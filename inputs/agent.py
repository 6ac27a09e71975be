"""The agent's shape in a workload: how many model calls a turn makes, and how it grows.

The kit plans a chat turn's or an agent run's loop in the prompt it writes (the
stub follows it, stub/plan.py), so only the two workloads whose prompt the kit
writes carry a shape: chat_stream and agent_run. Every default is the seed's one
call with a short prompt, so a scenario that says nothing here offers what it
always did. docs/DESIGN.md "Agents that act" argues each field.
"""

from __future__ import annotations

from msgspec import Struct

from inputs.bad_input import Problems, label, shown
from inputs.numbers import whole

# The workloads whose prompt the kit writes, and so whose loop it can plan.
AGENT_WORKLOADS = ("chat_stream", "agent_run")
# Conversations grow only where a turn continues one: the chat turn.
CONVERSATION_WORKLOADS = ("chat_stream",)
# Every key a workload's mapping may hold besides its agent's shape (per_platform: a
# platform's own share with its why; why: the reason for the share, as a run records it).
WORKLOAD_KEYS = ("share", "description", "per_platform", "why")


# Bounds: each a slip of units or a typo beyond, refused before any load.
# 64 model calls is past any agent a load test would plan (AgenticOS's default bound is 100
# per run, and a step costs the stub's whole first-token delay).
MAX_STEPS = 64
MAX_PARALLEL = 16
MAX_TOOL_MS = 60_000.0
# A mebibyte of prompt is ~250k tokens, past any model's context; opencode's is 22-32 kB.
MAX_PROMPT_BYTES = 1 << 20
MAX_ANSWER_TOKENS = 4096
MAX_TURNS = 256
MAX_GAP = 100_000


class Conversations(Struct, frozen=True, omit_defaults=True):
    """Open arrivals that continue an earlier conversation, so histories grow (chat_stream).

    The n-th chat arrival continues with probability ``continuing`` the conversation of
    the (n - ``gap``)-th, unless that one already has ``turns`` turns (engine/conversations.py);
    users mode keeps one conversation per user and starts the next after ``turns``.
    """

    # None continue: every open arrival a stranger, as the seed's runs were.
    continuing: float = 0.0
    # The longest history a conversation reaches: the depth sweep's 16.
    turns: int = 16
    # Chat arrivals between a conversation's turns: 3.3 s at the seed's sustain rate (2.4 chat
    # turns a second), longer than a one-step turn (1.1 s), so the earlier turn has ended.
    gap: int = 8

    @classmethod
    def read(cls, raw: object, workload: str, problems: Problems) -> Conversations:
        """The conversations under ``workloads.<workload>``; every value out of range is one
        problem (the defaults stand in for what was refused)."""
        where = f"workloads.{workload}.conversations"
        if not isinstance(raw, dict):
            problems.add(f"{where}: expected a mapping {{continuing, turns, gap}}")
            return cls()
        problems.unknown_keys(raw, where, _CONVERSATION_KEYS)
        defaults = cls()
        continuing = defaults.continuing
        if "continuing" in raw:
            value = raw["continuing"]
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                problems.add(
                    f"{where}.continuing: {shown(value)} is not a share from 0 to 1; e.g. 0.5"
                )
            else:
                continuing = float(value)
        turns, gap = defaults.turns, defaults.gap
        if "turns" in raw:
            turns = whole(raw["turns"], f"{where}.turns", 1, MAX_TURNS, problems) or turns
        if "gap" in raw:
            gap = whole(raw["gap"], f"{where}.gap", 1, MAX_GAP, problems) or gap
        return cls(continuing, turns, gap)


class Agent(Struct, frozen=True, omit_defaults=True):
    """One turn's or run's loop: ``steps`` model calls, the last one the answer."""

    # The seed's single call: no tool.
    steps: int = 1
    # Tool calls the model asks for in one step; the platform runs them (concurrently, if it
    # does that).
    parallel_tools: int = 1
    # How long the tool itself takes, where the platform's tool can wait: 0, so the loop
    # measures the platform, not the tool.
    tool_ms: float = 0.0
    # The user message padded to this many bytes; 0 is the kit's short prompt.
    prompt_bytes: int = 0
    # The final answer's tokens; None: the stub's --tokens (32 by default).
    answer_tokens: int | None = None
    conversations: Conversations = Conversations()

    @property
    def acts(self) -> bool:
        """Whether a turn calls tools at all (more than the seed's one call)."""
        return self.steps > 1

    @classmethod
    def read(cls, spec: dict, workload: str, problems: Problems) -> Agent:
        """The agent's shape under ``workloads.<workload>``; every unknown key and every value
        out of range is one problem (the defaults stand in for what was refused)."""
        where = f"workloads.{workload}"
        known = known_keys(workload)
        for key in spec:
            if key not in known:
                problems.add(
                    f"{where}.{label(key)}: unknown; use one of {known}{_why(key, workload)}"
                )
        defaults = cls()
        agent: dict[str, object] = {}
        for key, most, least in (
            ("steps", MAX_STEPS, 1),
            ("parallel_tools", MAX_PARALLEL, 1),
            ("prompt_bytes", MAX_PROMPT_BYTES, 0),
            ("answer_tokens", MAX_ANSWER_TOKENS, 1),
        ):
            if key in spec and key in known:
                value = whole(spec[key], f"{where}.{key}", least, most, problems)
                agent[key] = getattr(defaults, key) if value is None else value
        if "tool_ms" in spec and "tool_ms" in known:
            agent["tool_ms"] = _milliseconds(spec["tool_ms"], f"{where}.tool_ms", problems)
        if "conversations" in spec and "conversations" in known:
            agent["conversations"] = Conversations.read(spec["conversations"], workload, problems)
        return cls(**agent)  # type: ignore[arg-type]  # each value read as its field's type


_AGENT_KEYS = tuple(f for f in Agent.__struct_fields__ if f != "conversations")
_CONVERSATION_KEYS = Conversations.__struct_fields__


def known_keys(workload: str) -> tuple[str, ...]:
    """The keys a workload's mapping may hold."""
    keys: tuple[str, ...] = WORKLOAD_KEYS
    if workload in AGENT_WORKLOADS:
        keys += _AGENT_KEYS
    if workload in CONVERSATION_WORKLOADS:
        keys += ("conversations",)
    return keys


def agent_dict(agent: Agent) -> dict:
    """The shape as a scenario file says it: only what differs from the defaults."""
    defaults = Agent()
    data = {k: getattr(agent, k) for k in _AGENT_KEYS if getattr(agent, k) != getattr(defaults, k)}
    if agent.conversations != defaults.conversations:
        data["conversations"] = {k: getattr(agent.conversations, k) for k in _CONVERSATION_KEYS}
    return data


def _why(key: str, workload: str) -> str:
    """Why a key that is known elsewhere is not known here."""
    if key in _AGENT_KEYS and workload not in AGENT_WORKLOADS:
        return f" ({key} is for {' and '.join(AGENT_WORKLOADS)}: the kit writes no prompt here)"
    if key == "conversations" and workload not in CONVERSATION_WORKLOADS:
        return " (conversations are for chat_stream: only a chat turn continues one)"
    return ""


def _milliseconds(value: object, where: str, problems: Problems) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value <= MAX_TOOL_MS
    ):
        problems.add(
            f"{where}: {shown(value)} is not a time from 0 to {MAX_TOOL_MS:.0f} ms; e.g. 50"
        )
        return 0.0
    return float(value)
