"""Preflight for agno: refuse, before any load, an AgentOS that cannot do the work.

Each check is one real request of the kind the run will make: the key is
accepted, the agent is served, a search finds the seeded documents, a run
completes against the model, an upload is processed to ``completed``, and a
signed WhatsApp delivery is accepted. Every refusal is one line with the fix.
The webhook is the exception, as for AgenticOS: without it the run goes ahead
and reports ``trigger_fire`` as skipped.
"""

from __future__ import annotations

import json
import sys
import time
import uuid

from engine.seam import PreflightError, PreflightResult
from inputs.fixture import Fixture, webhook_secret
from workloads.agno.client import AgnoClient
from workloads.agno.fixture import seeded
from workloads.agno.seed import DONE, follow
from workloads.corpus import RUN_PROMPT, SEARCH_QUERY
from workloads.preflight import (
    ALWAYS,
    Probe,
    Skip,
    checked,
    completed,
    preflight_main,
    run_probe,
    search_probe,
)
from workloads.setup_client import APIError, APIUnreachable

# An upload must be processed within this long, or the run's ingest would only measure a queue.
UPLOAD_WAIT_S = 60.0


def _check_api(client: AgnoClient, fixture: Fixture) -> None:
    own = seeded(fixture)
    try:
        client.health()
    except (APIUnreachable, APIError) as exc:
        raise PreflightError(
            f"AgentOS at {fixture.api_url} does not answer health ({exc}): start it (make agno) "
            "or seed against the right --api-url"
        ) from None
    try:
        agents = {a.get("id") for a in client.agents()}
    except APIError as exc:
        raise PreflightError(
            f"AgentOS refused the key (HTTP {exc.status}): export LOAD_PASSWORD with the "
            "server's OS_SECURITY_KEY"
        ) from None
    if own.agent_id not in agents:
        raise PreflightError(
            f"agent {own.agent_id} from the fixture is not served here: run platforms/agno "
            "(make agno) and seed it (make seed PLATFORM=agno)"
        )


def _check_search(client: AgnoClient, fixture: Fixture) -> int:
    own = seeded(fixture)
    try:
        results = client.search(SEARCH_QUERY)
    except APIError as exc:
        raise PreflightError(
            f"knowledge search failed (HTTP {exc.status}: {exc.message}): AgentOS cannot embed "
            f"the query; start the stub at {fixture.stub_url} where AgentOS reaches it"
        ) from None
    if not results:
        raise PreflightError(
            f"knowledge {own.collection_name!r} is empty (search found nothing): run the seed "
            "(make seed PLATFORM=agno)"
        )
    return len(results)


def _check_run(client: AgnoClient, fixture: Fixture) -> str:
    own = seeded(fixture)
    try:
        run = client.run_agent(own.agent_id, RUN_PROMPT)
    except APIError as exc:
        raise PreflightError(
            f"agent run failed (HTTP {exc.status}: {exc.message}): AgentOS cannot use the model "
            f"at {fixture.stub_url}; start the stub where AgentOS reaches it"
        ) from None
    if str(run.get("status", "")).upper() != "COMPLETED":
        raise PreflightError(
            f"agent run {run.get('run_id')} ended {run.get('status')!r}, not COMPLETED: check "
            f"the stub at {fixture.stub_url}"
        )
    return str(run.get("run_id"))


def _check_upload(client: AgnoClient) -> str:
    began = time.monotonic()
    name = f"loadkit-preflight-{uuid.uuid4()}.txt"
    content_id = client.upload_text(name, f"agent-loadkit preflight upload {name}.\n")
    status, message = follow(client, content_id, began + UPLOAD_WAIT_S)
    if status != DONE:
        raise PreflightError(
            f"an upload ended {status!r} after {time.monotonic() - began:.0f} s "
            f"({message or 'no message'}): AgentOS cannot embed its content; check the stub"
        )
    return completed("an upload", began)


def _check_webhook(client: AgnoClient, fixture: Fixture, password: str) -> str:
    """Nothing to add when a signed delivery is accepted; else Skip, with why trigger_fire
    will be skipped."""
    own = seeded(fixture)
    prefix = own.whatsapp_prefix
    body = json.dumps({"object": "whatsapp_business_account", "entry": []}).encode()
    resp = client.fire_whatsapp(prefix, body, webhook_secret(password, own.agent_id))
    if resp.status_code in (401, 404):
        # The interface takes no key, so AgentOS's auth answering 401 means no route there.
        raise Skip(
            f"no WhatsApp interface at {prefix}/webhook (HTTP {resp.status_code}); mount "
            "agno's Whatsapp interface (platforms/agno does)"
        )
    if resp.status_code == 403:
        raise Skip(
            "the WhatsApp interface refused the signature (HTTP 403): its WHATSAPP_APP_SECRET is "
            "not the one derived from LOAD_PASSWORD (CONTRACT.md)"
        )
    if resp.status_code != 200:
        raise Skip(f"a signed WhatsApp delivery answered HTTP {resp.status_code}, not 200")
    return ""


def run_preflight(
    fixture: Fixture, email: str, password: str, offered: frozenset[str] = ALWAYS
) -> PreflightResult:
    """Check the AgentOS can do the workloads the run ``offered``; PreflightError (one line)
    if not. Each probe is made only for a workload that needs it."""
    del email  # AgentOS has no users to sign in as: the key is the credential.
    probes: list[Probe[AgnoClient]] = [
        search_probe(lambda client: _check_search(client, fixture)),
        run_probe(lambda client: _check_run(client, fixture)),
        Probe(frozenset({"ingest"}), _check_upload),
        Probe(
            frozenset({"trigger_fire"}),
            lambda client: _check_webhook(client, fixture, password),
            optional=True,
        ),
    ]
    return checked(
        fixture.api_url,
        offered,
        AgnoClient(fixture.api_url, password),
        reach=lambda client: _check_api(client, fixture),
        subject=f"agent {seeded(fixture).agent_id} served",
        probes=probes,
        who="AgentOS",
        fix="run the seed against this AgentOS",
    )


def main(argv: list[str]) -> int:
    """Check the fixture's AgentOS from the shell (workloads/preflight.py says how)."""
    return preflight_main(
        argv,
        run_preflight,
        prog="python -m workloads.agno.preflight",
        description="Refuse an AgentOS that cannot do the run's work (key from LOAD_PASSWORD).",
        email=False,
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
