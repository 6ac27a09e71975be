"""AgenticOS as the kit knows it: the one record the registry reads (engine.seam.Platform).

It sits in a module of its own, not in the package's ``__init__``: importing the
package must not import its seed and preflight, or ``python -m
workloads.agenticos.seed`` would find the module it runs already imported.
"""

from __future__ import annotations

from engine.seam import Platform
from workloads.agenticos.dialect import REQUESTS, AgenticOS
from workloads.agenticos.fixture import AgenticOSSeeded
from workloads.agenticos.followup import follow_up
from workloads.agenticos.preflight import run_preflight
from workloads.agenticos.seed import main as seed
from workloads.agenticos.tool import AGENT_TOOL

PLATFORM = Platform(
    name="agenticos",
    dialect=AgenticOS,
    seeded=AgenticOSSeeded,
    seed=seed,
    run_preflight=run_preflight,
    follow_up=follow_up,
    requests=REQUESTS,
    tool=AGENT_TOOL,
)
