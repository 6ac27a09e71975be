"""LangGraph's Agent Server as the kit knows it: the one record the registry reads
(engine.seam.Platform).

A module of its own, as for every platform (workloads/agenticos/platform.py says why).
"""

from __future__ import annotations

from engine.seam import Platform
from workloads.langgraph.dialect import REQUESTS, LangGraph
from workloads.langgraph.fixture import LangGraphSeeded
from workloads.langgraph.followup import follow_up
from workloads.langgraph.preflight import run_preflight
from workloads.langgraph.seed import main as seed
from workloads.lookup_tool import LOOKUP_TOOL

PLATFORM = Platform(
    name="langgraph",
    dialect=LangGraph,
    seeded=LangGraphSeeded,
    seed=seed,
    run_preflight=run_preflight,
    follow_up=follow_up,
    requests=REQUESTS,
    tool=LOOKUP_TOOL,
)
