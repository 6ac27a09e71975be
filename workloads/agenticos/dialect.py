"""The AgenticOS dialect: the six workloads as ../shared/contract/agenticos-api.md spells them.

Every path is under /api/v1; the organisation travels in X-Organization-Id and
the token in memory only (a header here, a WebSocket subprotocol for chat). A
webhook is signed over its raw body with the secret seeding derived from the
password, and carries a unique X-Delivery-Id so the platform never dedupes it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from urllib.parse import urlencode

import websocket
from geventhttpclient.response import HTTPParseError
from urllib3 import encode_multipart_formdata

from engine.http import HttpCall, HttpTransport, classify
from engine.samples import CANCELLED, FAILED, OK, Result
from workloads.dialect import Attempt, Dialect, DialectError
from workloads.fixture import PASSWORD_ENV, Fixture, webhook_secret

API = "/api/v1"

# api_read rotates over the three lists the seed names; 20 is the console's page size.
READ_PATHS = tuple(f"{API}/{kind}?limit=20" for kind in ("agents", "runs", "conversations"))

# A handful of retrieval questions, so the platform cannot answer one cached query.
QUERIES = (
    "How is the load test fixture configured?",
    "What does the platform do when its provider fails?",
    "Which settings bound the database connection pool?",
    "How are webhook deliveries signed?",
    "What happens to a chat turn that is cancelled?",
)

STOP_FRAME = json.dumps({"type": "stop"})


class AgenticOS(Dialect):
    """Speaks AgenticOS 0.0.247's public API (and the reference target's subset of it)."""

    def __init__(self, fixture: Fixture, base_url: str, run_id: str, http: HttpTransport):
        super().__init__(fixture, run_id, http)
        self._ws_url = (
            base_url.replace("http", "ws", 1).rstrip("/")
            + f"{API}/ws/agent?organization_id={fixture.org_id}"
        )
        self._token = ""
        self._auth: dict[str, str] = {}
        self._json: dict[str, str] = {}
        self._reads: tuple[HttpCall, ...] = ()
        self._webhook_secret = b""

    def sign_in(self, email: str, password: str) -> None:
        body = urlencode({"username": email, "password": password}).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        try:
            status, answer = self.http.send(HttpCall("POST", f"{API}/auth/login", body, headers))
            token = json.loads(answer)["access_token"] if status == 200 else None
        except (OSError, HTTPParseError, ValueError, KeyError) as exc:
            raise DialectError(
                f"sign-in: no usable answer from the API ({type(exc).__name__}); check --host"
            ) from None
        if token is None:
            raise DialectError(
                f"sign-in as {email}: HTTP {status}; check --email and {PASSWORD_ENV}"
            )
        self._token = token
        self._auth = {
            "Authorization": f"Bearer {self._token}",
            "X-Organization-Id": self.fixture.org_id,
        }
        self._json = {**self._auth, "Content-Type": "application/json"}
        self._reads = tuple(HttpCall("GET", path, b"", self._auth) for path in READ_PATHS)
        self._webhook_secret = webhook_secret(password, self.fixture.agent_id).encode()

    def call(self, workload: str, k: int) -> HttpCall:
        if workload == "api_read":
            return self._reads[k % len(self._reads)]
        if workload == "agent_run":
            prompt = f"Load test run {k}: answer in one short sentence."
            return self._post(f"{API}/agents/{self.fixture.agent_id}/run", {"prompt": prompt})
        if workload == "rag_query":
            query = {
                "query": QUERIES[k % len(QUERIES)],
                "collection_name": self.fixture.collection_name,
                "limit": 4,
            }
            return self._post(f"{API}/rag/search", query)
        if workload == "ingest":
            return self._ingest(k)
        if workload == "trigger_fire":
            return self._webhook(k)
        raise ValueError(f"{workload} is not a plain-HTTP workload")

    def _post(self, path: str, payload: dict) -> HttpCall:
        return HttpCall("POST", path, json.dumps(payload).encode(), self._json)

    def _ingest(self, k: int) -> HttpCall:
        text = (
            f"Load test document {self.run_id}-{k}.\n"
            "It exists to be uploaded, accepted with 202 and indexed by the worker.\n"
        ) * 8
        name = f"loadkit-{self.run_id}-{k}.txt"
        body, content_type = encode_multipart_formdata({"file": (name, text, "text/plain")})
        path = f"{API}/rag/collections/{self.fixture.collection_name}/ingest"
        return HttpCall("POST", path, body, {**self._auth, "Content-Type": content_type})

    def _webhook(self, k: int) -> HttpCall:
        body = json.dumps({"event": "loadkit", "run_id": self.run_id, "index": k}).encode()
        signature = hmac.new(self._webhook_secret, body, hashlib.sha256).hexdigest()
        headers = {
            "Content-Type": "application/json",
            "X-Signature-256": f"sha256={signature}",
            "X-Delivery-Id": f"{self.run_id}-{k}",
        }
        source, trigger = self.fixture.trigger_source, self.fixture.trigger_id
        return HttpCall("POST", f"{API}/webhooks/triggers/{source}/{trigger}", body, headers)

    def chat_turn(self, attempt: Attempt, timeout_s: float) -> Result:
        message = {
            "message": f"Load test turn {attempt.index}: answer in a few words.",
            "agent_id": self.fixture.agent_id,
            "conversation_id": None,
        }
        sent = attempt.sent()
        try:
            ws = websocket.create_connection(
                self._ws_url,
                timeout=timeout_s,
                subprotocols=["chat", f"access_token.{self._token}"],
                socket=self.http.open_socket(),
            )
        except websocket.WebSocketBadStatusException as exc:
            return classify(exc.status_code, 0)
        try:
            ws.send(json.dumps(message))
            return _read_turn(ws, attempt, sent)
        finally:
            # Send the close frame without waiting for the reply: the turn's time is over,
            # and a killed turn must not hold the end of the run for the 3 s default.
            ws.close(timeout=0)


def _read_turn(ws: websocket.WebSocket, attempt: Attempt, sent: float) -> Result:
    """Frames until ``complete`` or ``error``; unknown frame types are ignored (the contract)."""
    tokens, received, ttft_ms, stop_sent = 0, 0, None, False
    while True:
        opcode, data = ws.recv_data()
        received += len(data)
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            return Result(101, FAILED, "closed before complete", received, tokens, ttft_ms)
        frame = json.loads(data)
        kind = frame.get("type")
        if kind == "text_delta":
            tokens += 1
            if ttft_ms is None:
                ttft_ms = (attempt.now() - sent) * 1000
            if attempt.cancel and not stop_sent:
                ws.send(STOP_FRAME)
                stop_sent = True
        elif kind == "complete":
            stopped = bool((frame.get("data") or {}).get("stopped"))
            outcome = CANCELLED if stopped and attempt.cancel else OK
            if stopped and not attempt.cancel:
                return Result(101, FAILED, "stopped unasked", received, tokens, ttft_ms)
            return Result(101, outcome, "", received, tokens, ttft_ms)
        elif kind == "error":
            return Result(101, FAILED, "error frame", received, tokens, ttft_ms)


DIALECT = AgenticOS
