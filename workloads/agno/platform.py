"""agno's AgentOS as the kit knows it: the one record the registry reads (engine.seam.Platform)."""

from __future__ import annotations

from engine.seam import Platform, Seeding
from workloads.agno.dialect import OFFERS, Agno
from workloads.agno.followup import follow_up
from workloads.agno.preflight import probes
from workloads.agno.seed import DEFAULT_API_URL, AgnoSeeded, make
from workloads.lookup_tool import LOOKUP_TOOL

PLATFORM = Platform(
    name="agno",
    dialect=Agno,
    seeded=AgnoSeeded,
    offers=OFFERS,
    seeding=Seeding(
        make, DEFAULT_API_URL, stub_help="the stub as AgentOS reaches it, for the record"
    ),
    probes=probes,
    follow_up=follow_up,
    tool=LOOKUP_TOOL,
    subject=lambda own: f"agent {own.agent_id} served",
    started_by="make agno",
)
