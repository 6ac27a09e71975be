"""A small synchronous client for agno's AgentOS API, for setup work: seeding and preflight.

Not the load path (that is the dialect): this one favours clear failures over
speed. AgentOS authenticates with one bearer security key (``OS_SECURITY_KEY``
on the server); the kit passes LOAD_PASSWORD's value and keeps it in memory
only. Every refusal becomes an APIError printing method, path, status and
the server's own ``detail``.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import requests

# Seconds for an ordinary API call; runs wait for the model, so they get longer.
DEFAULT_TIMEOUT_S = 30.0
RUN_TIMEOUT_S = 120.0
# The list page AgentOS serves by default and the most the seed reads at once.
PAGE_LIMIT = 100


class APIUnreachable(Exception):
    """Nothing answered at the API's address (refused, timed out, DNS)."""


class APIError(Exception):
    """The API answered with a status the caller did not expect."""

    def __init__(self, method: str, path: str, status: int, message: str) -> None:
        super().__init__(f"{method} {path} answered HTTP {status}: {message}")
        self.status = status
        self.message = message


def _message(resp: requests.Response) -> str:
    """FastAPI's ``detail``, else the start of the body."""
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:200].strip() or resp.reason
    if isinstance(body, dict) and "detail" in body:
        return str(body["detail"])[:200]
    return str(body)[:200]


def hub_signature(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value Meta sends and agno checks: ``sha256=<hex HMAC>``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class AgnoClient:
    """One deployment, one security key, one pooled session."""

    def __init__(self, api_url: str, security_key: str, timeout: float = DEFAULT_TIMEOUT_S):
        self.api_url = api_url.rstrip("/")
        self.timeout = timeout
        self._http = requests.Session()
        self._auth = {"Authorization": f"Bearer {security_key}"}

    def close(self) -> None:
        """Drop pooled connections."""
        self._http.close()

    def __enter__(self) -> AgnoClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        expect: tuple[int, ...] = (200, 201, 202, 204),
        timeout: float | None = None,
        auth: bool = True,
        **kwargs: Any,
    ) -> requests.Response:
        """Send one request; raise APIUnreachable or APIError unless the status is ``expect``ed."""
        headers = {**(self._auth if auth else {}), **(kwargs.pop("headers", None) or {})}
        try:
            resp = self._http.request(
                method,
                self.api_url + path,
                headers=headers,
                timeout=timeout or self.timeout,
                **kwargs,
            )
        except requests.RequestException as exc:
            raise APIUnreachable(f"{self.api_url}: {type(exc).__name__}") from exc
        if resp.status_code not in expect:
            raise APIError(method, path, resp.status_code, _message(resp))
        return resp

    def health(self) -> dict:
        """GET /health (AgentOS answers it without the key)."""
        return self.request("GET", "/health", auth=False).json()

    def agents(self) -> list[dict]:
        """GET /agents: the agents this AgentOS serves."""
        return self.request("GET", "/agents").json()

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
        body = self.request("GET", f"/knowledge/content/{content_id}/status").json()
        return body.get("status", ""), body.get("status_message") or ""

    def search(self, query: str, limit: int = 4) -> list[dict]:
        """POST /knowledge/search and return its results."""
        body = {"query": query, "max_results": limit}
        return self.request("POST", "/knowledge/search", json=body).json().get("data", [])

    def run_agent(self, agent_id: str, prompt: str) -> dict:
        """POST /agents/{id}/runs with stream=false: the whole run, waiting for the model."""
        form = {"message": prompt, "stream": "false"}
        resp = self.request("POST", f"/agents/{agent_id}/runs", data=form, timeout=RUN_TIMEOUT_S)
        return resp.json()

    def fire_whatsapp(self, prefix: str, body: bytes, secret: str) -> requests.Response:
        """One signed WhatsApp delivery; the response whatever its status (no key used)."""
        headers = {
            "Content-Type": "application/json",
            "X-Hub-Signature-256": hub_signature(secret, body),
        }
        return self.request(
            "POST",
            f"{prefix}/webhook",
            data=body,
            headers=headers,
            auth=False,
            expect=tuple(range(100, 600)),
        )
