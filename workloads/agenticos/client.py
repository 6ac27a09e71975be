"""The AgenticOS setup client (seed, preflight, follow-up): SetupClient spoken AgenticOS's way.

What differs from the shared plumbing (workloads/setup_client.py): the API is
rooted at /api/v1, a call carries the token from the kit's sign-in (login.py,
kept in memory only) and the organisation by header, and an error body says its
message in ``{"error": {"message"}}``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import requests

from inputs.fixture import in_path
from workloads.agenticos.answers import RUN_RESULT, SEARCH_RESULT, RunResult, SearchHit
from workloads.agenticos.login import API, LOGIN, ORG_HEADER
from workloads.setup_client import ANY_STATUS, RUN_TIMEOUT_S, SetupClient, signature

# The contract's largest page.
PAGE_LIMIT = 100


class AgenticOSClient(SetupClient):
    """One signed-in session against one deployment, in one organisation (``org_id``, once
    picked, goes with every call)."""

    prefix = API

    @property
    def org_id(self) -> str | None:
        return self.auth.get(ORG_HEADER)

    @org_id.setter
    def org_id(self, org_id: str) -> None:
        self.auth[ORG_HEADER] = org_id

    def error_words(self, body: object) -> str | None:
        """The contract's ``{"error": {"message"}}``, else FastAPI's ``detail``."""
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            return str(body["error"].get("message", ""))
        return super().error_words(body)

    def sign_in(self, email: str, password: str) -> None:
        """Sign in again (login.py), keeping the organisation: a follow-up that outlives the
        access token does."""
        self.auth.update(LOGIN.headers(self.send, None, email, password))

    def get(self, path: str, **params: Any) -> dict:
        """GET and decode JSON."""
        return self.request("GET", path, params=params).json()

    def post(self, path: str, body: dict | None = None, **kwargs: Any) -> dict:
        """POST a JSON body and decode the JSON answer (``{}`` for an empty one)."""
        resp = self.request("POST", path, json=body, **kwargs)
        return resp.json() if resp.content else {}

    def delete(self, path: str) -> None:
        """DELETE; a 404 counts as already gone."""
        self.request("DELETE", path, expect=(200, 202, 204, 404))

    def list_all(self, path: str, **params: Any) -> Iterator[dict]:
        """Every item of a ``{items, total}`` list, page by page (AgenticOS pages with ``skip``;
        a list it does not page answers everything at once, and ``total`` ends the loop)."""
        skip = 0
        while True:
            page = self.get(path, limit=PAGE_LIMIT, skip=skip, **params)
            items = page.get("items", [])
            yield from items
            skip += len(items)
            if not items or skip >= page.get("total", skip):
                return

    def run_agent(self, agent_id: str, prompt: str) -> RunResult:
        """POST /agents/{id}/run, waiting for the model like the API does."""
        path = f"/agents/{in_path(agent_id)}/run"
        resp = self.request("POST", path, json={"prompt": prompt}, timeout=RUN_TIMEOUT_S)
        return self.typed(resp, RUN_RESULT)

    def search(self, collection_name: str, query: str, limit: int = 4) -> list[SearchHit]:
        """POST /rag/search and return its results."""
        body = {"query": query, "collection_name": collection_name, "limit": limit}
        return self.typed(self.request("POST", "/rag/search", json=body), SEARCH_RESULT).results

    def upload(self, collection_name: str, filename: str, content: bytes) -> dict:
        """Upload one file into a collection (multipart field ``file``); answers 202."""
        files = {"file": (filename, content, "text/plain")}
        resp = self.request(
            "POST",
            f"/rag/collections/{in_path(collection_name)}/ingest",
            files=files,
            expect=(202,),
        )
        return resp.json()

    def fire_webhook(
        self, source: str, trigger_id: str, body: bytes, secret: str, delivery_id: str | None = None
    ) -> requests.Response:
        """One signed delivery; returns the response whatever its status (no sign-in used)."""
        headers = {"Content-Type": "application/json", "X-Signature-256": signature(secret, body)}
        if delivery_id:
            headers["X-Delivery-Id"] = delivery_id
        return self.request(
            "POST",
            f"/webhooks/triggers/{in_path(source)}/{in_path(trigger_id)}",
            data=body,
            headers=headers,
            auth=False,
            expect=ANY_STATUS,
        )
