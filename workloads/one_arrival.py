"""A signed-in deployment outside the load, and one arrival served through the run's own path.

Preflight's default check, a platform's probes and follower, and ``loadkit check-platform``
need the deployment signed in, and some need one real request of a workload, judged as a
sample would be. Serving it through the platform's dialect on the engine's transport and
``engine.serve`` (not a setup client's second spelling of the request) means the check
exercises exactly what the load will, so a platform that writes no probe is still refused
before load when its agent cannot run, and a platform author sees each workload's first
real outcome in the run's own words.
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager

from engine.agent_plan import AgentPlan
from engine.clock import RunClock
from engine.deadlines import Deadlines
from engine.http import HttpTransport
from engine.samples import Result
from engine.seam import Deployment, Dialect, Platform, Setup
from engine.serve import serve
from inputs.fixture import Fixture
from inputs.scenario import Scenario, Timeouts
from workloads.reach import signed_in

# The body bound of a run on the scenario's default (8 MiB).
MAX_BODY = int(Scenario.max_body_mib * (1 << 20))


@contextmanager
def signed_setup(
    record: Platform,
    fixture: Fixture,
    email: str,
    secret: str,
    *,
    purpose: str,
    fix: str,
    base_url: str | None = None,
) -> Iterator[tuple[Setup, Dialect]]:
    """The deployment signed in (NotReached or CredentialRefused, one line naming ``fix``,
    if it cannot be), as a Setup and the dialect behind it; closed when the block ends.
    Requests name the run ``<purpose>-<8 hex digits>`` (the stub records preflight's
    model calls under it, apart from any run's)."""
    seeded = record.seeded_from(fixture)
    url = base_url or fixture.api_url
    run_id = f"{purpose}-{secrets.token_hex(4)}"
    http = HttpTransport(url, max_body=MAX_BODY)
    clock = RunClock(time.time())
    deadlines = Deadlines(clock)
    try:
        dialect = record.dialect(Deployment(fixture, seeded, url, run_id), http)
        dialect.agent_plan = AgentPlan(run_id, None, record.tool)
        signed_in(record, dialect, email, secret, fix)
        indexes = itertools.count()
        timeouts = Timeouts()

        def one(workload: str) -> Result:
            return serve(
                dialect,
                http,
                clock,
                deadlines,
                workload,
                next(indexes),
                False,
                timeouts.for_workload(workload),
                lambda _sent: None,
            )

        yield Setup(fixture, seeded, email, secret, dialect.auth, one), dialect
    finally:
        deadlines.close()
        http.close()
