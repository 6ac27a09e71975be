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
from engine.samples import SHED, TIMEOUT, Result
from engine.seam import Deployment, Dialect, Platform, Setup
from engine.serve import serve
from inputs.fixture import PASSWORD_ENV, Fixture
from inputs.scenario import DEFAULT_BODY_MIB
from inputs.timeouts import Timeouts
from workloads.reach import signed_in

# The body bound of a run on the scenario's default (8 MiB).
MAX_BODY = int(DEFAULT_BODY_MIB * (1 << 20))


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


def fix_for(workload: str, result: Result) -> str:
    """What to look at when one request of ``workload`` did not end ok (preflight's and
    check-platform's words)."""
    detail = result.detail
    if result.outcome == TIMEOUT:
        return "no answer in time: does the platform reach its model (the stub)?"
    if result.outcome == SHED:
        return "the platform shed it (HTTP 429): raise its rate limit for a load test"
    if detail.startswith(("HTTP 401", "HTTP 403")):
        return f"the credential was refused for this route: export {PASSWORD_ENV} as it wants"
    if detail.startswith("HTTP 404"):
        return "no such route or id: compare the dialect's call() with the platform's API"
    if detail.startswith("HTTP 3"):
        return "redirected: give the API's URL as it serves (scheme, host, path)"
    if detail.startswith("bad body"):
        return "the answer does not fit the dialect's shapes: compare answers with the API"
    if "connection" in detail or "refused" in detail:
        return "the connection broke: is the platform up at that URL?"
    method = "chat_turn" if workload == "chat_stream" else "answer"
    return (
        "check that the platform reaches its model (the stub) and was seeded; writing a "
        f"platform, see the dialect's {method}() and its CONTRACT.md"
    )
