"""What preflight checks on AgenticOS beyond the kit's reach and sign-in (workloads/preflight.py).

A run against a platform with no published agent, an empty collection or a
model it cannot reach would measure the breakage, not the platform. Each check is
one real request of the kind the run will make; each refusal is one line naming
what is wrong and the command that fixes it. The trigger is the exception:
without it the run still goes ahead and reports ``trigger_fire`` as skipped, so
its state is returned, not raised.

A fault-injection run points the platform at a stub that refuses a share of
model calls on purpose, so one refused probe is not a broken deployment: the
probes that reach the model are tried a few times, and a refusal that carries
the stub's fault marker is named as an injected fault, not as a missing stub.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from engine.seam import PreflightError, Probe, Setup, Skip
from inputs.fixture import in_path, webhook_secret
from workloads.agenticos.client import AgenticOSClient
from workloads.agenticos.login import ORG_HEADER
from workloads.agenticos.seed import AgenticOSSeeded
from workloads.corpus import RUN_PROMPT, SEARCH_QUERY
from workloads.preflight import ALWAYS, run_probe, search_probe
from workloads.setup_client import APIError, APIUnreachable

# Tries of a probe that reaches the model: at a 20% injected fault rate, five
# refusals in a row happen once in 3,000 preflights.
PROBE_ATTEMPTS = 5
# What a retried probe returns.
T = TypeVar("T")
# Text in every fault the stub injects (stub/app.py ERROR_MESSAGE and
# RATE_LIMIT_MESSAGE); a platform that passes its provider's error on carries it.
INJECTED_FAULT_MARKER = "stub model injected"


def _check_agent(client: AgenticOSClient, own: AgenticOSSeeded) -> str:
    orgs = {org.get("id") for org in client.get("/orgs").get("items", [])}
    if own.org_id not in orgs:
        raise PreflightError(
            f"organisation {own.org_id} from the fixture is not one of this user's: "
            "run make seed against this deployment"
        )
    client.org_id = own.org_id
    try:
        agent = client.get(f"/agents/{in_path(own.agent_id)}")
    except APIError as exc:
        if exc.status == 404:
            raise PreflightError(
                f"agent {own.agent_id} from the fixture does not exist here: run make seed"
            ) from None
        raise
    if agent.get("status") != "published":
        raise PreflightError(
            f"agent {own.agent_id} is {agent.get('status')!r}, not published: run make seed "
            "(it publishes the agent)"
        )
    return ""


def _injected(message: str) -> bool:
    return INJECTED_FAULT_MARKER in message


def _fault_hint(what: str, message: str) -> str:
    """The refusal when every attempt drew a fault the stub injected on purpose."""
    return (
        f"{what} failed on all {PROBE_ATTEMPTS} attempts with a fault the stub injected "
        f"({message}): the stub runs, but its fault rates (--error-rate, --rate-limit-rate) "
        "refuse too much for preflight; lower them or pick another --seed"
    )


def _retried(call: Callable[[], T], attempts: int = PROBE_ATTEMPTS) -> T:
    """``call()``, tried again on a server-side refusal (5xx) up to ``attempts`` times.

    Only 5xx is retried: a 4xx (not found, rate limited) is the platform's answer,
    and asking again would not change it.
    """
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except APIError as exc:
            if exc.status < 500 or attempt == attempts:
                raise
    raise AssertionError("unreachable: the last attempt returns or raises")


def _check_search(client: AgenticOSClient, own: AgenticOSSeeded) -> int:
    try:
        results = _retried(lambda: client.search(own.collection_name, SEARCH_QUERY))
    except APIError as exc:
        if exc.status == 404:
            raise PreflightError(
                f"collection {own.collection_name!r} does not exist: run make seed"
            ) from None
        if _injected(exc.message):
            raise PreflightError(
                _fault_hint("search (one embedding)", f"HTTP {exc.status}")
            ) from None
        raise PreflightError(
            f"search on {own.collection_name!r} failed (HTTP {exc.status}: {exc.message}): "
            "the platform cannot embed the query; start the stub (make stub) where the "
            "platform can reach it"
        ) from None
    if not results:
        raise PreflightError(
            f"collection {own.collection_name!r} is empty (search found nothing): run "
            "make seed; if it stays empty the platform cannot reach its embedder (the stub)"
        )
    return len(results)


def _check_run(client: AgenticOSClient, own: AgenticOSSeeded, stub_url: str) -> str:
    try:
        run = _retried(lambda: client.run_agent(own.agent_id, RUN_PROMPT))
    except APIUnreachable as exc:
        raise PreflightError(f"agent run got no answer ({exc}): is the platform up?") from None
    except APIError as exc:
        if exc.status == 429:
            retry = exc.headers.get("Retry-After", "60")
            raise PreflightError(
                f"agent run refused by the run rate limit (HTTP 429): wait {retry} s, or raise "
                "RATE_LIMIT_RUN_PER_MINUTE on the platform"
            ) from None
        if _injected(exc.message):
            raise PreflightError(_fault_hint("agent run", f"HTTP {exc.status}")) from None
        raise PreflightError(
            f"agent run failed (HTTP {exc.status}: {exc.message}): the platform cannot use the "
            f"model at {stub_url}; start the stub (make stub) at an address the "
            "platform reaches, or re-seed with --stub-url (make seed)"
        ) from None
    if run.status != "completed":
        raise PreflightError(
            f"agent run {run.run_id} ended {run.status!r}, not completed: "
            f"check the stub at {stub_url} (make stub)"
        )
    return run.run_id


def _check_trigger(client: AgenticOSClient, own: AgenticOSSeeded, password: str) -> str:
    """Nothing to add when a signed delivery is accepted; else Skip, with why trigger_fire
    will be skipped."""
    if not own.trigger_id:
        raise Skip("the fixture has no trigger (seeding could not create one); run make seed")
    triggers = {t.get("id") for t in client.list_all(f"/agents/{in_path(own.agent_id)}/triggers")}
    if own.trigger_id not in triggers:
        raise Skip(f"trigger {own.trigger_id} no longer exists; run make seed to recreate it")
    body = json.dumps({"event": "agent-loadkit.preflight", "id": str(uuid.uuid4())}).encode()
    resp = client.fire_webhook(
        own.trigger_source,
        own.trigger_id,
        body,
        webhook_secret(password, own.agent_id),
        delivery_id=f"preflight-{uuid.uuid4()}",
    )
    if resp.status_code == 403:
        raise Skip(
            "the trigger refused the signature (HTTP 403): the password differs from the one "
            "it was seeded with; run make seed"
        )
    if resp.status_code != 202:
        raise Skip(f"a signed delivery answered HTTP {resp.status_code}, not 202")
    return ""


@contextmanager
def probes(setup: Setup[AgenticOSSeeded]) -> Iterator[list[Probe]]:
    """The probes, on one setup client signed in as the run is; it acts in the fixture's
    organisation once the first probe has found the user in it."""
    own, stub_url = setup.seeded, setup.fixture.stub_url
    user = {name: value for name, value in setup.auth.items() if name != ORG_HEADER}
    with AgenticOSClient(setup.fixture.api_url, user) as client:
        yield [
            Probe(ALWAYS, lambda: _check_agent(client, own)),
            search_probe(lambda: _check_search(client, own)),
            run_probe(lambda: _check_run(client, own, stub_url)),
            Probe(
                frozenset({"trigger_fire"}),
                lambda: _check_trigger(client, own, setup.secret),
                optional=True,
            ),
        ]
