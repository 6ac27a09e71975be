"""The OpenAI dialect: the workloads as any OpenAI-compatible server serves them, in the API
flavour the seed chose (CONTRACT.md; what the seed found is the fixture's ``seeded``).

A chat turn is one user message answered as server-sent events: Chat Completions'
``chat.completion.chunk`` frames to ``data: [DONE]``, or the Responses API's typed events
to ``response.completed`` (``response.failed``, ``response.incomplete`` and ``error`` end
it failed, in the server's words). Each non-empty text delta is a token (``turn.token()``),
the first one's time the time to first token. A cancelled turn closes the stream after its
first token, which is all an OpenAI client can do: neither flavour has a cancel call for a
streamed answer, so what the server then does with the answer nobody reads is its own
(the stub's record says whether the model stream was abandoned). A Responses turn that
continues a conversation names the last response with ``previous_response_id``; a Chat
Completions turn is always a new conversation (the history a client would resend is not
held by the kit: CONTRACT.md says why). An agent run is the same message answered whole; a
list read is ``GET /v1/models``; retrieval is one embedding.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engine.dialect_kit import (
    BAD_FRAME,
    STREAM_ENDED,
    detail_result,
    event_stream_turn,
    words,
)
from engine.http import HttpCall, HttpTransport
from engine.samples import CANCELLED, FAILED, OK, Result, classify
from engine.seam import Attempt, Deployment, Dialect, Turn
from engine.serve import CHAT as CHAT_STREAM
from engine.sign_in import Credential, KeyHeader, Send
from engine.sse import StreamedAnswer
from workloads.answers import held
from workloads.corpus import question, run_prompt, turn_message
from workloads.openai.answers import (
    CHUNK,
    COMPLETION,
    EMBEDDINGS,
    ERROR_BODY,
    MODEL_LIST,
    RESPONSE,
    STREAM_EVENT,
    ApiError,
    Response,
    asked_for_tool,
    output_text,
)
from workloads.openai.wire import CHAT, FLAVOURS, RESPONSES, Wire

# Why a completion may end and still be an answer: the model stopped, or reached a length
# limit (the kit asks for none, so the server's own).
ANSWERED = frozenset({"stop", "length"})
# The last event of a streamed Chat Completions answer.
DONE = b"[DONE]"
NO_TEXT = "answered without text"
TOOL_ASKED = "the model asked for a tool, and the kit offers none"


@dataclass(frozen=True)
class OpenAISeeded:
    """What the seed found, as the fixture keeps it: the models, the API flavour, where it is
    and whether the server wants a key (never the key)."""

    # The chat model and the embedding model, by name.
    model: str
    embedding_model: str
    # chat (Chat Completions) or responses (the Responses API).
    api: str = CHAT
    # Where the API is under --api-url: /v1, or / where the URL already ends in /v1.
    prefix: str = "/v1"
    # Whether the server wants a key (a bearer token); where not, no LOAD_PASSWORD is asked.
    key: bool = False


@dataclass(frozen=True)
class KeyIfWanted(KeyHeader):
    """The key as a bearer token where the server wants one (the seed asked it), and nothing,
    no ``LOAD_PASSWORD`` asked for, where it takes none (the stub, a local vLLM)."""

    hint: str = "the server's API key (LiteLLM's proxy: a virtual key, not its master key)"

    def asks(self, seeded: object | None) -> Credential:
        wanted = isinstance(seeded, OpenAISeeded) and seeded.key
        return Credential.KEY if wanted else Credential.NONE

    def headers(self, send: Send, seeded: object | None, email: str, secret: str) -> dict[str, str]:
        if self.asks(seeded) is Credential.NONE:
            return {}
        return super().headers(send, seeded, email, secret)


def error_words(status: int, body: bytes) -> str | None:
    """The server's error body in one line (``invalid_request_error model_not_found: The
    model ... does not exist``): type and code where given (a code that is only the status
    again is left out), then the message; None when the body is no OpenAI error."""
    said = held(body, ERROR_BODY)
    if isinstance(said, str):
        return None
    error = said.error
    if isinstance(error, ApiError):
        return named(error.type, error.code, error.message, status)
    if isinstance(error, str):
        return named(None, None, error, status)
    if said.message:
        return named(said.type, said.code, said.message, status)
    return None


def named(kind: str | None, code: str | int | None, message: str | None, status: int = 0) -> str:
    """An error's type, code and message on one line, each given once."""
    head = [str(part) for part in (kind, code) if part not in (None, "")]
    head = [part for part in dict.fromkeys(head) if part != str(status)]
    said = words(message or "")
    if head and said:
        return f"{' '.join(head)}: {said}"
    return " ".join(head) or said or "no message"


def refused(status: int, body: bytes) -> Result:
    """A non-2xx answer: 429 shed, anything else failed, named in the server's words (OpenAI's
    error body; else FastAPI's ``detail``, which some servers send for a bad body)."""
    said = error_words(status, body)
    if said is None:
        return detail_result(status, body)
    return classify(status, len(body))._replace(detail=f"HTTP {status} {said}")


def finished(reason: str | None) -> str | None:
    """Why a completion that ended this way is not an answer (None: it is one)."""
    if reason in ANSWERED:
        return None
    if reason in ("tool_calls", "function_call"):
        return f"finish_reason {reason}: {TOOL_ASKED}"
    return f"finish_reason {reason}" if reason else "no finish_reason"


def responded(response: Response) -> str | None:
    """Why a response (whole, or as its stream's last event carried it) is not an answer
    (None: it is one)."""
    status = response.status
    if status == "failed":
        error = response.error
        said = named(error.code, None, error.message) if error else "no error given"
        return f"response failed: {said}"
    if status == "incomplete":
        details = response.incomplete_details
        return f"response incomplete: {(details.reason if details else None) or 'no reason given'}"
    if status != "completed":
        return f"response {status or 'without a status'}: answered before it ended"
    if asked_for_tool(response):
        return TOOL_ASKED
    return None if output_text(response) else NO_TEXT


class OpenAI(Dialect[OpenAISeeded]):
    """Speaks Chat Completions or the Responses API, as the seed chose, to one model."""

    sign_in = KeyIfWanted()

    def __init__(self, deployment: Deployment[OpenAISeeded], http: HttpTransport):
        super().__init__(deployment, http)
        self.wire = self._wire({})

    def _wire(self, auth: Mapping[str, str]) -> Wire:
        own = self.seeded
        models = own.model, own.embedding_model
        return Wire(own.api, own.prefix, *models, auth)

    def check(self) -> HttpCall:
        """The model list: cheap, and refused without the key where one is wanted."""
        return self.wire.models()

    def signed_in(self, auth: Mapping[str, str], secret: str) -> None:
        super().signed_in(auth, secret)
        self.wire = self._wire(self.auth)

    def call(self, workload: str, k: int) -> HttpCall:
        if workload == "api_read":
            return self.wire.models()
        if workload == "agent_run":
            return self.wire.whole(self.agent_plan.prompt(workload, k, run_prompt(k)))
        if workload == "rag_query":
            return self.wire.embed(question(k))
        raise ValueError(f"{workload} is not offered by an OpenAI-compatible endpoint")

    def answer(self, workload: str, k: int, status: int, body: bytes) -> Result:
        """The model list, the embedding or the answer, each held to its shape; an error in
        the server's words."""
        if not 200 <= status < 300:
            return refused(status, body)
        result = classify(status, len(body))
        problem = self._problem(workload, body)
        return result._replace(outcome=FAILED, detail=problem) if problem else result

    def _problem(self, workload: str, body: bytes) -> str | None:
        """What is wrong with a 2xx answer's body (None: nothing)."""
        if workload == "api_read":
            listed = held(body, MODEL_LIST)
            return listed if isinstance(listed, str) else None
        if workload == "rag_query":
            embedded = held(body, EMBEDDINGS)
            if isinstance(embedded, str):
                return embedded
            if len(embedded.data) != 1 or not embedded.data[0].embedding:
                return f"bad body: {len(embedded.data)} embeddings for 1 input"
            return None
        if self.wire.api == RESPONSES:
            response = held(body, RESPONSE)
            return response if isinstance(response, str) else responded(response)
        completion = held(body, COMPLETION)
        if isinstance(completion, str):
            return completion
        if not completion.choices:
            return "bad body: no choices"
        choice = completion.choices[0]
        if choice.message.tool_calls:
            return TOOL_ASKED
        return finished(choice.finish_reason) or (None if choice.message.content else NO_TEXT)

    def chat_turn(self, attempt: Attempt, timeout_s: float) -> Result:
        text = self.agent_plan.prompt(CHAT_STREAM, attempt.index, turn_message(attempt.index))
        conversation = attempt.conversation
        if self.wire.api == RESPONSES:
            call = self.wire.streamed(text, conversation.id if conversation else None)
            read = self._read_responses
        else:
            call, read = self.wire.streamed(text), self._read_chat
        return event_stream_turn(self.http, call, attempt, timeout_s, refused, read)

    def _read_chat(self, answer: StreamedAnswer, turn: Turn) -> Result:
        """Chat Completions' chunks to ``[DONE]``; the turn as its finish_reason says."""
        if answer.content_type != "text/event-stream":
            return _not_streamed(answer, turn)
        reason: str | None = None
        for raw in answer.events():
            turn.received += len(raw.data)
            if raw.data == DONE:
                return _chat_ended(turn, reason)
            chunk = held(raw.data, CHUNK)
            if isinstance(chunk, str):
                return turn.failed(f"{BAD_FRAME} ({chunk})")
            if chunk.error is not None:
                error = chunk.error
                return turn.failed(f"error frame: {named(error.type, error.code, error.message)}")
            for choice in chunk.choices:
                if choice.delta.tool_calls:
                    return turn.failed(TOOL_ASKED)
                if choice.delta.content:
                    turn.token()
                    if turn.attempt.cancel:
                        return turn.ended(CANCELLED)
                reason = choice.finish_reason or reason
        return turn.failed(STREAM_ENDED)

    def _read_responses(self, answer: StreamedAnswer, turn: Turn) -> Result:
        """The Responses API's events to the response's end; a completed one is where the
        conversation goes on from."""
        if answer.content_type != "text/event-stream":
            return _not_streamed(answer, turn)
        for raw in answer.events():
            turn.received += len(raw.data)
            event = held(raw.data, STREAM_EVENT)
            if isinstance(event, str):
                return turn.failed(f"{BAD_FRAME} ({event})")
            if event.type == "response.output_text.delta":
                if event.delta:
                    turn.token()
                    if turn.attempt.cancel:
                        return turn.ended(CANCELLED)
            elif event.type in ("response.completed", "response.failed", "response.incomplete"):
                return self._response_ended(turn, event.response)
            elif event.type == "error":
                return turn.failed(f"error event: {named(event.code, None, event.message)}")
        return turn.failed(STREAM_ENDED)

    def _response_ended(self, turn: Turn, response: Response | None) -> Result:
        if response is None:
            return turn.failed(f"{BAD_FRAME} (a last event without its response)")
        if problem := responded(response):
            return turn.failed(problem)
        if turn.tokens == 0:
            return turn.failed(NO_TEXT)
        if turn.attempt.conversation is not None:
            turn.attempt.conversation.id = response.id
        return turn.ended(OK)


def _chat_ended(turn: Turn, reason: str | None) -> Result:
    """How a Chat Completions stream that reached ``[DONE]`` went."""
    if problem := finished(reason):
        return turn.failed(problem)
    return turn.ended(OK) if turn.tokens else turn.failed(NO_TEXT)


def _not_streamed(answer: StreamedAnswer, turn: Turn) -> Result:
    """A stream asked for and a body of another kind answered: named in the server's words
    where it gave an error, else by its content type."""
    body = answer.read()
    turn.received += len(body)
    said = error_words(answer.status, body)
    return turn.failed(f"not streamed: {said or answer.content_type or 'no content type'}")


# The record's mix names both flavours; the seed picks one (CONTRACT.md has the rest).
OFFERS = {
    "api_read": "GET /v1/models",
    "chat_stream": (
        f"streamed {FLAVOURS[CHAT]} (chunks to [DONE]) or Responses API (events to "
        "response.completed); cancel closes the stream"
    ),
    "agent_run": f"{FLAVOURS[CHAT]} or Responses API, answered whole",
    "rag_query": "POST /v1/embeddings (one input)",
}
NOT_OFFERED = {
    "ingest": (
        "a model endpoint has no document upload to search (OpenAI's own files and vector "
        "stores are not served by the gateways and model servers this platform is for)"
    ),
    "trigger_fire": "a model endpoint has no signed inbound webhook (OpenAI's go the other way)",
}
