"""The plan of an agent's loop, written into the prompt the kit sends (issue 28).

A platform passes the user's message to its model, so the kit's plan for the
turn travels there: the marker (``protocol.marker``, the one module the stub and
the kit share) says which arrival this is, how many model calls the turn makes, how
many tools each step calls and with which arguments. Every turn and run carries
one, also at one step, so the stub's per-call record can confirm each turn made
the calls it was asked for. The platform's tool is its own (``AgentTool`` on
its Platform record): the kit only names it and gives its arguments.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from inputs.agent import AGENT_WORKLOADS, Agent
from inputs.scenario import Scenario
from protocol.marker import Marker, write_marker

# The run directory's copy of the stub's per-call record for the run (stub/calls.py), fetched
# by the master after the drain and joined to the samples by reports/loop.py.
STUB_CALLS_FILE = "stub_calls.csv"
# What pads a prompt to its stated size: plain words, so every platform's tokenizer and
# the stub's word count see text, not one long token.
_FILLER = " context"


def calls_key(run_id: str, start_epoch: float) -> str:
    """What a run's marker names it by, and the master fetches its calls by: the run id and
    the moment its load started, the key every committed stub_calls.csv's rows carry."""
    return f"{run_id}@{start_epoch:.3f}"


@dataclass(frozen=True)
class AgentTool:
    """The one tool a platform's agent is given for the loop, as its users would give it."""

    # The function's name as the model sees it in the request's tools; None: whichever the
    # agent offers first (the stub calls it), for an agent the kit has never seen.
    name: str | None
    # Its arguments for a stated tool_ms (the kit's marker carries them to the stub); None:
    # the stub fills each required one with a plain value.
    arguments: Callable[[float], Mapping[str, object]] | None
    # Whether the tool can wait tool_ms; a platform whose tool cannot refuses tool_ms > 0.
    waits: bool


# The tool of an agent the kit has never seen (a protocol platform's): the first it offers.
ANY_TOOL = AgentTool(None, None, waits=False)


class AgentPlan:
    """Each chat turn's and agent run's prompt: the kit's words, padding, the marker."""

    def __init__(
        self, run_key: str, scenario: Scenario | None = None, tool: AgentTool | None = None
    ) -> None:
        # The run id until ``started``, then calls_key(run id, start): how the stub's record
        # and the master's fetch know the run.
        self.run_key = run_key
        self.tool = tool
        self._agents = {
            name: scenario.agent(name) if scenario is not None else Agent()
            for name in AGENT_WORKLOADS
        }

    def started(self, start_epoch: float) -> AgentPlan:
        """The same plan for the run whose load started at ``start_epoch`` (run_key is then
        the run id; the load process knows the start only once the master sends it)."""
        plan = copy.copy(self)
        plan.run_key = calls_key(self.run_key, start_epoch)
        return plan

    def agent(self, workload: str) -> Agent:
        """The loop this run's ``workload`` turns make."""
        return self._agents[workload]

    def prompt(self, workload: str, k: int, text: str) -> str:
        """Arrival k's prompt: ``text``, padded to the stated size, then the marker."""
        agent = self._agents[workload]
        tool = self.tool
        marker = write_marker(
            Marker(
                run=self.run_key,
                arrival=k,
                steps=agent.steps,
                parallel=agent.parallel_tools,
                tool=tool.name if tool is not None and agent.acts else None,
                args=dict(tool.arguments(agent.tool_ms))
                if tool is not None and tool.arguments is not None and agent.acts
                else None,
                tokens=agent.answer_tokens,
            )
        )
        short = len((text + " " + marker).encode())
        if agent.prompt_bytes > short:
            fill = agent.prompt_bytes - short
            text += (_FILLER * (fill // len(_FILLER) + 1))[:fill]
        return f"{text} {marker}"


def plan_problem(scenario: Scenario, platform: str, tool: AgentTool | None) -> str | None:
    """Why this platform cannot run the scenario's loop (one line), or None."""
    for name in AGENT_WORKLOADS:
        if name not in scenario.offered:
            continue
        agent = scenario.agent(name)
        if agent.acts and tool is None:
            return (
                f"workloads.{name}.steps: {agent.steps}, but {platform}'s agent is given no tool "
                "by the kit; give steps: 1"
            )
        if agent.tool_ms > 0 and tool is not None and not tool.waits:
            return (
                f"workloads.{name}.tool_ms: {agent.tool_ms:g}, but {platform}'s tool "
                f"({tool.name or 'the first its agent offers'}) cannot wait; give tool_ms: 0"
            )
    return None
