"""The A2A dialect: the workloads as any A2A server serves them, from what its card said
(CONTRACT.md; the card is read by seed.py and the fixture holds what it found).

A chat turn is a streamed message: server-sent events, each a task, a status update, an
artifact update or a message, in 1.0's wrappers or 0.3's kinds (answers.py reads both);
the first event is the task's first state, the first text is the first token, and the
turn is read to the stream's end and judged by the task's terminal state. A state after a
terminal one that is not terminal (``completed`` then ``working``) is named. Text comes as
artifact deltas (a2a-sdk), message deltas (agno) or a status message that carries the
whole answer so far (LangGraph), so a status message's text counts only what it adds.

A cancelled turn asks ``CancelTask`` on its task after the first token, reads the stream
to its end and then asks ``GetTask`` what became of the task: a stream's last state is not
the task's (LangGraph's stream says completed after a cancel it carried out), and a
server may accept a cancel it does not carry out, which is named. A cancel refused as too
late (-32002: the task had ended) leaves the turn as its stream ended it. An agent run is a
message answered when its task ends. A list read is ``ListTasks`` where the server has it,
else ``GetTask`` of a task this process (or the seed) made.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from engine.dialect_kit import (
    BAD_FRAME,
    STOPPED_UNASKED,
    STREAM_ENDED,
    detail_result,
    event_stream_turn,
    words,
)
from engine.http import HttpCall, HttpTransport
from engine.http1 import failure_detail
from engine.samples import CANCELLED, FAILED, OK, Result, classify
from engine.seam import Attempt, Deployment, Dialect, Turn
from engine.serve import CHAT
from engine.sign_in import SeededKeyHeader
from engine.sse import StreamedAnswer
from workloads.a2a.answers import (
    ENVELOPE,
    INTERRUPTED,
    LIST_ENVELOPE,
    REST_ERROR,
    STREAMED,
    TASK_LIST,
    TERMINAL,
    Event,
    RpcError,
    Streamed,
    event,
)
from workloads.a2a.card import A2ASeeded
from workloads.a2a.wire import HTTP_JSON, JSONRPC_PATHS, Wire
from workloads.answers import held
from workloads.corpus import run_prompt, turn_message

# What each A2A error code means (the spec's, and JSON-RPC's own), in the sample's words.
CODES = {
    -32001: "task not found",
    -32002: "task not cancelable",
    -32003: "push notifications not supported",
    -32004: "unsupported operation",
    -32005: "content type not supported",
    -32006: "invalid agent response",
    -32007: "extended card not configured",
    -32009: "version not supported",
    -32700: "parse error",
    -32600: "invalid request",
    -32601: "method not found",
    -32602: "invalid params",
    -32603: "internal error",
}
TOO_LATE = -32002
# Tasks this process remembers for GetTask reads (where the server has no ListTasks).
REMEMBERED = 64
# The task id a credential check asks about: no server has it, every server answers.
NO_SUCH_TASK = "loadkit-credential-check"


def rpc_error(error: RpcError) -> str:
    """``A2A -32001 task not found: <the server's words>``."""
    name = CODES.get(error.code, "error")
    said = words(error.message)
    return f"A2A {error.code} {name}" + (f": {said}" if said else "")


class A2A(Dialect[A2ASeeded]):
    """Speaks A2A 1.0 or 0.3, over JSON-RPC or 1.0's HTTP+JSON, as the card said."""

    sign_in = SeededKeyHeader(
        hint="the agent's key (the card's security scheme, or --key-header's)"
    )

    def __init__(self, deployment: Deployment[A2ASeeded], http: HttpTransport):
        super().__init__(deployment, http)
        own = self.seeded
        self.wire = Wire(own.rpc_path, own.binding, own.version, {})
        self.streams = own.streaming or own.stream_anyway
        # Tasks made here, newest last (id, context): what a GetTask read asks about.
        self.recent: deque[tuple[str, str]] = deque(maxlen=REMEMBERED)
        if own.task_id:
            self.recent.append((own.task_id, own.context_id or ""))

    def check(self) -> HttpCall:
        """A cheap request that needs the key where the deployment wants one: GetTask of a task
        nobody has (an error in a 200), or, where that is a 404 (HTTP+JSON, agno's paths),
        ListTasks or the agent's card (which agno guards with its key)."""
        if self.seeded.binding == HTTP_JSON:
            return self.wire.list(0)
        if self.seeded.binding == JSONRPC_PATHS:
            return HttpCall("GET", self.seeded.card_path)
        return self.wire.get(0, NO_SUCH_TASK)

    def signed_in(self, auth: Mapping[str, str], secret: str) -> None:
        super().signed_in(auth, secret)
        own = self.seeded
        self.wire = Wire(own.rpc_path, own.binding, own.version, self.auth)

    def call(self, workload: str, k: int) -> HttpCall:
        if workload == "api_read":
            if self.seeded.list_tasks:
                return self.wire.list(k)
            if not self.recent:
                raise ValueError("api_read: no task to read yet; seed again (it makes one)")
            task_id, context_id = self.recent[k % len(self.recent)]
            return self.wire.get(k, task_id, context_id)
        if workload == "agent_run":
            return self.wire.send(k, self.agent_plan.prompt(workload, k, run_prompt(k)))
        raise ValueError(f"{workload} is not offered by A2A")

    def answer(self, workload: str, k: int, status: int, body: bytes) -> Result:
        """The task (or message) a send answered, the page a list read or the task a read
        answered, each held to its shape; an A2A error in the server's words."""
        if not 200 <= status < 300:
            return self.refused(status, body)
        result = classify(status, len(body))
        if workload == "api_read" and self.seeded.list_tasks:
            return self._listed(result, body)
        if self.wire.rpc:
            envelope = held(body, ENVELOPE)
            if isinstance(envelope, str):
                return result._replace(outcome=FAILED, detail=envelope)
            if envelope.error is not None:
                return result._replace(outcome=FAILED, detail=rpc_error(envelope.error))
            answered = envelope.result
        else:
            decoded = held(body, STREAMED)
            if isinstance(decoded, str):
                return result._replace(outcome=FAILED, detail=decoded)
            answered = decoded
        if answered is None:
            return result._replace(outcome=FAILED, detail="bad body: no result")
        if workload == "api_read":
            return (
                result
                if answered.as_task()
                else result._replace(outcome=FAILED, detail="bad body: not a task")
            )
        return self._sent(result, answered)

    def _listed(self, result: Result, body: bytes) -> Result:
        if not self.wire.rpc:
            page = held(body, TASK_LIST)
            return result._replace(outcome=FAILED, detail=page) if isinstance(page, str) else result
        listed = held(body, LIST_ENVELOPE)
        if isinstance(listed, str):
            return result._replace(outcome=FAILED, detail=listed)
        if listed.error is not None:
            return result._replace(outcome=FAILED, detail=rpc_error(listed.error))
        return (
            result
            if listed.result is not None
            else result._replace(outcome=FAILED, detail="bad body: no result")
        )

    def _sent(self, result: Result, answered: Streamed) -> Result:
        """An agent run's answer: a completed task, or the agent's message."""
        task = answered.as_task()
        if task is None:
            said = event(answered)
            if said.kind == "message" and said.text:
                return result
            return result._replace(outcome=FAILED, detail="bad body: neither a task nor a message")
        told = event(answered)
        if told.task_id:
            self.recent.append((told.task_id, told.context_id))
        if told.state == "completed":
            return result
        if told.state in ("submitted", "working"):
            why = "the send answered before the task ended"
        else:
            message = task.status.message
            why = words("".join(p.text or "" for p in message.parts)) if message else ""
        detail = f"task {told.state or 'without a state'}" + (f": {why}" if why else "")
        return result._replace(outcome=FAILED, detail=detail)

    def refused(self, status: int, body: bytes) -> Result:
        """A non-2xx answer in the server's words: HTTP+JSON's google.rpc.Status, a JSON-RPC
        error sent with an HTTP status, else FastAPI's ``detail`` (agno) or the status."""
        rest = held(body, REST_ERROR)
        if not isinstance(rest, str) and rest.error is not None and rest.error.status:
            result = classify(status, len(body))
            said = f"HTTP {status} {rest.error.status}: {words(rest.error.message)}"
            return result._replace(detail=said) if result.outcome == FAILED else result
        rpc = held(body, ENVELOPE)
        if not isinstance(rpc, str) and rpc.error is not None and rpc.error.code < 0:
            result = classify(status, len(body))
            said = f"HTTP {status} {rpc_error(rpc.error)}"
            return result._replace(detail=said) if result.outcome == FAILED else result
        return detail_result(status, body)

    def chat_turn(self, attempt: Attempt, timeout_s: float) -> Result:
        if not self.streams:
            attempt.sent()
            return Result(0, FAILED, "not streamed: the card says streaming: false")
        conversation = attempt.conversation
        text = self.agent_plan.prompt(CHAT, attempt.index, turn_message(attempt.index))
        call = self.wire.stream(attempt.index, text, conversation.id if conversation else None)
        return event_stream_turn(self.http, call, attempt, timeout_s, self.refused, self._read_turn)

    def _read_turn(self, answer: StreamedAnswer, turn: Turn) -> Result:
        """The stream to its end; the turn as its task ended."""
        if answer.content_type != "text/event-stream":
            return self._not_streamed(answer, turn)
        read = _Read()
        for raw in answer.events():
            turn.arrived(len(raw.data))
            if raw.name == "error":
                return turn.failed(f"error event: {words(raw.data.decode('utf-8', 'replace'))}")
            said = self._event(raw.data)
            if isinstance(said, str):
                return turn.failed(said)
            if problem := read.take(said):
                return turn.failed(problem)
            if read.added(said):
                turn.token()
                cancelling = turn.attempt.cancel and read.cancel is None
                if cancelling and (failed := self._cancel(read, turn.attempt.index)):
                    return turn.failed(failed)
        if read.task_id:
            self.recent.append((read.task_id, read.context_id))
            if turn.attempt.conversation is not None and read.context_id:
                turn.attempt.conversation.id = read.context_id
        if read.cancel == "accepted":
            return self._after_cancel(read, turn)
        # Not cancelled, or too late (-32002): the task had ended, the stream says how.
        return _ended(turn, read)

    def _event(self, data: bytes) -> Event | str:
        """One event's normal form, or why it is not one."""
        if self.wire.rpc:
            envelope = held(data, ENVELOPE)
            if isinstance(envelope, str):
                return f"{BAD_FRAME} ({envelope})"
            if envelope.error is not None:
                return rpc_error(envelope.error)
            if envelope.result is None:
                return f"{BAD_FRAME} (no result)"
            return event(envelope.result)
        decoded = held(data, STREAMED)
        return f"{BAD_FRAME} ({decoded})" if isinstance(decoded, str) else event(decoded)

    def _not_streamed(self, answer: StreamedAnswer, turn: Turn) -> Result:
        """A stream asked for and one JSON body answered: the server does not stream (the
        card said it would), in the server's words where it gave any."""
        body = answer.read()
        turn.arrived(len(body))
        envelope = held(body, ENVELOPE)
        why = answer.content_type or "no content type"
        if not isinstance(envelope, str) and envelope.error is not None:
            why = rpc_error(envelope.error)
        return turn.failed(f"not streamed: {why}")

    def _cancel(self, read: _Read, k: int) -> str | None:
        """Ask for the turn's task to be cancelled; None once asked (accepted or too late),
        else what went wrong, named as the cancel's."""
        if not read.task_id:
            return "cancel: no task id in the stream before the first text"
        try:
            answer = self.http.send(self.wire.cancel(k, read.task_id, read.context_id))
        except Exception as exc:
            return f"cancel: {failure_detail(exc)}"
        if not 200 <= answer.status < 300:
            if not self.wire.rpc and _not_cancelable(answer.body):
                read.cancel = "too late"
                return None
            return f"cancel: {self.refused(answer.status, answer.body).detail}"
        envelope = held(answer.body, ENVELOPE) if self.wire.rpc else None
        if envelope is not None and not isinstance(envelope, str) and envelope.error is not None:
            if envelope.error.code != TOO_LATE:
                return f"cancel: {rpc_error(envelope.error)}"
            read.cancel = "too late"
            return None
        read.cancel = "accepted"
        return None

    def _after_cancel(self, read: _Read, turn: Turn) -> Result:
        """What became of a task whose cancel was accepted, as GetTask says (not the stream)."""
        try:
            answer = self.http.send(
                self.wire.get(turn.attempt.index, read.task_id, read.context_id)
            )
        except Exception as exc:
            return turn.failed(f"after cancel: GetTask: {failure_detail(exc)}")
        if not 200 <= answer.status < 300:
            refused = self.refused(answer.status, answer.body).detail
            return turn.failed(f"after cancel: GetTask: {refused}")
        task, problem = self._task_state(answer.body)
        if problem:
            return turn.failed(f"after cancel: GetTask: {problem}")
        if task == "canceled":
            return turn.ended(CANCELLED)
        if task == "completed":
            return turn.failed("cancel accepted, not carried out: the task completed")
        return turn.failed(f"after cancel: task {task or 'without a state'}")

    def _task_state(self, body: bytes) -> tuple[str, str]:
        """(the state a GetTask answer gives its task, "") or ("", why it gives none)."""
        if self.wire.rpc:
            envelope = held(body, ENVELOPE)
            if isinstance(envelope, str):
                return "", envelope
            if envelope.error is not None:
                return "", rpc_error(envelope.error)
            answered = envelope.result
        else:
            decoded = held(body, STREAMED)
            if isinstance(decoded, str):
                return "", decoded
            answered = decoded
        if answered is None or answered.as_task() is None:
            return "", "bad body: not a task"
        return event(answered).state, ""


def _not_cancelable(body: bytes) -> bool:
    """Whether an HTTP+JSON refusal is the task being past cancelling: a2a-sdk 1.3.0 answers
    a cancel of a finished task 400 ``FAILED_PRECONDITION`` (JSON-RPC's -32002; platforms/a2a/
    WIRE.md), its ErrorInfo reason ``TASK_NOT_CANCELABLE``."""
    rest = held(body, REST_ERROR)
    return (
        not isinstance(rest, str)
        and rest.error is not None
        and (rest.error.status == "FAILED_PRECONDITION")
    )


class _Read:
    """How far a streamed turn got: its task and context, its terminal state, the status text
    seen so far (LangGraph's is cumulative), and the cancel, if one was asked."""

    def __init__(self) -> None:
        self.task_id = ""
        self.context_id = ""
        self.terminal = ""
        self.said = ""
        self.status_text = ""
        self.cancel: str | None = None

    def take(self, said: Event) -> str | None:
        """Note an event; a state after a terminal one that is not terminal is named."""
        self.task_id = self.task_id or said.task_id
        self.context_id = self.context_id or said.context_id
        if not said.state:
            return None
        if self.terminal and said.state not in TERMINAL | INTERRUPTED:
            return f"state went backwards: {self.terminal} then {said.state}"
        if said.state in TERMINAL | INTERRUPTED and not self.terminal:
            self.terminal = said.state
            self.said = said.text
        return None

    def added(self, said: Event) -> bool:
        """Whether the event brought text the turn had not seen: an artifact's or a message's
        text is new; a working status message counts only what it adds to the last one."""
        if self.terminal or not said.text:
            return False
        if said.kind in ("artifact", "message"):
            return True
        if said.kind != "status":
            return False
        before, self.status_text = self.status_text, said.text
        return not said.text.startswith(before) or len(said.text) > len(before)


def _ended(turn: Turn, read: _Read) -> Result:
    """How a turn whose stream ended went, by its task's terminal state."""
    if read.terminal == "completed":
        return turn.ended(OK)
    if read.terminal == "canceled":
        return turn.failed(STOPPED_UNASKED)
    if read.terminal:
        said = words(read.said)
        return turn.failed(f"task {read.terminal}" + (f": {said}" if said else ""))
    return turn.failed(STREAM_ENDED)


# What each workload becomes on A2A, in the report's mix (CONTRACT.md has the rest).
OFFERS = {
    "api_read": "ListTasks (GetTask of a recent task where the server has no ListTasks)",
    "chat_stream": "SendStreamingMessage / message/stream (SSE), CancelTask to cancel",
    "agent_run": "SendMessage / message/send, answered when the task ends",
}
NOT_OFFERED = {
    "rag_query": "A2A has no retrieval call (an agent searches inside its own turn)",
    "ingest": "A2A has no document upload",
    "trigger_fire": "A2A has no signed inbound webhook (push notifications go the other way)",
}
