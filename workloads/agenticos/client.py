"""A small synchronous client for the AgenticOS API, for setup work: seeding and preflight.

Not the load path (that is the generator's dialect, on Locust's clients): this
one favours clear failures over speed. It signs in once and keeps the token in
memory only, picks the organisation by header, and turns every refusal into
an APIError that prints as one line with the method, path, status and the
server's own message.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator, Mapping
from typing import Any

import requests

API_PREFIX = "/api/v1"
# Seconds for an ordinary API call; runs wait for the model, so they get longer.
DEFAULT_TIMEOUT_S = 30.0
RUN_TIMEOUT_S = 120.0
# The contract's largest page.
PAGE_LIMIT = 100


class APIUnreachable(Exception):
    """Nothing answered at the API's address (refused, timed out, DNS)."""


class APIError(Exception):
    """The API answered with a status the caller did not expect."""

    def __init__(
        self, method: str, path: str, status: int, message: str, headers: Mapping[str, str]
    ) -> None:
        super().__init__(f"{method} {path} answered HTTP {status}: {message}")
        self.method = method
        self.path = path
        self.status = status
        self.message = message
        # Case-insensitive (requests' own mapping): look up "Retry-After" as spelled.
        self.headers = headers


def _message(resp: requests.Response) -> str:
    """The server's own words: the contract's error message, else the start of the body."""
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:200].strip() or resp.reason
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message", ""))
    if isinstance(body, dict) and "detail" in body:
        return str(body["detail"])
    return str(body)[:200]


def signature(secret: str, body: bytes) -> str:
    """The ``X-Signature-256`` value for a webhook body: ``sha256=<hex HMAC-SHA256>``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class AgenticOSClient:
    """One signed-in session against one deployment, in one organisation."""

    def __init__(self, api_url: str, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.api_url = api_url.rstrip("/")
        self.timeout = timeout
        self.org_id: str | None = None
        self._http = requests.Session()
        self._token: str | None = None

    @property
    def token(self) -> str | None:
        """The access token, for the chat WebSocket, which carries it as a subprotocol."""
        return self._token

    def close(self) -> None:
        """Drop pooled connections."""
        self._http.close()

    def __enter__(self) -> AgenticOSClient:
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
        """Send one request under /api/v1; raise APIUnreachable or APIError unless ``expect``ed."""
        headers = dict(kwargs.pop("headers", None) or {})
        if auth and self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        if auth and self.org_id:
            headers["X-Organization-Id"] = self.org_id
        url = f"{self.api_url}{API_PREFIX}{path}"
        try:
            resp = self._http.request(
                method, url, headers=headers, timeout=timeout or self.timeout, **kwargs
            )
        except requests.RequestException as exc:
            raise APIUnreachable(f"{self.api_url}: {type(exc).__name__}") from exc
        if resp.status_code not in expect:
            raise APIError(
                method, API_PREFIX + path, resp.status_code, _message(resp), resp.headers
            )
        return resp

    def health(self) -> dict:
        """GET /health (no sign-in needed)."""
        return self.request("GET", "/health", auth=False).json()

    def sign_in(self, email: str, password: str) -> None:
        """Sign in with the form fields the contract names; the token stays in memory."""
        resp = self.request(
            "POST", "/auth/login", data={"username": email, "password": password}, auth=False
        )
        self._token = resp.json()["access_token"]

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
        """Every item of a ``{items, total}`` list, page by page."""
        offset = 0
        while True:
            page = self.get(path, limit=PAGE_LIMIT, offset=offset, **params)
            items = page.get("items", [])
            yield from items
            offset += len(items)
            if not items or offset >= page.get("total", offset):
                return

    def run_agent(self, agent_id: str, prompt: str) -> dict:
        """POST /agents/{id}/run, waiting for the model like the API does."""
        return self.post(f"/agents/{agent_id}/run", {"prompt": prompt}, timeout=RUN_TIMEOUT_S)

    def search(self, collection_name: str, query: str, limit: int = 4) -> list[dict]:
        """POST /rag/search and return its results."""
        body = {"query": query, "collection_name": collection_name, "limit": limit}
        return self.post("/rag/search", body)["results"]

    def upload(self, collection_name: str, filename: str, content: bytes) -> dict:
        """Upload one file into a collection (multipart field ``file``); answers 202."""
        files = {"file": (filename, content, "text/plain")}
        resp = self.request(
            "POST", f"/rag/collections/{collection_name}/ingest", files=files, expect=(202,)
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
            f"/webhooks/triggers/{source}/{trigger_id}",
            data=body,
            headers=headers,
            auth=False,
            expect=tuple(range(100, 600)),
        )
