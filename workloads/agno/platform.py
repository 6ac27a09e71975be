"""agno's AgentOS as the kit knows it: the one record the registry reads (engine.seam.Platform).

A module of its own, as for every platform (workloads/agenticos/platform.py says why).
"""

from __future__ import annotations

from engine.seam import Platform
from workloads.agno.dialect import REQUESTS, Agno
from workloads.agno.fixture import AgnoSeeded
from workloads.agno.followup import follow_up
from workloads.agno.preflight import run_preflight
from workloads.agno.seed import main as seed
from workloads.lookup_tool import LOOKUP_TOOL

PLATFORM = Platform(
    name="agno",
    dialect=Agno,
    seeded=AgnoSeeded,
    seed=seed,
    run_preflight=run_preflight,
    follow_up=follow_up,
    requests=REQUESTS,
    tool=LOOKUP_TOOL,
)
