"""agno's part of the fixture: the agent, its knowledge base and where its WhatsApp interface is.

AgentOS defines agents and knowledge in code; the seed checks the agent is served
and fills the knowledge base. A fixture written before this record kept the
WhatsApp path in ``extra``; it reads the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from inputs.fixture import Fixture, read_seeded

# Where agno mounts the WhatsApp interface unless the deployment says otherwise.
DEFAULT_WHATSAPP_PREFIX = "/whatsapp"


@dataclass(frozen=True)
class AgnoSeeded:
    """What ``workloads.agno.seed`` found or filled: names and a path, never the key."""

    agent_id: str
    # The knowledge base the seed filled (its name in AgentOS).
    collection_name: str
    documents: int
    whatsapp_prefix: str = DEFAULT_WHATSAPP_PREFIX


def seeded(fixture: Fixture) -> AgnoSeeded:
    """The fixture's agno part, or FixtureError naming what is missing."""
    return read_seeded(AgnoSeeded, fixture)
