"""opencode serve's success bodies as typed Structs: what CONTRACT.md says each gets back.

Read from its OpenAPI document (``GET /doc``, 1.18.33) and checked against a
running server: a session list is a JSON array of sessions (each with its
``id``), the status of sessions an object keyed by session id, a message call's
answer ``{"info": {...}, "parts": [...]}`` whose ``info.error`` says the turn
failed (it is still a 200), a text search a JSON array of ripgrep matches, each
with its ``path``; an error body ``{"name", "data": {"message"}}``. Only these
fields are named; the server may add others.
"""

from __future__ import annotations

import msgspec

from workloads.answers import AnyObject, decoder


class Session(msgspec.Struct):
    """One session: its id (``ses_...``)."""

    id: str


class ErrorData(msgspec.Struct):
    """What an error carries: its message, in opencode's words."""

    message: str = ""


class NamedError(msgspec.Struct):
    """opencode's error shape, in bodies and events: ``{"name", "data": {"message"}}``."""

    name: str = ""
    data: ErrorData = msgspec.field(default_factory=ErrorData)

    def words(self) -> str:
        """``APIError: <message>``, or the name alone."""
        return f"{self.name}: {self.data.message}" if self.data.message else self.name or "error"


class Info(msgspec.Struct):
    """A message's ``info``: whose it is, how it finished, and its error if it failed."""

    role: str
    finish: str | None = None
    error: NamedError | None = None


class Reply(msgspec.Struct):
    """``POST /session/{id}/message``: the assistant's message when the turn ended."""

    info: Info
    parts: list[AnyObject]


class Text(msgspec.Struct):
    """ripgrep's ``{"text": ...}``."""

    text: str


class Match(msgspec.Struct):
    """One text search match: the file it is in."""

    path: Text


class Paths(msgspec.Struct):
    """``GET /path``: the folders the server uses, ``directory`` the project it serves."""

    directory: str


class Config(msgspec.Struct):
    """``GET /config``: the configuration in force; ``model`` is ``provider/model``."""

    model: str = ""


SESSIONS = decoder(list[Session])
PATHS = decoder(Paths)
CONFIG = decoder(Config)
STATUS = decoder(dict[str, AnyObject])
REPLY = decoder(Reply)
MATCHES = decoder(list[Match])
SESSION = decoder(Session)
ERROR = decoder(NamedError)
