"""AG-UI as the kit knows it: the one record the registry reads (engine.seam.Platform), and what
seeding finds.

AG-UI has no card and no discovery: what the kit needs is given as seed options (the
agent's path under ``--api-url``; the header its key goes in, where it wants one) and
checked by one real run through the run's own dialect before the fixture is written. A
URL that does not answer AG-UI (nothing listening, a 404, a 422 for the body, an answer
that is not an event stream) is one line naming it and the fix, and nothing is written. A
server that refuses the run without a key (401, 403) is asked again with
``LOAD_PASSWORD`` as a bearer token (or in ``--key-header``), and the fixture records the
header. Preflight is the kit's default: one agent run through the dialect.
"""

from __future__ import annotations

import dataclasses

from engine.agent_plan import ANY_TOOL
from engine.samples import OK, Result
from engine.seam import Platform, SeedError, Seeding, SeedOption, SeedSetup
from inputs.fixture import PASSWORD_ENV, Fixture
from workloads.ag_ui.dialect import AGUI, NOT_OFFERED, NOT_STREAMED, OFFERS
from workloads.ag_ui.wire import DEFAULT_KEY_HEADER, DEFAULT_PATH, AGUISeeded
from workloads.one_arrival import signed_setup
from workloads.seed import wait_for
from workloads.setup_client import ANY_STATUS, SetupClient

NAME = "ag-ui"
# Where `make agno` serves the demo's AG-UI agent (at /agui).
DEFAULT_API_URL = "http://127.0.0.1:7777"
STARTED_BY = "make agno, whose agent answers AG-UI at /agui"


def make(setup: SeedSetup) -> AGUISeeded:
    """The agent at ``--path`` (or the default), found to answer a run; SeedError in one line
    when it does not, or wants a key the run does not have."""
    given = str(setup.own.get("path") or DEFAULT_PATH)
    path = given if given.startswith("/") else f"/{given}"
    where = f"POST {setup.api_url.rstrip('/')}{path}"
    with SetupClient(setup.api_url) as client:
        # Anything answering the path (agno's 405 to a GET) says the server is up.
        wait_for(
            lambda: client.request("GET", path, expect=ANY_STATUS, auth=False),
            f"the AG-UI server at {setup.api_url}",
            setup.wait_s,
            STARTED_BY,
        )
    asked = str(setup.own.get("key_header") or "")
    if asked and not setup.secret:
        raise SeedError(f"--key-header {asked}: export {PASSWORD_ENV} with the agent's key")
    own = AGUISeeded(path=path, key_header=asked)
    ran = _one_run(setup, own)
    if ran.status in (401, 403) and not asked and setup.secret:
        own = dataclasses.replace(own, key_header=DEFAULT_KEY_HEADER)
        ran = _one_run(setup, own)
    if ran.status in (401, 403):
        if not own.key_header:
            raise SeedError(
                f"{where} wants a key (HTTP {ran.status}): export {PASSWORD_ENV} with the "
                "agent's key, and --key-header if it is not Authorization: Bearer"
            )
        raise SeedError(
            f"{where} refused the key in {own.key_header} (HTTP {ran.status}): export "
            f"{PASSWORD_ENV} with the agent's key, and --key-header if it goes in another header"
        )
    if ran.outcome != OK:
        raise SeedError(_not_served(where, ran, setup.stub_url))
    print(f"seed: ag-ui {subject(own)}")
    return own


def _one_run(setup: SeedSetup, own: AGUISeeded) -> Result:
    """One agent run through the run's own dialect, signed in as the run will be."""
    fixture = Fixture(
        api_url=setup.api_url.rstrip("/"),
        stub_url=setup.stub_url.rstrip("/"),
        platform=NAME,
        seeded=dataclasses.asdict(own),
    )
    secret = setup.secret if own.key_header else ""
    fix = "pass the right --api-url"
    with signed_setup(PLATFORM, fixture, setup.email, secret, purpose="seed", fix=fix) as (
        reached,
        _dialect,
    ):
        return reached.one("agent_run")


def _not_served(where: str, ran: Result, stub_url: str) -> str:
    """Why a run did not end ok, with the fix: the URL is not an AG-UI agent's (no answer, a
    refusal, not an event stream), or it is and its run failed."""
    if ran.status == 200 and not ran.detail.startswith(NOT_STREAMED):
        return (
            f"a run of the agent at {where} ended {ran.outcome}: {ran.detail}; check that the "
            f"agent reaches its model (the stub at {stub_url}) and passes it the user's message"
        )
    return (
        f"{where} does not answer AG-UI ({ran.detail or ran.outcome}): give the server's URL "
        "with --api-url and the agent's path under it with --path"
    )


def subject(own: AGUISeeded) -> str:
    """What serves the work, in preflight's and the seed's words."""
    key = f"key in {own.key_header}" if own.key_header else "no key"
    return f"AG-UI agent at {own.path} ({key})"


PLATFORM = Platform(
    name=NAME,
    dialect=AGUI,
    seeded=AGUISeeded,
    offers=OFFERS,
    not_offered=NOT_OFFERED,
    seeding=Seeding(
        make,
        DEFAULT_API_URL,
        options=(
            SeedOption(
                "--path",
                f"the agent's path under --api-url (default {DEFAULT_PATH}, agno's; "
                "ag-ui-langgraph's is what its app gave add_langgraph_fastapi_endpoint)",
            ),
            SeedOption(
                "--key-header",
                "the header the agent's key goes in (default Authorization: Bearer, where the "
                f"agent refuses a run without one; the key from {PASSWORD_ENV})",
            ),
        ),
        stub_help="the stub as the agent's server reaches it, for the record",
    ),
    tool=ANY_TOOL,
    subject=subject,
    started_by=STARTED_BY,
)
