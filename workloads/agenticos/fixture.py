"""AgenticOS's part of the fixture: the organisation, agent, model profile, collection and trigger.

The seed makes or finds each through the API; the dialect, preflight and
follow-up read them from here, checked, so a fixture missing one is refused
with a line naming it before any load.
"""

from __future__ import annotations

from dataclasses import dataclass

from inputs.fixture import Fixture, read_seeded


@dataclass(frozen=True)
class AgenticOSSeeded:
    """What ``workloads.agenticos.seed`` made or found: ids and names, never a secret."""

    org_id: str
    agent_id: str
    model_profile_id: str
    collection_name: str
    documents: int
    # None when the platform could not make a trigger (trigger_fire is then skipped).
    trigger_id: str | None = None
    trigger_source: str = "webhook"


def seeded(fixture: Fixture) -> AgenticOSSeeded:
    """The fixture's AgenticOS part, or FixtureError naming what is missing."""
    return read_seeded(AgenticOSSeeded, fixture)
