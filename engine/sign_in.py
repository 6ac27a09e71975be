"""How a run signs in to a platform: what the credential is there, and the headers it becomes.

Every platform's sign-in is one of a few kinds: none (a server on loopback, an agent card
that declares no security: then no ``LOAD_PASSWORD`` is asked for anywhere), a key sent in
a header (a bearer token, ``x-api-key``, HTTP basic with a fixed user), or a login of its
own (AgenticOS trades a user's email and password for a token). Written once here, a
sign-in serves the load processes (on the engine's transport) and the setup steps (seed,
preflight, follow-up, on their own client) alike: it is given a ``send`` and returns the
headers, so the credential's form is spelled in one place. The credential itself stays in
memory, from ``LOAD_PASSWORD`` (inputs/fixture.py), never an argument nor a file.
"""

from __future__ import annotations

import base64
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from engine.http import HttpCall
from engine.http1 import Answer
from inputs.fixture import password_from_env

# One exchange as a sign-in needs it: the engine's transport's ``send``, or a setup client's.
Send = Callable[[HttpCall], Answer]


class Credential(StrEnum):
    """What ``LOAD_PASSWORD`` (and ``--email``) are to a platform."""

    # Nothing is asked for: the platform has no sign-in.
    NONE = "none"
    # The password alone, as the platform's key.
    KEY = "key"
    # A user's email (--email) and password.
    USER = "user"


class SignInRefused(RuntimeError):
    """The platform refused the sign-in or answered it unusably; the message is one line."""


class SignIn(ABC):
    """One platform's way in: what it asks for and the headers every request then carries.

    ``hint`` names the credential the way the platform's operator knows it ("the server's
    OS_SECURITY_KEY"), for the one line that says it was refused. ``seeded`` is the
    platform's part of the fixture (None while seeding has not made it yet), for a
    platform whose sign-in depends on the deployment (an A2A card declares its own).
    """

    hint: str = "the platform's key"

    def asks(self, seeded: object | None) -> Credential:
        """What the credential is for this deployment."""
        del seeded
        return Credential.KEY

    @abstractmethod
    def headers(self, send: Send, seeded: object | None, email: str, secret: str) -> dict[str, str]:
        """The headers that authenticate every request; SignInRefused in one line."""


class NoSignIn(SignIn):
    """A platform without sign-in: no credential, no header."""

    hint = "nothing (the platform has no sign-in)"

    def asks(self, seeded: object | None) -> Credential:
        del seeded
        return Credential.NONE

    def headers(self, send: Send, seeded: object | None, email: str, secret: str) -> dict[str, str]:
        del send, seeded, email, secret
        return {}


@dataclass(frozen=True)
class KeyHeader(SignIn):
    """The key in one header: ``Authorization: Bearer <key>`` by default, or ``x-api-key:
    <key>`` (``name="x-api-key", prefix=""``)."""

    hint: str = "the platform's key"
    name: str = "Authorization"
    prefix: str = "Bearer "

    def headers(self, send: Send, seeded: object | None, email: str, secret: str) -> dict[str, str]:
        del send, seeded, email
        return {self.name: self.prefix + secret}


@dataclass(frozen=True)
class BasicKey(SignIn):
    """The key as the password of HTTP basic auth for a fixed ``user`` (opencode's)."""

    user: str
    hint: str = "the platform's key"

    def headers(self, send: Send, seeded: object | None, email: str, secret: str) -> dict[str, str]:
        del send, seeded, email
        return {"Authorization": basic_auth(self.user, secret)}


@dataclass(frozen=True)
class SeededKeyHeader(SignIn):
    """The key in the header seeding found the deployment wants (its seeded part's
    ``key_header``: ``Authorization`` for a bearer token, else an API-key header's name), and
    nothing where it names none: a protocol platform's key is the deployment's own (an A2A
    card declares it, an AG-UI agent answers 401 without it)."""

    hint: str = "the agent's key"

    def asks(self, seeded: object | None) -> Credential:
        return Credential.KEY if _key_header(seeded) else Credential.NONE

    def headers(self, send: Send, seeded: object | None, email: str, secret: str) -> dict[str, str]:
        del send, email
        header = _key_header(seeded)
        return key_headers(header, secret) if header else {}


def _key_header(seeded: object | None) -> str:
    header = getattr(seeded, "key_header", "")
    return header if isinstance(header, str) else ""


def key_headers(header: str, secret: str) -> dict[str, str]:
    """The key in ``header``: a bearer token in Authorization, else the key itself."""
    if header.lower() == "authorization":
        return {"Authorization": f"Bearer {secret}"}
    return {header: secret}


def basic_auth(user: str, password: str) -> str:
    """An HTTP basic ``Authorization`` value."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


NO_SIGN_IN = NoSignIn()


def secret_for(credential: Credential) -> str:
    """The credential a run signs in with: LOAD_PASSWORD's value (FixtureError in one line
    when it is not set), or "" for a platform without sign-in, which asks for nothing."""
    return "" if credential is Credential.NONE else password_from_env()
