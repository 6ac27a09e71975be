"""The opencode setup client (seed, preflight): SetupClient spoken its way.

What differs from the shared plumbing (workloads/setup_client.py): paths sit at
the server's root, every route wants HTTP basic auth (user ``opencode``, the
server's password: LOAD_PASSWORD's value, kept in memory only), and errors are
``{"name", "data": {"message"}}``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from inputs.fixture import in_path
from workloads.opencode.dialect import basic_auth
from workloads.setup_client import RUN_TIMEOUT_S, SetupClient


class OpenCodeClient(SetupClient):
    """One server, one password, one pooled session."""

    def __init__(self, api_url: str, password: str, **kwargs: Any) -> None:
        super().__init__(api_url, **kwargs)
        self._auth = basic_auth(password)

    def auth_headers(self) -> dict[str, str]:
        """The password, as HTTP basic auth."""
        return dict(self._auth)

    def error_words(self, body: object) -> str | None:
        """``NotFoundError: Session not found: ses_...``, opencode's error shape."""
        if not isinstance(body, dict) or "name" not in body:
            return None
        data = body.get("data")
        message = data.get("message") if isinstance(data, dict) else None
        return f"{body['name']}: {message}" if message else str(body["name"])

    def answers(self) -> None:
        """GET /global/health with or without the password: the server is up (401 included)."""
        self.request("GET", "/global/health", expect=(200, 401), auth=False)

    def health(self) -> dict:
        """GET /global/health: ``{"healthy": true, "version": ...}`` (the password is checked)."""
        return self.request("GET", "/global/health").json()

    def project(self) -> dict:
        """GET /path: the folders the server uses, ``directory`` the project it serves."""
        return self.request("GET", "/path").json()

    def config(self) -> dict:
        """GET /config: the configuration in force (its ``model`` is ``provider/model``)."""
        return self.request("GET", "/config").json()

    def new_session(self, title: str) -> str:
        """POST /session with a title (no title call to the model): the session's id."""
        return self.request("POST", "/session", json={"title": title}).json()["id"]

    def message(self, session: str, text: str, provider: str, model: str) -> dict:
        """POST /session/{id}/message: the turn, waited for; its ``{"info", "parts"}``."""
        body = {
            "model": {"providerID": provider, "modelID": model},
            "parts": [{"type": "text", "text": text}],
        }
        path = f"/session/{in_path(session)}/message"
        return self.request("POST", path, json=body, timeout=RUN_TIMEOUT_S).json()

    def find(self, pattern: str) -> list[dict]:
        """GET /find: the text search's matches (ripgrep's), each with its ``path``."""
        return self.request("GET", f"/find?pattern={quote(pattern)}").json()
