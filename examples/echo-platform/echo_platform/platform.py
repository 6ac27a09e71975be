"""The echo service (service.py) as agent-loadkit speaks it: one record, one dialect.

The service lists its conversations (``GET /conversations``), answers a run whole
(``POST /run``) and streams a chat turn as server-sent events (``POST /chat``: a
``token`` event per piece of text, then ``done``); it has no sign-in, no retrieval, no
uploads and no webhooks, so the record says so and the kit leaves those out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import msgspec

from loadkit.plugin import (
    ANY_TOOL,
    BAD_FRAME,
    CANCELLED,
    OK,
    STREAM_ENDED,
    Attempt,
    Dialect,
    HttpCall,
    Platform,
    Result,
    StreamedAnswer,
    Turn,
    decoder,
    detail_result,
    event_stream_turn,
    fits,
    held,
    run_prompt,
    turn_message,
)


@dataclass(frozen=True)
class EchoSeeded:
    """What a run needs to know of the deployment: nothing seeding must make, only where its
    routes are (a default is what the check and the seed use)."""

    prefix: str = "/"


class Conversation(msgspec.Struct):
    """One conversation of ``GET /conversations``."""

    id: str


class Ran(msgspec.Struct):
    """``POST /run``: the run and its answer."""

    id: str
    output: str


CONVERSATIONS = decoder(list[Conversation])
RAN = decoder(Ran)


class Echo(Dialect[EchoSeeded]):
    """Speaks the echo service."""

    # Answered without a credential: the kit's "is it there" before anything else.
    HEALTH = "/health"

    def route(self, name: str) -> str:
        """A route under the deployment's prefix."""
        return self.seeded.prefix.rstrip("/") + name

    def check(self) -> HttpCall:
        """A cheap read, sent once before load (with a credential, where one is asked)."""
        return HttpCall("GET", self.route("/conversations"))

    def call(self, workload: str, k: int) -> HttpCall:
        if workload == "api_read":
            return HttpCall("GET", self.route("/conversations"), b"", self.auth)
        if workload == "agent_run":
            text = self.agent_plan.prompt(workload, k, run_prompt(k))
            body = json.dumps({"input": text}).encode()
            return HttpCall("POST", self.route("/run"), body, self.json_headers)
        raise ValueError(f"{workload} is not offered by the echo service")

    def answer(self, workload: str, k: int, status: int, body: bytes) -> Result:
        result = detail_result(status, body)
        if result.outcome != OK:
            return result
        return fits(result, held(body, CONVERSATIONS if workload == "api_read" else RAN))

    def chat_turn(self, attempt: Attempt, timeout_s: float) -> Result:
        text = self.agent_plan.prompt("chat_stream", attempt.index, turn_message(attempt.index))
        body = json.dumps({"input": text}).encode()
        call = HttpCall("POST", self.route("/chat"), body, self.json_headers)
        return event_stream_turn(self.http, call, attempt, timeout_s, detail_result, _read)


def _read(answer: StreamedAnswer, turn: Turn) -> Result:
    """Tokens until ``done``; an ``error`` event is the service's own words. The service has
    no cancel of its own, so a turn the kit cancels closes the stream after its first token
    (returning closes the connection), as a user's browser tab would."""
    for event in answer.events():
        turn.arrived(len(event.data))
        if event.name == "token":
            turn.token()
            if turn.attempt.cancel:
                return turn.ended(CANCELLED)
        elif event.name == "done":
            return turn.ended(OK)
        elif event.name == "error":
            return turn.failed(f"error event: {event.data.decode('utf-8', 'replace')[:80]}")
        else:
            return turn.failed(BAD_FRAME)
    return turn.failed(STREAM_ENDED)


PLATFORM = Platform(
    name="echo",
    dialect=Echo,
    seeded=EchoSeeded,
    offers={
        "api_read": "GET /conversations",
        "chat_stream": "POST /chat (SSE: token events, then done)",
        "agent_run": "POST /run, answered whole",
    },
    not_offered={
        "rag_query": "the echo service has no retrieval",
        "ingest": "the echo service takes no uploads",
        "trigger_fire": "the echo service takes no webhooks",
    },
    tool=ANY_TOOL,
)
