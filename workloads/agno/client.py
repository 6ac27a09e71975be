"""The agno AgentOS setup client (seed, preflight, follow-up): SetupClient spoken agno's way.

What differs from the shared plumbing (workloads/setup_client.py): nothing but
its requests; paths sit at the API's root, the bearer security key is in the
headers the kit's sign-in made, and errors are FastAPI's ``detail``, the base's
default.
"""

from __future__ import annotations

import requests

from inputs.fixture import in_path
from workloads.agno.answers import AGENTS, SEARCH_PAGE, Agent, SearchHit
from workloads.setup_client import ANY_STATUS, SetupClient, signature

# The list page AgentOS serves by default and the most the seed reads at once.
PAGE_LIMIT = 100


class AgnoClient(SetupClient):
    """One deployment, signed in, one pooled session."""

    def agents(self) -> list[Agent]:
        """GET /agents: the agents this AgentOS serves."""
        return self.typed(self.request("GET", "/agents"), AGENTS)

    def content_names(self) -> dict[str, str]:
        """Name -> status of every content item in the knowledge base, page by page."""
        found: dict[str, str] = {}
        page = 1
        while True:
            body = self.request(
                "GET", "/knowledge/content", params={"limit": PAGE_LIMIT, "page": page}
            ).json()
            for item in body.get("data", []):
                found[item.get("name") or ""] = item.get("status") or ""
            if page >= int((body.get("meta") or {}).get("total_pages") or 0):
                return found
            page += 1

    def upload_text(self, name: str, text: str) -> str:
        """POST /knowledge/content as a text file; answers 202 with the content's id."""
        files = {"file": (name, text.encode(), "text/plain")}
        resp = self.request("POST", "/knowledge/content", files=files, expect=(202,))
        return resp.json()["id"]

    def content_status(self, content_id: str) -> tuple[str, str]:
        """GET /knowledge/content/{id}/status: (status, status_message)."""
        body = self.request("GET", f"/knowledge/content/{in_path(content_id)}/status").json()
        return body.get("status", ""), body.get("status_message") or ""

    def session_runs(self, session_id: str) -> list[dict] | None:
        """GET /sessions/{id}/runs?type=agent: the session's runs, None while agno has no such
        session (a WhatsApp session is written only when its run ends)."""
        resp = self.request(
            "GET",
            f"/sessions/{in_path(session_id)}/runs",
            params={"type": "agent"},
            expect=(200, 404),
        )
        return resp.json() if resp.status_code == 200 else None

    def search(self, query: str, limit: int = 4) -> list[SearchHit]:
        """POST /knowledge/search and return its results."""
        body = {"query": query, "max_results": limit}
        return self.typed(self.request("POST", "/knowledge/search", json=body), SEARCH_PAGE).data

    def fire_whatsapp(self, prefix: str, body: bytes, secret: str) -> requests.Response:
        """One signed WhatsApp delivery; the response whatever its status (no key used)."""
        headers = {
            "Content-Type": "application/json",
            "X-Hub-Signature-256": signature(secret, body),
        }
        return self.request(
            "POST",
            f"{prefix}/webhook",
            data=body,
            headers=headers,
            auth=False,
            expect=ANY_STATUS,
        )
