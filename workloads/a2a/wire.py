"""How an A2A request is spelled, for the deployment a card described: the binding, the protocol
line and the methods' names, in one place for the dialect and the seed.

Three bindings are spoken, each as a real server serves it (platforms/a2a/WIRE.md):
JSON-RPC 2.0 at one path (a2a-sdk at ``/``, LangGraph at ``/a2a/{assistant}``); the
same JSON-RPC bodies posted to a path per method (agno's ``.../v1/message:send``, whose
card's interface URL ends in ``message:stream``); and 1.0's HTTP+JSON binding
(``POST /message:send``, ``GET /tasks/{id}``). Two protocol lines: 1.0's method names
(``SendMessage``...) go with ``A2A-Version: 1.0``, which a2a-sdk needs to read them and
which makes it refuse 0.3's names, so 0.3's (``message/send``...) go without it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from engine.http import HttpCall
from inputs.fixture import in_path

JSONRPC = "jsonrpc"
# JSON-RPC bodies posted to a path of each method's own (agno 3.1.10's A2A interface).
JSONRPC_PATHS = "jsonrpc-paths"
HTTP_JSON = "http-json"
BINDINGS = (JSONRPC, JSONRPC_PATHS, HTTP_JSON)
# How a card names the bindings the kit speaks, to the kit's names.
CARD_BINDINGS = {"JSONRPC": JSONRPC, "HTTP+JSON": HTTP_JSON}
V1, V03 = "1.0", "0.3"
VERSION_HEADER = "A2A-Version"

# The kit's five operations, by protocol line.
SEND, STREAM, GET, LIST, CANCEL = "send", "stream", "get", "list", "cancel"
METHODS = {
    V1: {
        SEND: "SendMessage",
        STREAM: "SendStreamingMessage",
        GET: "GetTask",
        LIST: "ListTasks",
        CANCEL: "CancelTask",
    },
    V03: {
        SEND: "message/send",
        STREAM: "message/stream",
        GET: "tasks/get",
        LIST: "tasks/list",
        CANCEL: "tasks/cancel",
    },
}
# agno's path per method, under the base its card's URL names.
PATHS = {SEND: "message:send", STREAM: "message:stream", GET: "tasks:get", CANCEL: "tasks:cancel"}
# ListTasks' page for a list read: a console's page.
PAGE_SIZE = 20


def joined(base: str, tail: str) -> str:
    """``tail`` under the path ``base`` ("/" + "message:send" is "/message:send")."""
    return base.rstrip("/") + "/" + tail


class Wire:
    """Requests for one deployment: its path, binding and protocol line, and the headers every
    request carries once signed in (``auth``)."""

    def __init__(self, path: str, binding: str, version: str, auth: Mapping[str, str]):
        self.path, self.binding, self.version = path, binding, version
        versioned = {VERSION_HEADER: V1} if version == V1 else {}
        self._headers = {
            "application/json": {
                **auth,
                **versioned,
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
            "text/event-stream": {
                **auth,
                **versioned,
                "Content-Type": "application/json",
                "Accept": "text/event-stream",
            },
        }

    @property
    def rpc(self) -> bool:
        """JSON-RPC envelopes (at one path or a path per method), not HTTP+JSON."""
        return self.binding != HTTP_JSON

    def message(self, text: str, context_id: str | None) -> dict[str, Any]:
        """A user message of this protocol line, continuing ``context_id`` when given."""
        own: dict[str, Any] = {"messageId": uuid.uuid4().hex}
        if context_id:
            own["contextId"] = context_id
        if self.version == V1:
            return {"role": "ROLE_USER", "parts": [{"text": text}], **own}
        return {"kind": "message", "role": "user", "parts": [{"kind": "text", "text": text}], **own}

    def send(self, k: int, text: str, context_id: str | None = None) -> HttpCall:
        """A message, answered when its task ends (0.3 asks for that; 1.0 does by default)."""
        params: dict[str, Any] = {"message": self.message(text, context_id)}
        if self.version != V1:
            params["configuration"] = {"blocking": True}
        return self._call(SEND, k, params)

    def stream(self, k: int, text: str, context_id: str | None = None) -> HttpCall:
        """A message whose task is streamed as server-sent events."""
        return self._call(STREAM, k, {"message": self.message(text, context_id)})

    def get(self, k: int, task_id: str, context_id: str | None = None) -> HttpCall:
        """GetTask. agno's path per method finds a task only with its context, which a
        protocol-keeping server would refuse as an unknown field, so only there is it sent."""
        params: dict[str, Any] = {"id": task_id}
        if self.binding == JSONRPC_PATHS and context_id:
            params["contextId"] = context_id
        return self._call(GET, k, params)

    def list(self, k: int) -> HttpCall:
        """ListTasks, one page."""
        return self._call(LIST, k, {"pageSize": PAGE_SIZE})

    def cancel(self, k: int, task_id: str, context_id: str | None = None) -> HttpCall:
        """CancelTask (agno's, like its GetTask, with the context)."""
        params: dict[str, Any] = {"id": task_id}
        if self.binding == JSONRPC_PATHS and context_id:
            params["contextId"] = context_id
        return self._call(CANCEL, k, params)

    def _call(self, operation: str, k: int, params: dict[str, Any]) -> HttpCall:
        accept = "text/event-stream" if operation == STREAM else "application/json"
        headers = self._headers[accept]
        if self.binding == HTTP_JSON:
            return self._rest(operation, params, headers)
        body = {"jsonrpc": "2.0", "id": k, "method": METHODS[self.version][operation]}
        path = joined(self.path, PATHS[operation]) if self.binding == JSONRPC_PATHS else self.path
        return HttpCall("POST", path, json.dumps({**body, "params": params}).encode(), headers)

    def _rest(self, operation: str, params: dict[str, Any], headers: dict[str, str]) -> HttpCall:
        """1.0's HTTP+JSON binding: the same request as a resource's verb and path."""
        if operation in (SEND, STREAM):
            tail = PATHS[operation]
            return HttpCall("POST", joined(self.path, tail), json.dumps(params).encode(), headers)
        if operation == LIST:
            query = urlencode({"pageSize": params["pageSize"]})
            return HttpCall("GET", joined(self.path, f"tasks?{query}"), b"", headers)
        task = in_path(params["id"])
        if operation == GET:
            return HttpCall("GET", joined(self.path, f"tasks/{task}"), b"", headers)
        return HttpCall("POST", joined(self.path, f"tasks/{task}:cancel"), b"{}", headers)
