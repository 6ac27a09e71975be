"""What preflight checks on agno beyond the kit's reach and key check (workloads/preflight.py).

Each check is one real request of the kind the run will make: the agent is served, a
search finds the seeded documents, a run completes against the model (one agent_run
through the dialect), an upload is processed to ``completed``, and a signed WhatsApp
delivery is accepted (else trigger_fire is skipped, with why). Every refusal is one line
with the fix.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from engine.seam import PreflightError, Probe, Setup, Skip
from inputs.fixture import webhook_secret
from workloads.agno.client import AgnoClient
from workloads.agno.seed import DONE, AgnoSeeded, follow
from workloads.corpus import SEARCH_QUERY
from workloads.preflight import ALWAYS, RUN, completed, search_probe, served_probe
from workloads.setup_client import APIError

# An upload must be processed within this long, or the run's ingest would only measure a queue.
UPLOAD_WAIT_S = 60.0


def _check_agent(client: AgnoClient, own: AgnoSeeded) -> str:
    if own.agent_id not in {a.id for a in client.agents()}:
        raise PreflightError(
            f"agent {own.agent_id} from the fixture is not served here: run platforms/agno "
            "(make agno) and seed it (loadkit seed --platform agno)"
        )
    return ""


def _check_search(client: AgnoClient, setup: Setup[AgnoSeeded]) -> int:
    try:
        results = client.search(SEARCH_QUERY)
    except APIError as exc:
        raise PreflightError(
            f"knowledge search failed (HTTP {exc.status}: {exc.message}): AgentOS cannot embed "
            f"the query; start the stub at {setup.fixture.stub_url} where AgentOS reaches it"
        ) from None
    if not results:
        raise PreflightError(
            f"knowledge {setup.seeded.collection_name!r} is empty (search found nothing): run "
            "the seed (loadkit seed --platform agno)"
        )
    return len(results)


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


def _check_webhook(client: AgnoClient, setup: Setup[AgnoSeeded]) -> str:
    """Nothing to add when a signed delivery is accepted; else Skip, with why trigger_fire
    will be skipped."""
    own = setup.seeded
    prefix = own.whatsapp_prefix
    body = json.dumps({"object": "whatsapp_business_account", "entry": []}).encode()
    resp = client.fire_whatsapp(prefix, body, webhook_secret(setup.secret, own.agent_id))
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


@contextmanager
def probes(setup: Setup[AgnoSeeded]) -> Iterator[list[Probe]]:
    """The probes, on one setup client signed in as the run is."""
    with AgnoClient(setup.fixture.api_url, setup.auth) as client:
        yield [
            Probe(ALWAYS, lambda: _check_agent(client, setup.seeded)),
            search_probe(lambda: _check_search(client, setup)),
            served_probe(setup, "agent_run", RUN),
            Probe(frozenset({"ingest"}), lambda: _check_upload(client)),
            Probe(
                frozenset({"trigger_fire"}), lambda: _check_webhook(client, setup), optional=True
            ),
        ]
