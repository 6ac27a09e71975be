"""The agno AgentOS dialect: the six workloads as agno 3.1's AgentOS serves them (CONTRACT.md).

Paths sit at the API's root; the security key travels as a bearer token, held
in memory only. A chat turn is the run endpoint with ``stream=true``: server-sent
events (``RunStarted`` names the run, ``RunContent`` carries the tokens), and a
turn cancelled after its first token asks the run-cancel endpoint, then reads
on until agno says ``RunCancelled``. The webhook is agno's WhatsApp interface,
signed as Meta signs (``X-Hub-Signature-256``) with the secret derived from the
password, each delivery from a new sender so no session grows without bound.
An upload and a webhook delivery are work agno accepts for later: as for
AgenticOS, the sample ends with agno's answer and the accepted work is noted,
and followup.py finds out after the run what became of it.
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
    STOPPED_UNASKED,
    STREAM_ENDED,
    cancel_asked,
    detail_result,
    error_frame,
    event_stream_turn,
    words,
)
from engine.http import HttpCall, HttpTransport
from engine.samples import CANCELLED, FAILED, OK, Result
from engine.seam import Attempt, Deployment, Dialect, Turn
from engine.serve import CHAT
from engine.sign_in import KeyHeader
from engine.sse import StreamedAnswer
from inputs.fixture import in_path, webhook_secret
from workloads.agno.answers import AGENTS, CONTENT, DELIVERY, PAGE, RUN_OUTPUT, SEARCH_PAGE
from workloads.agno.seed import AgnoSeeded
from workloads.answers import held
from workloads.corpus import question, run_prompt, turn_message, upload_name, upload_text

# api_read rotates over the two lists the AgentOS console opens first.
READ_PATHS = ("/agents", "/sessions?type=agent&limit=20")

FORM = {"Content-Type": "application/x-www-form-urlencoded"}

# The SSE events that end a turn, and the one that says it was cancelled.
RUN_COMPLETED, RUN_CANCELLED, RUN_ERROR = "RunCompleted", "RunCancelled", "RunError"


class Agno(Dialect[AgnoSeeded]):
    """Speaks agno 3.1's AgentOS API (platforms/agno/ runs one on the stub)."""

    HEALTH = "/health"
    sign_in = KeyHeader(hint="the server's OS_SECURITY_KEY")

    def __init__(self, deployment: Deployment[AgnoSeeded], http: HttpTransport):
        super().__init__(deployment, http)
        self._reads: tuple[HttpCall, ...] = ()
        self._webhook_secret = b""
        self._runs = f"/agents/{in_path(self.seeded.agent_id)}/runs"
        self._whatsapp = self.seeded.whatsapp_prefix

    def check(self) -> HttpCall:
        """The agents list, the console's first read, which needs the key."""
        return HttpCall("GET", READ_PATHS[0])

    def signed_in(self, auth: Mapping[str, str], secret: str) -> None:
        super().signed_in(auth, secret)
        self._reads = tuple(HttpCall("GET", path, b"", self.auth) for path in READ_PATHS)
        self._webhook_secret = webhook_secret(secret, self.seeded.agent_id).encode()

    def call(self, workload: str, k: int) -> HttpCall:
        if workload == "api_read":
            return self._reads[k % len(self._reads)]
        if workload == "agent_run":
            form = {
                "message": self.agent_plan.prompt(workload, k, run_prompt(k)),
                "stream": "false",
            }
            return HttpCall("POST", self._runs, urlencode(form).encode(), {**self.auth, **FORM})
        if workload == "rag_query":
            query = {"query": question(k), "max_results": 4}
            headers = {**self.auth, "Content-Type": "application/json"}
            return HttpCall("POST", "/knowledge/search", json.dumps(query).encode(), headers)
        if workload == "ingest":
            return self._ingest(k)
        if workload == "trigger_fire":
            return self._webhook(k)
        raise ValueError(f"{workload} is not a plain-HTTP workload")

    def answer(self, workload: str, k: int, status: int, body: bytes) -> Result:
        """agno answers 200 to a run whose model failed and to a search that could not embed
        its query, so each answer is held to its shape (answers.py) and read. An upload (202)
        and a webhook delivery (200 "processing") are work agno accepted for later: the sample
        ends with the answer and the work is noted for the follower (followup.py), which finds
        out after the run."""
        result = detail_result(status, body)
        if result.outcome != OK:
            return result
        problem = self._problem(workload, k, body)
        return result if problem is None else Result(status, FAILED, problem, len(body))

    def _problem(self, workload: str, k: int, body: bytes) -> str | None:
        """What is wrong with a 2xx body (None: nothing), noting accepted work."""
        if workload == "api_read":
            agents = READ_PATHS[k % len(READ_PATHS)] == "/agents"
            page = held(body, AGENTS) if agents else held(body, PAGE)
            return page if isinstance(page, str) else None
        if workload == "agent_run":
            run = held(body, RUN_OUTPUT)
            if isinstance(run, str):
                return run
            return None if run.status.upper() == "COMPLETED" else f"run {words(run.status)}"
        if workload == "rag_query":
            search = held(body, SEARCH_PAGE)
            if isinstance(search, str):
                return search
            return None if search.data else "bad body: no results"
        if workload == "trigger_fire":
            delivery = held(body, DELIVERY)
            if isinstance(delivery, str):
                return delivery
            if delivery.status != "processing":
                return f"webhook {words(delivery.status)}"
            self.accept(k, workload, self._delivery_session(k))
            return None
        content = held(body, CONTENT)
        if isinstance(content, str):
            return content
        if not content.id:
            return "bad body: no content id"
        self.accept(k, workload, content.id)
        return None

    def _delivery_session(self, k: int) -> str:
        """The session agno keeps delivery k's run in (``wa:<agent>:<sender>``): the webhook's
        ref, by which the follower finds the run."""
        return f"wa:{self.seeded.agent_id}:{self._sender(k)}"

    def _sender(self, k: int) -> str:
        """A new WhatsApp sender per delivery, so no session grows with the run."""
        return f"loadkit-{self.run_id}-{k}"

    def _ingest(self, k: int) -> HttpCall:
        name, text = upload_name(self.run_id, k), upload_text(self.run_id, k)
        body, content_type = encode_multipart_formdata({"file": (name, text, "text/plain")})
        return HttpCall(
            "POST", "/knowledge/content", body, {**self.auth, "Content-Type": content_type}
        )

    def _webhook(self, k: int) -> HttpCall:
        message = {
            "from": self._sender(k),
            "id": f"wamid.loadkit-{self.run_id}-{k}",
            "timestamp": "0",
            "type": "text",
            "text": {"body": f"Load test message {k}: answer in a few words."},
        }
        change = {
            "field": "messages",
            "value": {"messaging_product": "whatsapp", "messages": [message]},
        }
        payload = {
            "object": "whatsapp_business_account",
            "entry": [{"id": "loadkit", "changes": [change]}],
        }
        body = json.dumps(payload).encode()
        signature = hmac.new(self._webhook_secret, body, hashlib.sha256).hexdigest()
        headers = {"Content-Type": "application/json", "X-Hub-Signature-256": f"sha256={signature}"}
        return HttpCall("POST", f"{self._whatsapp}/webhook", body, headers)

    def chat_turn(self, attempt: Attempt, timeout_s: float) -> Result:
        form = {
            "message": self.agent_plan.prompt(CHAT, attempt.index, turn_message(attempt.index)),
            "stream": "true",
        }
        if (conversation := attempt.conversation) is not None:
            # A conversation (a users-mode user's, or one open arrivals continue) is one agno
            # session, named by the kit since agno lets the client name it.
            conversation.id = conversation.id or f"loadkit-{self.run_id}-{attempt.index}"
            form["session_id"] = conversation.id
        call = HttpCall("POST", self._runs, urlencode(form).encode(), {**self.auth, **FORM})
        return event_stream_turn(
            self.http, call, attempt, timeout_s, detail_result, self._read_turn
        )

    def _read_turn(self, answer: StreamedAnswer, turn: Turn) -> Result:
        """Events until the run ends, named as the AgenticOS dialect names the same breaks.
        Tokens are RunContent events with text; RunCancelled is a cancel only if one went."""
        cancel_sent = False
        for event in answer.events():
            turn.arrived(len(event.data))
            try:
                frame = json.loads(event.data)
            except ValueError:
                frame = None
            if not isinstance(frame, dict):
                return turn.failed(BAD_FRAME)
            if event.name == "RunContent" and frame.get("content"):
                turn.token()
                if turn.attempt.cancel and not cancel_sent:
                    cancel_sent = True
                    failed = self._cancel(frame.get("run_id", ""))
                    if failed is not None:
                        return turn.failed(failed.detail, failed.status)
            elif event.name == RUN_CANCELLED:
                return turn.ended(CANCELLED) if cancel_sent else turn.failed(STOPPED_UNASKED)
            elif event.name == RUN_COMPLETED:
                return turn.ended(OK)
            elif event.name == RUN_ERROR:
                return turn.failed(error_frame({"message": frame.get("content")}))
        # The body ended in good order (its last chunk) without the run's end.
        return turn.failed(STREAM_ENDED)

    def _cancel(self, run_id: str) -> Result | None:
        """Ask agno to cancel the run; None when it accepted, else what went wrong."""
        if not run_id:
            return Result(200, FAILED, "no run_id to cancel")
        call = HttpCall("POST", f"{self._runs}/{in_path(run_id)}/cancel", b"", self.auth)
        return cancel_asked(self.http, call, (200,))


# What each workload becomes on this platform, in the report's mix (CONTRACT.md has the rest).
OFFERS = {
    "api_read": "GET /agents or /sessions",
    "chat_stream": "POST /agents/{id}/runs stream=true (SSE), its cancel endpoint to cancel",
    "agent_run": "POST /agents/{id}/runs stream=false",
    "rag_query": "POST /knowledge/search",
    "ingest": "POST /knowledge/content (202, followed to completed)",
    "trigger_fire": "POST /whatsapp/webhook, HMAC-signed (200, followed to its run)",
}
