"""The opencode setup client (seed, preflight): SetupClient spoken its way.

What differs from the shared plumbing (workloads/setup_client.py): paths sit at
the server's root, the password is in the headers the kit's sign-in made (HTTP
basic for user ``opencode``), and errors are ``{"name", "data": {"message"}}``.
Bodies decode into the dialect's own shapes (answers.py).
"""

from __future__ import annotations

from urllib.parse import quote

from workloads.opencode.answers import CONFIG, MATCHES, PATHS, Config, Match, Paths
from workloads.setup_client import SetupClient


class OpenCodeClient(SetupClient):
    """One server, signed in, one pooled session."""

    def error_words(self, body: object) -> str | None:
        """``NotFoundError: Session not found: ses_...``, opencode's error shape."""
        if not isinstance(body, dict) or "name" not in body:
            return None
        data = body.get("data")
        message = data.get("message") if isinstance(data, dict) else None
        return f"{body['name']}: {message}" if message else str(body["name"])

    def project(self) -> Paths:
        """GET /path: the folders the server uses, ``directory`` the project it serves."""
        return self.typed(self.request("GET", "/path"), PATHS)

    def config(self) -> Config:
        """GET /config: the configuration in force (its ``model`` is ``provider/model``)."""
        return self.typed(self.request("GET", "/config"), CONFIG)

    def find(self, pattern: str) -> list[Match]:
        """GET /find: the text search's matches (ripgrep's), each with its ``path``."""
        return self.typed(self.request("GET", f"/find?pattern={quote(pattern)}"), MATCHES)
