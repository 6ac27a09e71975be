"""The LangGraph Agent Server setup client (seed, preflight, follow-up): SetupClient spoken its way.

What differs from the shared plumbing (workloads/setup_client.py): nothing but
its requests; paths sit at the API's root, the key is in the headers the kit's
sign-in made (``x-api-key``, the dialect's), and errors are Starlette's
``detail``, the base's default.
"""

from __future__ import annotations

from inputs.fixture import in_path
from workloads.langgraph.answers import (
    ASSISTANTS,
    RUN,
    SEARCH_PAGE,
    Assistant,
    Item,
    Run,
)
from workloads.setup_client import SetupClient

# The store namespace the seed fills and the searches read: the kit's, by its prefix.
NAMESPACE = "loadkit-docs"
# The graph (and the system assistant of the same name) platforms/langgraph serves.
GRAPH_ID = "loadkit-agent"
# Items the seed lists at once when it looks for documents already there.
PAGE_LIMIT = 1000


def run_input(prompt: str) -> dict:
    """A run's input for the graph: the conversation as its one user message."""
    return {"messages": [{"role": "user", "content": prompt}]}


class LangGraphClient(SetupClient):
    """One deployment, signed in, one pooled session."""

    def assistants(self) -> list[Assistant]:
        """POST /assistants/search: the assistants this server has."""
        resp = self.request("POST", "/assistants/search", json={"limit": 100})
        return self.typed(resp, ASSISTANTS)

    def stored_keys(self, namespace: str) -> set[str]:
        """The keys of the items under ``namespace`` (a search without a query: no embedding)."""
        body = {"namespace_prefix": [namespace], "limit": PAGE_LIMIT}
        items = self.request("POST", "/store/items/search", json=body).json().get("items", [])
        return {item.get("key", "") for item in items}

    def put_text(self, namespace: str, key: str, text: str) -> None:
        """PUT /store/items: store (and, with an index, embed) one text; answers 204."""
        body = {"namespace": [namespace], "key": key, "value": {"text": text}}
        self.request("PUT", "/store/items", json=body, expect=(204,))

    def search(self, namespace: str, query: str, limit: int = 4) -> list[Item]:
        """POST /store/items/search with a query: the store's semantic search."""
        body = {"namespace_prefix": [namespace], "query": query, "limit": limit}
        return self.typed(self.request("POST", "/store/items/search", json=body), SEARCH_PAGE).items

    def background_run(self, thread_id: str, prompt: str) -> Run:
        """POST /threads/{id}/runs creating the thread: the run, accepted (``pending``)."""
        body = {"assistant_id": GRAPH_ID, "input": run_input(prompt), "if_not_exists": "create"}
        resp = self.request("POST", f"/threads/{in_path(thread_id)}/runs", json=body)
        return self.typed(resp, RUN)

    def run(self, thread_id: str, run_id: str) -> Run | None:
        """GET /threads/{id}/runs/{run_id}: the run, None when the server has no such run."""
        resp = self.request(
            "GET", f"/threads/{in_path(thread_id)}/runs/{in_path(run_id)}", expect=(200, 404)
        )
        return self.typed(resp, RUN) if resp.status_code == 200 else None

    def thread_error(self, thread_id: str) -> str:
        """The thread's ``error`` (why its last run failed, in the server's words), or ""."""
        error = self.request("GET", f"/threads/{in_path(thread_id)}").json().get("error")
        if isinstance(error, dict):
            return str(error.get("message") or error.get("error") or "")
        return str(error or "")
