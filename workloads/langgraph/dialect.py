"""The LangGraph dialect: the six workloads as langgraph-api 0.16 serves them (CONTRACT.md).

Paths sit at the API's root; the key travels in ``x-api-key``, as the official
SDK sends it, held in memory only. A chat turn is a streamed run on a thread the
run creates: server-sent events read on the kit's own connection
(``HttpTransport.stream``), ``messages`` events carrying the tokens and a final
``values`` event carrying the answer; a turn cancelled after its first token asks
the run-cancel endpoint, and the stream then ends without the answer. A waited
run is ``/runs/wait``, retrieval the store's semantic search, an ingest a store
put (embedded before it answers), and a trigger_fire a background run, which the
server accepts for later: its sample ends with the acceptance and followup.py
finds out after the run what became of it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from functools import partial

from engine.dialect_kit import (
    BAD_FRAME,
    STREAM_ENDED,
    cancel_asked,
    detail_result,
    error_frame,
    event_stream_turn,
    words,
)
from engine.http import HttpCall, HttpTransport
from engine.http1 import failure_detail
from engine.samples import CANCELLED, FAILED, OK, Result
from engine.seam import Attempt, Deployment, Dialect, Turn
from engine.serve import CHAT
from engine.sign_in import KeyHeader
from engine.sse import StreamedAnswer
from inputs.fixture import in_path
from workloads.answers import fits, held
from workloads.corpus import question, run_prompt, turn_message, upload_name, upload_text
from workloads.langgraph.answers import LIST, RUN, SEARCH_PAGE, VALUES
from workloads.langgraph.seed import LangGraphSeeded

# api_read rotates over the two lists a LangGraph client (Studio, a chat UI) opens first.
READ_PATHS = ("/threads/search", "/assistants/search")
READ_BODY = json.dumps({"limit": 20}).encode()
# The stream modes a chat UI asks for: the tokens as they come, and the state when it changes
# (whose last value carries the whole answer: how a turn's completion is read).
STREAM_MODE = ["messages-tuple", "values"]
# The ``messages`` chunks that are the model's own tokens, as LangChain names them.
MODEL_CHUNKS = ("AIMessageChunk", "ai")
# A cancel that reaches a run already finished: the turn reads on and ends as it ended.
CANCEL_TOO_LATE = 404
# The run's status once a cancel (action "interrupt") has stopped it.
INTERRUPTED = "interrupted"


class LangGraph(Dialect[LangGraphSeeded]):
    """Speaks langgraph-api 0.16's Agent Server API (platforms/langgraph/ runs one on the stub)."""

    HEALTH = "/ok"
    # The key in ``x-api-key``, as the official SDK sends it.
    sign_in = KeyHeader(hint="the server's key (LOADKIT_API_KEY)", name="x-api-key", prefix="")

    def __init__(self, deployment: Deployment[LangGraphSeeded], http: HttpTransport):
        super().__init__(deployment, http)
        self._json: dict[str, str] = {}
        self._reads: tuple[HttpCall, ...] = ()
        self._namespace = [self.seeded.namespace]

    def check(self) -> HttpCall:
        """An assistants search, the cheapest read that needs the key."""
        return HttpCall("POST", READ_PATHS[1], READ_BODY, {"Content-Type": "application/json"})

    def signed_in(self, auth: Mapping[str, str], secret: str) -> None:
        super().signed_in(auth, secret)
        self._json = self.json_headers
        self._reads = tuple(HttpCall("POST", path, READ_BODY, self._json) for path in READ_PATHS)

    def call(self, workload: str, k: int) -> HttpCall:
        if workload == "api_read":
            return self._reads[k % len(self._reads)]
        if workload == "agent_run":
            prompt = self.agent_plan.prompt(workload, k, run_prompt(k))
            return self._post("/runs/wait", self._run_body(prompt))
        if workload == "rag_query":
            query = {"namespace_prefix": self._namespace, "query": question(k), "limit": 4}
            return self._post("/store/items/search", query)
        if workload == "ingest":
            item = {
                "namespace": self._namespace,
                "key": upload_name(self.run_id, k),
                "value": {"text": upload_text(self.run_id, k)},
            }
            return HttpCall("PUT", "/store/items", json.dumps(item).encode(), self._json)
        if workload == "trigger_fire":
            body = {**self._run_body(run_prompt(k)), "if_not_exists": "create"}
            return self._post(f"/threads/{uuid.uuid4()}/runs", body)
        raise ValueError(f"{workload} is not a plain-HTTP workload")

    def answer(self, workload: str, k: int, status: int, body: bytes) -> Result:
        """The server answers 200 to a waited run whose model failed (``__error__``), so each
        answer is held to its shape (answers.py) and read. A background run (trigger_fire)
        is work accepted for later: the sample ends with the acceptance and the run is noted
        for the follower (followup.py)."""
        result = status_result(status, body)
        if result.outcome != OK or workload == "ingest":
            return result
        if workload == "api_read":
            return fits(result, held(body, LIST))
        if workload == "agent_run":
            values = held(body, VALUES)
            if isinstance(values, str):
                return fits(result, values)
            if values.error is not None:
                why = words(values.error.message or values.error.error or "error")
                return result._replace(outcome=FAILED, detail=f"run error: {why}")
            if not values.messages or values.messages[-1].type != "ai":
                return result._replace(outcome=FAILED, detail="no answer in the run's values")
            return result
        if workload == "rag_query":
            page = held(body, SEARCH_PAGE)
            if isinstance(page, str):
                return fits(result, page)
            return result if page.items else result._replace(outcome=FAILED, detail="no results")
        if workload == "trigger_fire":
            run = held(body, RUN)
            if isinstance(run, str):
                return fits(result, run)
            self.accept(k, workload, f"{run.thread_id}/{run.run_id}")
        return result

    def chat_turn(self, attempt: Attempt, timeout_s: float) -> Result:
        thread_id = str(uuid.uuid4())
        if (conversation := attempt.conversation) is not None:
            # A conversation is one thread, as a person's is; the kit names it.
            thread_id = conversation.id = conversation.id or thread_id
        body = {
            **self._run_body(
                self.agent_plan.prompt(CHAT, attempt.index, turn_message(attempt.index))
            ),
            "stream_mode": STREAM_MODE,
            "if_not_exists": "create",
        }
        call = self._post(f"/threads/{in_path(thread_id)}/runs/stream", body)
        return event_stream_turn(
            self.http,
            call,
            attempt,
            timeout_s,
            status_result,
            lambda answer, turn: self._read_turn(answer, turn, thread_id),
        )

    def _read_turn(self, answer: StreamedAnswer, turn: Turn, thread_id: str) -> Result:
        """Events until the stream ends, named as the other dialects name the same breaks. A
        token is a ``messages`` chunk of the model's with text (a tool node's result is a
        message too, and no token); the turn completed when a ``values`` event
        carries the model's message; after a cancel the stream ends without one."""
        cancel_sent, completed, run_id = False, False, ""
        for event in answer.events():
            turn.arrived(len(event.data))
            try:
                frame = json.loads(event.data)
            except ValueError:
                return turn.failed(BAD_FRAME)
            if event.name == "messages":
                chunk = frame[0] if isinstance(frame, list) and frame else None
                if not isinstance(chunk, dict):
                    return turn.failed(BAD_FRAME)
                if chunk.get("content") and chunk.get("type") in MODEL_CHUNKS:
                    turn.token()
                    if turn.attempt.cancel and not cancel_sent:
                        cancel_sent = True
                        failed = self._cancel(thread_id, run_id)
                        if failed is not None:
                            return turn.failed(failed.detail, failed.status)
            elif not isinstance(frame, dict):
                return turn.failed(BAD_FRAME)
            elif event.name == "metadata":
                run_id = str(frame.get("run_id", ""))
            elif event.name == "values":
                completed = answered(frame)
            elif event.name == "error":
                return turn.failed(error_frame(frame))
        if completed:
            return turn.ended(OK)
        # The body ended in good order without the answer. Nothing in the stream says why, so
        # a turn that asked for a cancel asks the run whether the cancel is what ended it.
        if not cancel_sent:
            return turn.failed(STREAM_ENDED)
        return self._cancelled(turn, thread_id, run_id)

    def _cancelled(self, turn: Turn, thread_id: str, run_id: str) -> Result:
        """Cancelled when the server says the run was interrupted; else the stream ended before
        the answer, or the run ended as it says."""
        call = HttpCall(
            "GET", f"/threads/{in_path(thread_id)}/runs/{in_path(run_id)}", b"", self.auth
        )
        try:
            answer = self.http.send(call)
            status, body = answer.status, answer.body
            run = json.loads(body) if status == 200 else None
        except Exception as exc:
            # A body that is not JSON too: named as the status read's, not the stream's.
            return turn.failed(f"run status: {failure_detail(exc)}")
        state = run.get("status") if isinstance(run, dict) else None
        if state == INTERRUPTED:
            return turn.ended(CANCELLED)
        if state in (None, "success", "pending", "running"):
            return turn.failed(STREAM_ENDED if state else f"run status: HTTP {status}")
        return turn.failed(f"run {state}")

    def _cancel(self, thread_id: str, run_id: str) -> Result | None:
        """Ask the server to cancel the run; None when it accepted (202) or the run had
        already finished (404), else what went wrong."""
        if not run_id:
            return Result(200, FAILED, "no run_id to cancel")
        call = HttpCall(
            "POST", f"/threads/{in_path(thread_id)}/runs/{in_path(run_id)}/cancel", b"", self.auth
        )
        return cancel_asked(self.http, call, (202, CANCEL_TOO_LATE))

    def _run_body(self, prompt: str) -> dict:
        return {
            "assistant_id": self.seeded.graph_id,
            "input": {"messages": [{"role": "user", "content": prompt}]},
        }

    def _post(self, path: str, body: dict) -> HttpCall:
        return HttpCall("POST", path, json.dumps(body).encode(), self._json)


def answered(values: object) -> bool:
    """Whether a run's state ends with the model's message (its answer, not a step asking for
    a tool)."""
    messages = values.get("messages") if isinstance(values, dict) else None
    last = messages[-1] if isinstance(messages, list) and messages else None
    return isinstance(last, dict) and last.get("type") == "ai" and not last.get("tool_calls")


# A refusal in the server's words: Starlette's ``{"detail": ...}``, or a plain-text body.
status_result = partial(detail_result, plain_text=True)


# What each workload becomes on this platform, in the report's mix (CONTRACT.md has the rest).
OFFERS = {
    "api_read": "POST /threads/search or /assistants/search",
    "chat_stream": "POST /threads/{id}/runs/stream (SSE), the run-cancel endpoint to cancel",
    "agent_run": "POST /runs/wait",
    "rag_query": "POST /store/items/search (the store's semantic search)",
    "ingest": "PUT /store/items (embedded before the answer)",
    "trigger_fire": "POST /threads/{id}/runs, a background run, unsigned (followed to success)",
}
