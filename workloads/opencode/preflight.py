"""What preflight checks on opencode beyond the kit's reach and password check
(workloads/preflight.py).

Each check is one real request of the kind the run will make: the text search finds the
seeded corpus in the project folder, and a turn on a fresh (titled) session ends with the
model's answer (one agent_run through the dialect). Uploads and signed webhooks are not
offered by this platform (its record says so), so they are never checked. Every refusal is
one line with the fix.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from engine.seam import PreflightError, Probe, Setup
from workloads.corpus import TOPICS
from workloads.opencode.client import OpenCodeClient
from workloads.opencode.seed import OpenCodeSeeded
from workloads.preflight import RUN, search_probe, served_probe


def _check_search(client: OpenCodeClient, own: OpenCodeSeeded) -> int:
    found = [m for m in client.find(TOPICS[0]) if m.path.text.startswith(own.corpus)]
    if not found:
        raise PreflightError(
            f"opencode's text search finds nothing of the corpus in {own.directory}/{own.corpus}: "
            "run the seed (loadkit seed --platform opencode) on the machine opencode runs on"
        )
    return len(found)


@contextmanager
def probes(setup: Setup[OpenCodeSeeded]) -> Iterator[list[Probe]]:
    """The probes, on one setup client signed in as the run is."""
    with OpenCodeClient(setup.fixture.api_url, setup.auth) as client:
        yield [
            search_probe(lambda: _check_search(client, setup.seeded)),
            served_probe(setup, "agent_run", RUN),
        ]
