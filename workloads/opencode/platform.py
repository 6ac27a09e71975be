"""opencode serve as the kit knows it: the one record the registry reads
(engine.seam.Platform).

opencode shows nothing of accepted work to follow (it accepts none for later), so it
has no follower. Its agent's tool for the loop is its own built-in ``read`` (a file of the
corpus in the project folder, relative to it): cheap, no network, and it cannot wait.
"""

from __future__ import annotations

from engine.seam import Platform, Seeding
from workloads.opencode.dialect import NOT_OFFERED, OFFERS, OpenCode
from workloads.opencode.preflight import probes
from workloads.opencode.seed import DEFAULT_API_URL, OpenCodeSeeded, make
from workloads.opencode.tool import AGENT_TOOL

PLATFORM = Platform(
    name="opencode",
    dialect=OpenCode,
    seeded=OpenCodeSeeded,
    offers=OFFERS,
    not_offered=NOT_OFFERED,
    seeding=Seeding(
        make, DEFAULT_API_URL, stub_help="the stub as opencode reaches it, for the record"
    ),
    probes=probes,
    tool=AGENT_TOOL,
    subject=lambda own: f"model {own.provider_id}/{own.model_id} served by opencode",
    started_by="make opencode",
)
