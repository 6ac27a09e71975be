"""The AgenticOS dialect: the six workloads as ../shared/contract/agenticos-api.md spells them.

Every path is under /api/v1; the organisation travels in X-Organization-Id and
the token in memory only (a header here, a WebSocket subprotocol for chat). A
webhook is signed over its raw body with the secret seeding derived from the
password, and carries a unique X-Delivery-Id so the platform never dedupes it.

Every answer is checked against the contract's shape before it counts as ok
(answers.py: a list's ``items`` is a list and its ``total`` an integer, a run has
its output, a search its results, an upload its document id; a turn ends with
``complete``); a failure carries the platform's own
words (``error.code`` and ``error.message``, a chat ``error`` frame's message),
trimmed and with ids masked so "Failures by reason" groups them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from urllib.parse import urlencode

from urllib3 import encode_multipart_formdata

from engine.dialect_kit import (
    BAD_FRAME,
    CONNECTION_CLOSED,
    CONNECTION_RESET,
    STOPPED_UNASKED,
    STREAM_ENDED,
    error_frame,
    redirected,
    socket_backstop_s,
    words,
)
from engine.http import HttpCall, HttpTransport
from engine.http1 import Answer
from engine.samples import CANCELLED, FAILED, OK, SHED, Result
from engine.seam import Attempt, Deployment, Dialect, Turn
from engine.serve import CHAT
from engine.websocket import (
    FrameError,
    PeerClosed,
    Refused,
    SocketEnded,
    WebSocket,
    not_upgraded,
)
from inputs.fixture import in_path, webhook_secret
from workloads.agenticos.answers import ACCEPTED, LIST_PAGE, RUN_RESULT, SEARCH_RESULT
from workloads.agenticos.login import API, LOGIN, ORG_HEADER, token_of
from workloads.agenticos.seed import AgenticOSSeeded
from workloads.answers import held
from workloads.corpus import question, run_prompt, turn_message, upload_name, upload_text

# api_read rotates over the three lists the seed names; 20 is the console's page size.
READ_PATHS = tuple(f"{API}/{kind}?limit=20" for kind in ("agents", "runs", "conversations"))

STOP_FRAME = json.dumps({"type": "stop"})


class AgenticOS(Dialect[AgenticOSSeeded]):
    """Speaks AgenticOS 0.0.247's public API (and the reference target's subset of it)."""

    HEALTH = f"{API}/health"
    sign_in = LOGIN

    def __init__(self, deployment: Deployment[AgenticOSSeeded], http: HttpTransport):
        super().__init__(deployment, http)
        self._ws_url = (
            self.base_url.replace("http", "ws", 1).rstrip("/")
            + f"{API}/ws/agent?{urlencode({'organization_id': self.seeded.org_id})}"
        )
        self._token = ""
        self._json: dict[str, str] = {}
        self._reads: tuple[HttpCall, ...] = ()
        self._webhook_secret = b""

    def check(self) -> HttpCall:
        """The user's organisations, which need the token."""
        return HttpCall("GET", f"{API}/orgs")

    def signed_in(self, auth: Mapping[str, str], secret: str) -> None:
        super().signed_in({**auth, ORG_HEADER: self.seeded.org_id}, secret)
        self._token = token_of(dict(auth))
        self._json = self.json_headers
        self._reads = tuple(HttpCall("GET", path, b"", self.auth) for path in READ_PATHS)
        self._webhook_secret = webhook_secret(secret, self.seeded.agent_id).encode()

    def call(self, workload: str, k: int) -> HttpCall:
        if workload == "api_read":
            return self._reads[k % len(self._reads)]
        if workload == "agent_run":
            prompt = self.agent_plan.prompt(workload, k, run_prompt(k))
            path = f"{API}/agents/{in_path(self.seeded.agent_id)}/run"
            return self._post(path, {"prompt": prompt})
        if workload == "rag_query":
            query = {
                "query": question(k),
                "collection_name": self.seeded.collection_name,
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
        name, text = upload_name(self.run_id, k), upload_text(self.run_id, k)
        body, content_type = encode_multipart_formdata({"file": (name, text, "text/plain")})
        path = f"{API}/rag/collections/{in_path(self.seeded.collection_name)}/ingest"
        return HttpCall("POST", path, body, {**self.auth, "Content-Type": content_type})

    def _webhook(self, k: int) -> HttpCall:
        body = json.dumps({"event": "loadkit", "run_id": self.run_id, "index": k}).encode()
        signature = hmac.new(self._webhook_secret, body, hashlib.sha256).hexdigest()
        headers = {
            "Content-Type": "application/json",
            "X-Signature-256": f"sha256={signature}",
            "X-Delivery-Id": f"{self.run_id}-{k}",
        }
        if self.seeded.trigger_id is None:
            # Preflight leaves trigger_fire out of such a run (PreflightResult.skipped).
            raise ValueError("trigger_fire: the fixture names no trigger; seed again")
        source, trigger = in_path(self.seeded.trigger_source), in_path(self.seeded.trigger_id)
        return HttpCall("POST", f"{API}/webhooks/triggers/{source}/{trigger}", body, headers)

    def answer(self, workload: str, k: int, status: int, body: bytes) -> Result:
        """The status, then the body the contract promises; failures in the platform's words."""
        if not 200 <= status < 300:
            return refused(status, body)
        if workload == "trigger_fire":
            # 202 with an empty body: nothing to hold to a shape, the delivery to follow.
            self.accept(k, workload, f"{self.run_id}-{k}")
            return Result(status, OK, bytes=len(body))
        problem = self._problem(workload, k, body)
        if problem:
            return Result(status, FAILED, problem, len(body))
        return Result(status, OK, bytes=len(body))

    def _problem(self, workload: str, k: int, body: bytes) -> str | None:
        """What is wrong with a 2xx body (None: nothing), noting an accepted upload."""
        if workload == "api_read":
            page = held(body, LIST_PAGE)
            return page if isinstance(page, str) else None
        if workload == "agent_run":
            run = held(body, RUN_RESULT)
            if isinstance(run, str):
                return run
            return None if run.status == "completed" else f"run {words(run.status)}"
        if workload == "rag_query":
            search = held(body, SEARCH_RESULT)
            if isinstance(search, str):
                return search
            return None if search.results else "bad body: no results"
        upload = held(body, ACCEPTED)
        if isinstance(upload, str):
            return upload
        document = upload.id or upload.document_id
        if not document:
            return "bad body: no document id"
        self.accept(k, workload, document)
        return None

    def chat_turn(self, attempt: Attempt, timeout_s: float) -> Result:
        message = {
            "message": self.agent_plan.prompt(CHAT, attempt.index, turn_message(attempt.index)),
            "agent_id": self.seeded.agent_id,
            "conversation_id": attempt.conversation.id if attempt.conversation else None,
        }
        sent = attempt.sent()
        subprotocols = ["chat", f"access_token.{self._token}"]
        try:
            ws = WebSocket.open(self.http, self._ws_url, subprotocols, socket_backstop_s(timeout_s))
        except Refused as exc:
            return _not_opened(exc.answer)
        turn = Turn(attempt, sent, 101)
        try:
            return _read_turn(ws, json.dumps(message), turn)
        except (ConnectionResetError, BrokenPipeError, SocketEnded, PeerClosed, FrameError) as exc:
            turn.received = ws.received
            return turn.failed(_break_detail(exc))
        finally:
            ws.close()


def _not_opened(answer: Answer) -> Result:
    """The answer to an upgrade that did not open the stream: a redirect named by where it
    pointed, a 1xx or 2xx that neither upgrades nor refuses, else a refusal in the platform's
    words (the same outcome and words as any other HTTP answer)."""
    if 300 <= answer.status < 400:
        return redirected(answer)
    if answer.status < 300:
        return Result(answer.status, FAILED, not_upgraded(answer.status), len(answer.body))
    return refused(answer.status, answer.body)


def _break_detail(exc: BaseException) -> str:
    """How an open turn broke, in the words every platform uses for the same break."""
    if isinstance(exc, SocketEnded):
        # The socket ended (a FIN) without a close frame, under a read or a write.
        return CONNECTION_CLOSED
    if isinstance(exc, PeerClosed):
        return STREAM_ENDED if exc.code is None else f"{STREAM_ENDED} (close {exc.code})"
    if isinstance(exc, FrameError):
        return str(exc)
    return CONNECTION_RESET


def _read_turn(ws: WebSocket, message: str, turn: Turn) -> Result:
    """Send the turn, then messages until ``complete`` or ``error``; unknown frame types are
    ignored (the contract). ``complete`` with ``stopped`` is a cancel only if a stop went."""
    attempt, stop_sent = turn.attempt, False
    ws.send_text(message)
    while True:
        data = ws.receive()
        turn.arrived(ws.received - turn.received)
        try:
            frame = json.loads(data)
            kind = frame.get("type")
        except (ValueError, AttributeError):
            return turn.failed(BAD_FRAME)
        if attempt.conversation is not None and kind in ("conversation_created", "complete"):
            conversation = (frame.get("data") or {}).get("conversation_id")
            if conversation:
                attempt.conversation.id = str(conversation)
        if kind == "text_delta":
            turn.token()
            if attempt.cancel and not stop_sent:
                ws.send_text(STOP_FRAME)
                stop_sent = True
        elif kind == "complete":
            if not (frame.get("data") or {}).get("stopped"):
                return turn.ended(OK)
            return turn.ended(CANCELLED) if stop_sent else turn.failed(STOPPED_UNASKED)
        elif kind == "error":
            return turn.failed(error_frame(frame.get("data")))


def refused(status: int, body: bytes) -> Result:
    """A non-2xx answer (or a handshake not upgraded): 429 is shed, anything else failed."""
    if status == 429:
        return Result(status, SHED, f"HTTP {status}", len(body))
    return Result(status, FAILED, http_failure(status, body), len(body))


def http_failure(status: int, body: bytes) -> str:
    """``HTTP 500 internal_error: <message>`` from the contract's error body, else ``HTTP 500``."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return f"HTTP {status}"
    if not isinstance(error, dict):
        return f"HTTP {status}"
    code = words(str(error.get("code") or ""))
    message = words(str(error.get("message") or ""))
    head = f"HTTP {status} {code}" if code else f"HTTP {status}"
    return f"{head}: {message}" if message else head


# What each workload becomes on this platform, in the report's mix (CONTRACT.md has the rest).
OFFERS = {
    "api_read": "GET /api/v1/agents, /runs or /conversations",
    "chat_stream": "the chat WebSocket /api/v1/ws/agent, a stop frame to cancel",
    "agent_run": "POST /api/v1/agents/{id}/run",
    "rag_query": "POST /api/v1/rag/search",
    "ingest": "POST /api/v1/rag/collections/{name}/ingest (202, followed to done)",
    "trigger_fire": "POST /api/v1/webhooks/triggers/{source}/{id}, HMAC-signed (202, followed)",
}
