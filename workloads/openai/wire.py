"""How an OpenAI-compatible request is spelled, for the deployment the seed found: which API
flavour, under which path, for which model. One place for the dialect and the seed.

Two flavours, chosen at seed (``--api``): Chat Completions (``POST .../chat/completions``,
``stream: true`` for a chat turn) and the Responses API (``POST .../responses``, a chat turn
continuing its conversation by ``previous_response_id``). The model list and embeddings
are the same on both. Paths hang under the seeded prefix: ``/v1`` under a server's root
URL (``http://host:4000``), ``/`` under a URL that already ends in ``/v1``, as the SDKs'
``base_url`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from engine.http import HttpCall

CHAT = "chat"
RESPONSES = "responses"
# The flavours by their seed option's value, in the words a line says them.
FLAVOURS = {CHAT: "Chat Completions", RESPONSES: "the Responses API"}
# Where each flavour's answers are posted, under the prefix.
PATHS = {CHAT: "chat/completions", RESPONSES: "responses"}
_encode = msgspec.json.Encoder().encode


def joined(prefix: str, tail: str) -> str:
    """``tail`` under the path ``prefix`` ("/v1" + "models" is "/v1/models")."""
    return prefix.rstrip("/") + "/" + tail


class Wire:
    """Requests for one deployment: its API flavour, its prefix, the models, and the headers
    every request carries once signed in (``auth``). A request that is the same for every
    arrival (the model list) is one HttpCall, whose bytes the transport builds once."""

    def __init__(
        self, api: str, prefix: str, model: str, embedding_model: str, auth: Mapping[str, str]
    ):
        self.api, self.prefix = api, prefix
        self.model, self.embedding_model = model, embedding_model
        self._json = {**auth, "Content-Type": "application/json"}
        self._stream = {**self._json, "Accept": "text/event-stream"}
        self._models = HttpCall("GET", joined(prefix, "models"), b"", dict(auth))

    def models(self) -> HttpCall:
        """GET /v1/models: what the key may use."""
        return self._models

    def whole(self, text: str) -> HttpCall:
        """One user message answered whole (an agent run)."""
        return self._answer(text, stream=False, previous=None)

    def streamed(self, text: str, previous: str | None = None) -> HttpCall:
        """One user message answered as server-sent events (a chat turn); on the Responses
        API, continuing the response ``previous``."""
        return self._answer(text, stream=True, previous=previous)

    def embed(self, text: str) -> HttpCall:
        """One text's embedding, base64-encoded as the official SDK asks by default."""
        body = {"model": self.embedding_model, "input": text, "encoding_format": "base64"}
        return HttpCall("POST", joined(self.prefix, "embeddings"), _encode(body), self._json)

    def _answer(self, text: str, *, stream: bool, previous: str | None) -> HttpCall:
        body: dict[str, Any] = {"model": self.model, "stream": stream}
        if self.api == CHAT:
            body["messages"] = [{"role": "user", "content": text}]
        else:
            body["input"] = text
            if previous:
                body["previous_response_id"] = previous
        headers = self._stream if stream else self._json
        return HttpCall("POST", joined(self.prefix, PATHS[self.api]), _encode(body), headers)
