"""The LangGraph Agent Server setup client (seed, preflight, follow-up): SetupClient spoken its way.

What differs from the shared plumbing (workloads/setup_client.py): paths sit at
the API's root, and the key travels in ``x-api-key``, the header the official
SDK (``langgraph_sdk``) sends its key in; the kit passes LOAD_PASSWORD's value
and keeps it in memory only. Errors are Starlette's ``detail``, the base's default.
"""

from __future__ import annotations

from typing import Any

from inputs.fixture import in_path
from workloads.setup_client import RUN_TIMEOUT_S, SetupClient

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
    """One deployment, one key, one pooled session."""

    def __init__(self, api_url: str, key: str, **kwargs: Any) -> None:
        super().__init__(api_url, **kwargs)
        self._auth = {"x-api-key": key}

    def auth_headers(self) -> dict[str, str]:
        """The key, as the SDK sends it."""
        return dict(self._auth)

    def ok(self) -> dict:
        """GET /ok, the server's readiness (answered without the key)."""
        return self.request("GET", "/ok", auth=False).json()

    def assistants(self) -> list[dict]:
        """POST /assistants/search: the assistants this server has (the key is checked)."""
        return self.request("POST", "/assistants/search", json={"limit": 100}).json()

    def stored_keys(self, namespace: str) -> set[str]:
        """The keys of the items under ``namespace`` (a search without a query: no embedding)."""
        body = {"namespace_prefix": [namespace], "limit": PAGE_LIMIT}
        items = self.request("POST", "/store/items/search", json=body).json().get("items", [])
        return {item.get("key", "") for item in items}

    def put_text(self, namespace: str, key: str, text: str) -> None:
        """PUT /store/items: store (and, with an index, embed) one text; answers 204."""
        body = {"namespace": [namespace], "key": key, "value": {"text": text}}
        self.request("PUT", "/store/items", json=body, expect=(204,))

    def search(self, namespace: str, query: str, limit: int = 4) -> list[dict]:
        """POST /store/items/search with a query: the store's semantic search."""
        body = {"namespace_prefix": [namespace], "query": query, "limit": limit}
        return self.request("POST", "/store/items/search", json=body).json().get("items", [])

    def wait_run(self, prompt: str) -> tuple[dict, str]:
        """POST /runs/wait: a stateless run, waited for; its final values and its run path
        (``Content-Location``)."""
        body = {"assistant_id": GRAPH_ID, "input": run_input(prompt)}
        resp = self.request("POST", "/runs/wait", json=body, timeout=RUN_TIMEOUT_S)
        return resp.json(), resp.headers.get("content-location", "")

    def background_run(self, thread_id: str, prompt: str) -> dict:
        """POST /threads/{id}/runs creating the thread: the run, accepted (``pending``)."""
        body = {"assistant_id": GRAPH_ID, "input": run_input(prompt), "if_not_exists": "create"}
        return self.request("POST", f"/threads/{in_path(thread_id)}/runs", json=body).json()

    def run(self, thread_id: str, run_id: str) -> dict | None:
        """GET /threads/{id}/runs/{run_id}: the run, None when the server has no such run."""
        resp = self.request(
            "GET", f"/threads/{in_path(thread_id)}/runs/{in_path(run_id)}", expect=(200, 404)
        )
        return resp.json() if resp.status_code == 200 else None

    def thread_error(self, thread_id: str) -> str:
        """The thread's ``error`` (why its last run failed, in the server's words), or ""."""
        error = self.request("GET", f"/threads/{in_path(thread_id)}").json().get("error")
        if isinstance(error, dict):
            return str(error.get("message") or error.get("error") or "")
        return str(error or "")
