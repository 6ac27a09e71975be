"""How a run signs in to AgenticOS: a user's email and password traded for an access token.

The one sign-in of the kit's platforms that is a request of its own (``POST
/api/v1/auth/login``, form fields ``username`` and ``password``), spelled once here for
the load processes (on the engine's transport) and the setup client (seed, preflight,
follow-up, which signs in again when a long follow-up outlives the 30-minute token).
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from engine.http import HttpCall
from engine.sign_in import Credential, Send, SignIn, SignInRefused

API = "/api/v1"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
# The header that picks the organisation a call acts in.
ORG_HEADER = "X-Organization-Id"


class Login(SignIn):
    """``Authorization: Bearer <token>`` from the login endpoint."""

    hint = "that user's password (and --email if not the default)"

    def asks(self, seeded: object | None) -> Credential:
        del seeded
        return Credential.USER

    def headers(self, send: Send, seeded: object | None, email: str, secret: str) -> dict[str, str]:
        del seeded
        body = urlencode({"username": email, "password": secret}).encode()
        answer = send(HttpCall("POST", f"{API}/auth/login", body, FORM))
        if answer.status == 429:
            raise SignInRefused(
                f"sign-in as {email} rate limited (HTTP 429): wait a minute and run again"
            )
        if answer.status != 200:
            raise SignInRefused(
                f"sign-in as {email}: HTTP {answer.status}; export LOAD_PASSWORD with that "
                "user's password (and --email if not the default)"
            )
        try:
            token = json.loads(answer.body)["access_token"]
        except (ValueError, KeyError, TypeError):
            token = None
        if not isinstance(token, str) or not token or not token.isprintable():
            # It goes into every request's Authorization header, where a CR or LF ends it.
            raise SignInRefused(
                "sign-in: the API answered no access_token of one line of printable text; no "
                "request is sent with it"
            )
        return {"Authorization": f"Bearer {token}"}


LOGIN = Login()


def token_of(auth: dict[str, str]) -> str:
    """The access token in sign-in's headers (the chat WebSocket carries it as a subprotocol)."""
    return auth.get("Authorization", "").removeprefix("Bearer ")
