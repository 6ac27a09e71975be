"""The AG-UI dialect: the workloads as any AG-UI server serves them (CONTRACT.md), at the agent's
path and with the key header the seed found (the fixture holds both).

A chat turn is one run read as it arrives: the first event is RUN_STARTED on both servers,
20-40 ms after the send (not recorded: a sample has no column for it yet), the first
non-empty text delta is its first token, and the turn ends at RUN_FINISHED (or RUN_ERROR,
failed in the server's words). AG-UI has no cancel message, so a cancelled turn closes the
stream after its first token and ends ``cancelled``; what the server did then (stop its
model, or pay for the rest of the answer for nobody) only the stub sees, in its record of
the arrival's model call (CONTRACT.md).
An agent run is the same request read whole (the transport reads the event stream to its
end) and judged by the same reader. A conversation continues by naming its thread again:
the server keeps the thread's history.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.dialect_kit import detail_result, event_stream_turn, words
from engine.http import HttpCall, HttpTransport
from engine.samples import CANCELLED, FAILED, OK, Result, classify
from engine.seam import Attempt, Deployment, Dialect, Turn
from engine.serve import CHAT
from engine.sign_in import SeededKeyHeader
from engine.sse import StreamedAnswer
from workloads.ag_ui.answers import UNPROCESSABLE
from workloads.ag_ui.stream import RunRead, body_events
from workloads.ag_ui.wire import AGUISeeded, Wire
from workloads.answers import held
from workloads.corpus import run_prompt, turn_message

# A 2xx whose body is not server-sent events: the URL is not an AG-UI agent's.
NOT_STREAMED = "not an event stream"


def refused(status: int, body: bytes) -> Result:
    """A non-2xx answer in the server's words: FastAPI's 422 by its first issue (``HTTP 422:
    body.threadId: Field required``), else its ``detail`` or the body's text."""
    if status == 422:
        issues = held(body, UNPROCESSABLE)
        if not isinstance(issues, str) and issues.detail:
            first = issues.detail[0]
            where = ".".join(str(part) for part in first.loc)
            said = f"HTTP 422: {words(f'{where}: {first.msg}' if where else first.msg)}"
            return Result(status, FAILED, said, len(body))
    return detail_result(status, body, plain_text=True)


class AGUI(Dialect[AGUISeeded]):
    """Speaks AG-UI to the agent at the seeded path (agno's /agui, ag-ui-langgraph's own)."""

    sign_in = SeededKeyHeader(
        hint="the agent's key (sent in the seed's --key-header, Authorization: Bearer by default)"
    )

    def __init__(self, deployment: Deployment[AGUISeeded], http: HttpTransport):
        super().__init__(deployment, http)
        self.wire = Wire(self.run_id, self.seeded.path, {})

    def signed_in(self, auth: Mapping[str, str], secret: str) -> None:
        super().signed_in(auth, secret)
        self.wire = Wire(self.run_id, self.seeded.path, self.auth)

    def call(self, workload: str, k: int) -> HttpCall:
        if workload == "agent_run":
            text = self.agent_plan.prompt(workload, k, run_prompt(k))
            return self.wire.run(k, text, self.wire.thread(k))
        raise ValueError(f"{workload} is not offered by AG-UI")

    def answer(self, workload: str, k: int, status: int, body: bytes) -> Result:
        """An agent run's whole event stream, judged as a chat turn's is; a refusal in the
        server's words."""
        if not 200 <= status < 300:
            return refused(status, body)
        result = classify(status, len(body))
        run = RunRead()
        read_any = False
        for data in body_events(body):
            read_any = True
            run.take(data)
            if run.ended:
                break
        if not read_any:
            return result._replace(outcome=FAILED, detail=f"{NOT_STREAMED}: no data: events")
        failure = run.verdict()
        return result._replace(outcome=FAILED, detail=failure) if failure else result

    def chat_turn(self, attempt: Attempt, timeout_s: float) -> Result:
        thread = self.wire.thread(attempt.index)
        if (conversation := attempt.conversation) is not None:
            # A conversation (a users-mode user's, or one open arrivals continue) is one
            # thread, named by its first turn: the server keeps its history.
            conversation.id = thread = conversation.id or thread
        text = self.agent_plan.prompt(CHAT, attempt.index, turn_message(attempt.index))
        call = self.wire.run(attempt.index, text, thread)
        return event_stream_turn(self.http, call, attempt, timeout_s, refused, self._read_turn)

    def _read_turn(self, answer: StreamedAnswer, turn: Turn) -> Result:
        """The run's events to its end; with ``cancel``, the stream closed at the first token."""
        if answer.content_type != "text/event-stream":
            turn.arrived(len(answer.read()))
            return turn.failed(f"{NOT_STREAMED}: {answer.content_type or 'no content type'}")
        run = RunRead()
        for event in answer.events():
            turn.arrived(len(event.data))
            if run.take(event.data):
                turn.token()
                if turn.attempt.cancel:
                    return turn.ended(CANCELLED)
            if run.ended:
                break
        failure = run.verdict()
        return turn.failed(failure) if failure else turn.ended(OK)


# What each workload becomes on AG-UI, in the report's mix (CONTRACT.md has the rest).
OFFERS = {
    "chat_stream": "POST RunAgentInput, events read to RUN_FINISHED; cancel closes the stream",
    "agent_run": "POST RunAgentInput, the whole event stream read to RUN_FINISHED",
}
NOT_OFFERED = {
    "api_read": "AG-UI has no list or read call (history comes back only inside a run)",
    "rag_query": "AG-UI has no retrieval call (an agent searches inside its own run)",
    "ingest": "AG-UI has no document upload",
    "trigger_fire": "AG-UI has no inbound webhook (its client starts every run)",
}
