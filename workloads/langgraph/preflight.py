"""Preflight for LangGraph: refuse, before any load, an Agent Server that cannot do the work.

Each check is one real request of the kind the run will make: the key is
accepted and the graph served, the store's semantic search finds the seeded
documents (scored: a store without an index would only filter), a waited run
ends with the model's answer, and a background run is accepted and followed to
``success``. Every refusal is one line with the fix.
"""

from __future__ import annotations

import sys
import time
import uuid

from engine.seam import PreflightError, PreflightResult
from inputs.fixture import Fixture
from workloads.corpus import RUN_PROMPT, SEARCH_QUERY
from workloads.langgraph.client import LangGraphClient
from workloads.langgraph.dialect import answered
from workloads.langgraph.fixture import seeded
from workloads.preflight import (
    ALWAYS,
    Probe,
    checked,
    completed,
    preflight_main,
    run_probe,
    search_probe,
)
from workloads.setup_client import APIError, APIUnreachable

# A background run must end within this long, or the run's trigger_fire would only measure
# a queue; polled every POLL_S.
BACKGROUND_WAIT_S = 60.0
POLL_S = 0.25


def _check_api(client: LangGraphClient, fixture: Fixture) -> None:
    own = seeded(fixture)
    try:
        client.ok()
    except (APIUnreachable, APIError) as exc:
        raise PreflightError(
            f"the Agent Server at {fixture.api_url} does not answer /ok ({exc}): start it "
            "(make langgraph) or seed against the right --api-url"
        ) from None
    try:
        graphs = {a.get("graph_id") for a in client.assistants()}
    except APIError as exc:
        raise PreflightError(
            f"the Agent Server refused the key (HTTP {exc.status}): export LOAD_PASSWORD with "
            "the server's key (LOADKIT_API_KEY)"
        ) from None
    if own.graph_id not in graphs:
        raise PreflightError(
            f"graph {own.graph_id} from the fixture is not served here: run "
            "platforms/langgraph (make langgraph) and seed it (make seed PLATFORM=langgraph)"
        )


def _check_search(client: LangGraphClient, fixture: Fixture) -> int:
    own = seeded(fixture)
    try:
        items = client.search(own.namespace, SEARCH_QUERY)
    except APIError as exc:
        raise PreflightError(
            f"store search failed (HTTP {exc.status}: {exc.message}): the server cannot embed "
            f"the query; start the stub at {fixture.stub_url} where the server reaches it"
        ) from None
    if not items:
        raise PreflightError(
            f"store namespace {own.namespace!r} is empty (search found nothing): run "
            "the seed (make seed PLATFORM=langgraph)"
        )
    if any(item.get("score") is None for item in items):
        raise PreflightError(
            "the store has no semantic index (search results carry no score): configure "
            "store.index (platforms/langgraph does), or rag_query measures a filter, not retrieval"
        )
    return len(items)


def _check_run(client: LangGraphClient, fixture: Fixture) -> str:
    try:
        values, where = client.wait_run(RUN_PROMPT)
    except APIError as exc:
        raise PreflightError(
            f"a waited run was refused (HTTP {exc.status}: {exc.message})"
        ) from None
    error = values.get("__error__") if isinstance(values, dict) else None
    if error is not None or not answered(values):
        why = (error or {}).get("message") if isinstance(error, dict) else None
        raise PreflightError(
            f"a waited run ended without the model's answer ({why or 'no AI message'}): the "
            f"server cannot use the model at {fixture.stub_url}; start the stub where it reaches it"
        )
    return where.rsplit("/", 1)[-1]


def _check_background(client: LangGraphClient) -> str:
    began = time.monotonic()
    thread_id = str(uuid.uuid4())
    run = client.background_run(thread_id, RUN_PROMPT)
    status = str(run.get("status"))
    while status in ("pending", "running") and time.monotonic() < began + BACKGROUND_WAIT_S:
        time.sleep(POLL_S)
        status = str((client.run(thread_id, run["run_id"]) or {}).get("status"))
    if status != "success":
        why = client.thread_error(thread_id) if status == "error" else ""
        raise PreflightError(
            f"a background run ended {status!r} after {time.monotonic() - began:.0f} s"
            f"{f' ({why})' if why else ''}: check the stub and --n-jobs-per-worker"
        )
    return completed("a background run", began)


def run_preflight(
    fixture: Fixture, email: str, password: str, offered: frozenset[str] = ALWAYS
) -> PreflightResult:
    """Check the server can do the workloads the run ``offered``; PreflightError (one line)
    if not. Each probe is made only for a workload that needs it."""
    del email  # the server has no users to sign in as: the key is the credential.
    probes: list[Probe[LangGraphClient]] = [
        search_probe(lambda client: _check_search(client, fixture)),
        run_probe(lambda client: _check_run(client, fixture)),
        # trigger_fire is a background run here: one followed to success makes it ready.
        Probe(frozenset({"trigger_fire"}), _check_background, optional=True),
    ]
    return checked(
        fixture.api_url,
        offered,
        LangGraphClient(fixture.api_url, password),
        reach=lambda client: _check_api(client, fixture),
        subject=f"agent {seeded(fixture).graph_id} served",
        probes=probes,
        who="the Agent Server",
        fix="run the seed against this server",
    )


def main(argv: list[str]) -> int:
    """Check the fixture's Agent Server from the shell (workloads/preflight.py says how)."""
    return preflight_main(
        argv,
        run_preflight,
        prog="python -m workloads.langgraph.preflight",
        description="Refuse a LangGraph Agent Server that cannot do the run's work (key from "
        "LOAD_PASSWORD).",
        email=False,
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
