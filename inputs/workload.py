"""The mix: the six workloads, each one's share of the arrivals, what it is, and its agent.

A share is relative (the scenario's mix normalises them), may differ by platform with its
reason, and the two workloads whose prompt the kit writes carry the loop their turns make
(inputs/agent.py).
"""

from __future__ import annotations

from msgspec import Struct
from msgspec.structs import replace

from inputs.agent import Agent
from inputs.bad_input import Problems, label
from inputs.numbers import number
from inputs.per_platform import PlatformShare

WORKLOADS = ("api_read", "chat_stream", "agent_run", "rag_query", "ingest", "trigger_fire")

# Shares are relative, so any finite size works; this only keeps sums finite.
MAX_SHARE = 1e9


class Workload(Struct, frozen=True, omit_defaults=True):
    name: str
    share: float
    description: str
    # The loop a chat turn or an agent run makes (inputs/agent.py); the seed's one call.
    agent: Agent = Agent()
    # Shares that differ by platform (Scenario.for_platform applies one; a run records none).
    per_platform: tuple[PlatformShare, ...] = ()
    # Why the share is what it is on the platform the run is on (the report shows it).
    why: str = ""

    def for_platform(self, platform: str) -> Workload:
        """This workload as offered on ``platform``: its own share and reason, if it has one."""
        own = next((p for p in self.per_platform if p.platform == platform), None)
        share, why = (own.share, own.why) if own else (self.share, self.why)
        return replace(self, share=share, why=why, per_platform=())

    @classmethod
    def read(cls, name: str, raw: object, problems: Problems) -> Workload | None:
        """The workload under ``workloads.<name>``: a share, or a mapping with a share, its
        description, its agent and its shares by platform (None when the share is refused)."""
        spec = raw if isinstance(raw, dict) else {"share": raw}
        share = number(
            spec.get("share"),
            f"workloads.{name}.share",
            "give a share of 0 or more",
            problems,
            most=MAX_SHARE,
        )
        agent = Agent.read(spec, name, problems)
        where = f"workloads.{name}.per_platform"
        own = PlatformShare.read(spec.get("per_platform", {}), where, MAX_SHARE, problems)
        if share is None:
            return None
        description, why = str(spec.get("description", "")), str(spec.get("why", ""))
        return cls(name, share, description, agent, own, why)


def read_workloads(raw: object, problems: Problems) -> tuple[Workload, ...]:
    """The mix: each known workload as it reads itself, and at least one share above 0."""
    if not isinstance(raw, dict) or not raw:
        problems.add(f"workloads: expected a mapping of workload to share, e.g. {WORKLOADS}")
        return ()
    workloads = []
    for name, spec in raw.items():
        if name not in WORKLOADS:
            problems.add(f"workloads.{label(name)}: unknown workload; use one of {WORKLOADS}")
            continue
        workload = Workload.read(name, spec, problems)
        if workload is not None:
            workloads.append(workload)
    if len(workloads) == len(raw) and sum(w.share for w in workloads) <= 0:
        problems.add("workloads: shares sum to 0; give at least one workload a share > 0")
    return tuple(workloads)
