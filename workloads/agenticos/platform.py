"""AgenticOS as the kit knows it: the one record the registry reads (engine.seam.Platform)."""

from __future__ import annotations

from engine.seam import Platform, Seeding
from workloads.agenticos.dialect import OFFERS, AgenticOS
from workloads.agenticos.followup import follow_up
from workloads.agenticos.preflight import probes
from workloads.agenticos.seed import DEFAULT_API_URL, AgenticOSSeeded, make
from workloads.agenticos.tool import AGENT_TOOL

PLATFORM = Platform(
    name="agenticos",
    dialect=AgenticOS,
    seeded=AgenticOSSeeded,
    offers=OFFERS,
    seeding=Seeding(make, DEFAULT_API_URL, stub_help="the stub as the platform reaches it"),
    probes=probes,
    follow_up=follow_up,
    tool=AGENT_TOOL,
    subject=lambda own: f"agent {own.agent_id} published",
    started_by="make target",
)
