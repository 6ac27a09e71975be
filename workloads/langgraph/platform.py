"""LangGraph's Agent Server as the kit knows it: the one record the registry reads
(engine.seam.Platform)."""

from __future__ import annotations

from engine.seam import Platform, Seeding
from workloads.langgraph.dialect import OFFERS, LangGraph
from workloads.langgraph.followup import follow_up
from workloads.langgraph.preflight import probes
from workloads.langgraph.seed import DEFAULT_API_URL, LangGraphSeeded, make
from workloads.lookup_tool import LOOKUP_TOOL

PLATFORM = Platform(
    name="langgraph",
    dialect=LangGraph,
    seeded=LangGraphSeeded,
    offers=OFFERS,
    seeding=Seeding(
        make,
        DEFAULT_API_URL,
        stub_help="the stub as the server reaches it, for the record",
    ),
    probes=probes,
    follow_up=follow_up,
    tool=LOOKUP_TOOL,
    subject=lambda own: f"agent {own.graph_id} served",
    started_by="make langgraph",
)
