"""What preflight checks on LangGraph beyond the kit's reach and key check (workloads/preflight.py).

Each check is one real request of the kind the run will make: the graph is served, the
store's semantic search finds the seeded documents (scored: a store without an index would
only filter), a waited run ends with the model's answer (one agent_run through the
dialect), and a background run is accepted and followed to ``success``. Every refusal is
one line with the fix.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from engine.seam import PreflightError, Probe, Setup
from workloads.corpus import RUN_PROMPT, SEARCH_QUERY
from workloads.langgraph.client import LangGraphClient
from workloads.langgraph.seed import LangGraphSeeded
from workloads.preflight import ALWAYS, RUN, completed, search_probe, served_probe
from workloads.setup_client import APIError

# A background run must end within this long, or the run's trigger_fire would only measure
# a queue; polled every POLL_S.
BACKGROUND_WAIT_S = 60.0
POLL_S = 0.25


def _check_graph(client: LangGraphClient, own: LangGraphSeeded) -> str:
    if own.graph_id not in {a.graph_id for a in client.assistants()}:
        raise PreflightError(
            f"graph {own.graph_id} from the fixture is not served here: run "
            "platforms/langgraph (make langgraph) and seed it (loadkit seed --platform langgraph)"
        )
    return ""


def _check_search(client: LangGraphClient, setup: Setup[LangGraphSeeded]) -> int:
    own = setup.seeded
    try:
        items = client.search(own.namespace, SEARCH_QUERY)
    except APIError as exc:
        raise PreflightError(
            f"store search failed (HTTP {exc.status}: {exc.message}): the server cannot embed "
            f"the query; start the stub at {setup.fixture.stub_url} where the server reaches it"
        ) from None
    if not items:
        raise PreflightError(
            f"store namespace {own.namespace!r} is empty (search found nothing): run "
            "the seed (loadkit seed --platform langgraph)"
        )
    if any(item.score is None for item in items):
        raise PreflightError(
            "the store has no semantic index (search results carry no score): configure "
            "store.index (platforms/langgraph does), or rag_query measures a filter, not retrieval"
        )
    return len(items)


def _check_background(client: LangGraphClient) -> str:
    began = time.monotonic()
    thread_id = str(uuid.uuid4())
    run = client.background_run(thread_id, RUN_PROMPT)
    status = run.status
    while status in ("pending", "running") and time.monotonic() < began + BACKGROUND_WAIT_S:
        time.sleep(POLL_S)
        again = client.run(thread_id, run.run_id)
        status = again.status if again is not None else "gone"
    if status != "success":
        why = client.thread_error(thread_id) if status == "error" else ""
        raise PreflightError(
            f"a background run ended {status!r} after {time.monotonic() - began:.0f} s"
            f"{f' ({why})' if why else ''}: check the stub and --n-jobs-per-worker"
        )
    return completed("a background run", began)


@contextmanager
def probes(setup: Setup[LangGraphSeeded]) -> Iterator[list[Probe]]:
    """The probes, on one setup client signed in as the run is."""
    with LangGraphClient(setup.fixture.api_url, setup.auth) as client:
        yield [
            Probe(ALWAYS, lambda: _check_graph(client, setup.seeded)),
            search_probe(lambda: _check_search(client, setup)),
            served_probe(setup, "agent_run", RUN),
            # trigger_fire is a background run here: one followed to success makes it ready.
            Probe(frozenset({"trigger_fire"}), lambda: _check_background(client), optional=True),
        ]
