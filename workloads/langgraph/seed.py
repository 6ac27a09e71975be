"""``python -m workloads.langgraph.seed``: the fixture for an Agent Server, through its API.

A LangGraph deployment defines its graphs in code (platforms/langgraph/graph.py),
not over the API, so seeding checks that the graph's assistant is served and
fills the store's semantic index the way an application would: each synthetic
document one item under the kit's namespace, embedded as the put answers. It is
idempotent by key: a document already stored is not written again. Writes
fixture.json: ids, names and URLs only, no key.
"""

from __future__ import annotations

import sys

from inputs.fixture import Fixture
from workloads.corpus import document_name, document_text
from workloads.langgraph.client import GRAPH_ID, NAMESPACE, LangGraphClient
from workloads.langgraph.fixture import LangGraphSeeded
from workloads.seed import SeedError, SeedOptions, seed_command, seeded_fixture, wait_for_api
from workloads.setup_client import APIError, APIUnreachable

PLATFORM = "langgraph"
DEFAULT_API_URL = "http://127.0.0.1:8123"


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


def seed(options: SeedOptions, key: str) -> Fixture:
    """Check the graph is served, fill the store, and return the fixture; SeedError if not."""
    api_url, stub_url, documents = options.api_url, options.stub_url, options.documents
    with LangGraphClient(api_url, key) as client:
        wait_for_api(client.ok, api_url, options.wait_s, "make langgraph")
        try:
            graphs = {a.get("graph_id") for a in client.assistants()}
        except APIUnreachable as exc:
            raise SeedError(
                f"the Agent Server at {api_url} does not answer ({exc}): start it "
                "(make langgraph) or pass --api-url"
            ) from None
        except APIError as exc:
            raise SeedError(
                f"{exc}: export LOAD_PASSWORD with the server's key (LOADKIT_API_KEY)"
            ) from None
        if GRAPH_ID not in graphs:
            raise SeedError(
                f"graph {GRAPH_ID!r} is not served at {api_url} (found "
                f"{sorted(graphs, key=str)}): run platforms/langgraph (make langgraph), which "
                "defines it"
            )
        stored = fill_store(client, documents)
    print(f"seed: langgraph graph {GRAPH_ID}; store namespace {NAMESPACE!r} ({stored} stored)")
    return seeded_fixture(
        api_url, stub_url, PLATFORM, LangGraphSeeded(GRAPH_ID, NAMESPACE, documents)
    )


main = seed_command(
    platform=PLATFORM,
    description="Fill a LangGraph Agent Server's store and write the fixture (key from "
    "LOAD_PASSWORD).",
    api_url=DEFAULT_API_URL,
    stub_help="the stub as the server reaches it, for the record",
    seed=seed,
)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
