"""opencode serve as the kit knows it: the one record the registry reads (engine.seam.Platform).

A module of its own, as for every platform (workloads/agenticos/platform.py says why).
opencode shows nothing of accepted work to follow (it accepts none for later), so it
has no follower. Its agent's tool for the loop is its own built-in ``read`` (a file of the
corpus in the project folder, relative to it): cheap, no network, and it cannot wait.
"""

from __future__ import annotations

from engine.seam import Platform
from workloads.opencode.dialect import REQUESTS, OpenCode
from workloads.opencode.fixture import OpenCodeSeeded
from workloads.opencode.preflight import run_preflight
from workloads.opencode.seed import main as seed
from workloads.opencode.tool import AGENT_TOOL

PLATFORM = Platform(
    name="opencode",
    dialect=OpenCode,
    seeded=OpenCodeSeeded,
    seed=seed,
    run_preflight=run_preflight,
    follow_up=None,
    requests=REQUESTS,
    tool=AGENT_TOOL,
)
