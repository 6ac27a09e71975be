"""What seeding makes on LangGraph's Agent Server: the graph checked, the store filled.

A LangGraph deployment defines its graphs in code (platforms/langgraph/graph.py),
not over the API, so seeding checks that the graph's assistant is served and
fills the store's semantic index the way an application would: each synthetic
document one item under the kit's namespace, embedded as the put answers. It is
idempotent by key: a document already stored is not written again.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.seam import SeedError, SeedSetup
from workloads.corpus import document_name, document_text
from workloads.langgraph.client import GRAPH_ID, NAMESPACE, LangGraphClient
from workloads.setup_client import APIError

DEFAULT_API_URL = "http://127.0.0.1:8123"


@dataclass(frozen=True)
class LangGraphSeeded:
    """What the seed found or filled: names, never the key."""

    # The graph id, which is also its system assistant's name (runs pass it as assistant_id).
    graph_id: str
    # The store namespace holding the documents (searched by prefix).
    namespace: str
    documents: int


def fill_store(client: LangGraphClient, documents: int) -> int:
    """Store the documents not there yet; how many were new. A put answers once embedded."""
    present = client.stored_keys(NAMESPACE)
    missing = [i for i in range(documents) if document_name(i) not in present]
    for index in missing:
        try:
            client.put_text(NAMESPACE, document_name(index), document_text(index))
        except APIError as exc:
            raise SeedError(
                f"document {document_name(index)} was refused (HTTP {exc.status}: "
                f"{exc.message}): check that the server reaches its embedder (the stub), then "
                "run the seed again"
            ) from None
    return len(missing)


def make(setup: SeedSetup) -> LangGraphSeeded:
    """Check the graph is served and fill the store; SeedError if not."""
    with LangGraphClient(setup.api_url, setup.auth) as client:
        try:
            graphs = {a.graph_id for a in client.assistants()}
        except APIError as exc:
            raise SeedError(
                f"{exc}: export LOAD_PASSWORD with the server's key (LOADKIT_API_KEY)"
            ) from None
        if GRAPH_ID not in graphs:
            raise SeedError(
                f"graph {GRAPH_ID!r} is not served at {setup.api_url} (found "
                f"{sorted(graphs, key=str)}): run platforms/langgraph (make langgraph), which "
                "defines it"
            )
        stored = fill_store(client, setup.documents)
    print(f"seed: langgraph graph {GRAPH_ID}; store namespace {NAMESPACE!r} ({stored} stored)")
    return LangGraphSeeded(GRAPH_ID, NAMESPACE, setup.documents)
