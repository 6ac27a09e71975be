"""The opencode dialect: the workloads as opencode serve 1.18.33 answers them (CONTRACT.md).

Every route wants HTTP basic auth (user ``opencode``, the run's password), held in
memory only. A turn, streamed or not, runs in a session, and a session runs one
turn at a time: a second message to a busy session is not refused but queued, and
both callers get the last answer. So the dialect holds each session for one turn:
an open arrival is a stranger and takes a fresh session made ahead of it (``Sessions``,
sized from the plan's rate; one made in the arrival when none is left, inside its
time), used once so no history grows across strangers; a users-mode user keeps its
own across its turns, as a person keeps a conversation. A turn that did not end as
the server said (timed out, broken) has its session aborted and never used again.
Sessions are made with a title, so opencode makes no title call to the model.

A streamed turn waits on its session's events on the process's one ``/event``
subscription (every session's events, handed to each turn by session id: events.py),
sends ``prompt_async`` once the stream is live, and ends at its session's
``session.idle``; a cancel is ``/session/{id}/abort`` after the first token. An agent
run is the blocking message call. Success is what the body or the events say
(``info.error`` absent, the turn finished), never the status alone.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator, Mapping
from urllib.parse import quote

import gevent
from gevent.lock import Semaphore

from engine.dialect_kit import (
    BAD_FRAME,
    STOPPED_UNASKED,
    cancel_asked,
    socket_backstop_s,
    words,
)
from engine.http import HttpCall, HttpTransport
from engine.http1 import ExchangeError
from engine.samples import CANCELLED, FAILED, OK, Result, classify
from engine.seam import Attempt, Deployment, Dialect, DialectError, Turn
from engine.sign_in import BasicKey
from inputs.fixture import in_path
from workloads.answers import fits, held
from workloads.corpus import TOPICS, run_prompt, turn_message
from workloads.opencode.answers import ERROR, MATCHES, REPLY, SESSION, SESSIONS, STATUS
from workloads.opencode.events import Inbox, SessionEvents, Unsubscribed
from workloads.opencode.seed import OpenCodeSeeded

# opencode's basic-auth user when the server sets no OPENCODE_SERVER_USERNAME.
USER = "opencode"
# api_read: the session list a client opens first (bounded: the server lists 100 unless told)
# and the sessions now busy, in turn.
READ_PATHS = ("/session?limit=20", "/session/status")
# Fresh sessions kept made ahead: what this process's held arrivals take in this long at the
# plan's highest rate, so the maker keeps ahead of a step up in rate.
LEAD_S = 2.0
# An abort of a session left busy (a turn timed out) is given this long.
ABORT_TIMEOUT_S = 10.0
# The workloads that run a turn, each on a session of its own.
TURNS = ("chat_stream", "agent_run")
# How the server says a turn was stopped by /abort.
ABORTED = "MessageAbortedError"


class SessionRefused(ExchangeError):
    """The server would not make the session a turn needed; the text says how."""


class Sessions:
    """Fresh sessions made ahead of the open arrivals that take them, one each.

    ``ready`` sets how many to keep made (LEAD_S at the plan's rate of turns); a maker
    greenlet refills the stock after each take and stops when it is full, so nothing of
    it runs once arrivals stop. An arrival that finds the stock empty makes its own.
    """

    def __init__(self, http: HttpTransport, headers: Mapping[str, str], title: str):
        self._http = http
        self._headers = headers
        self._title = title
        self._spare: list[str] = []
        self._target = 0
        self._made = 0
        self._maker: gevent.Greenlet | None = None

    def ready(self, turns_per_second: float) -> None:
        """Keep LEAD_S of turns' sessions made at ``turns_per_second``."""
        self._target = math.ceil(round(turns_per_second * LEAD_S, 9))
        self._refill()

    def take(self) -> str | None:
        """A session made ahead, never used; None when none is left."""
        if not self._spare:
            return None
        taken = self._spare.pop()
        self._refill()
        return taken

    def make(self) -> str:
        """A new session, titled (so opencode asks the model for no title); SessionRefused
        in the server's words, or the transport's error, when it cannot be made."""
        self._made += 1
        body = json.dumps({"title": f"{self._title} {self._made}"}).encode()
        answer = self._http.send(HttpCall("POST", "/session", body, self._headers))
        if answer.status != 200:
            raise SessionRefused(f"session: {refusal(answer.status, answer.body).detail}")
        made = held(answer.body, SESSION)
        if isinstance(made, str):
            raise SessionRefused(f"session: {made}")
        return made.id

    def _refill(self) -> None:
        if len(self._spare) < self._target and (self._maker is None or self._maker.dead):
            self._maker = gevent.spawn(self._make_up)

    def _make_up(self) -> None:
        while len(self._spare) < self._target:
            try:
                self._spare.append(self.make())
            except Exception:
                # The next arrival then makes its own and says in its sample why it could not.
                return


class OpenCode(Dialect[OpenCodeSeeded]):
    """Speaks opencode serve 1.18.33's HTTP API (platforms/opencode/ runs one on the stub)."""

    HEALTH = "/global/health"
    sign_in = BasicKey(USER, hint="the server's password (OPENCODE_SERVER_PASSWORD)")

    def __init__(self, deployment: Deployment[OpenCodeSeeded], http: HttpTransport):
        super().__init__(deployment, http)
        self._model = {"providerID": self.seeded.provider_id, "modelID": self.seeded.model_id}
        self._json: dict[str, str] = {}
        self._reads: tuple[HttpCall, ...] = ()
        self._sessions: Sessions | None = None
        # The sessions a conversation keeps, each held by the one turn running in it.
        self._turns: dict[str, Semaphore] = {}
        # The process's one /event subscription, made by the first chat turn.
        self._events: SessionEvents | None = None

    def check(self) -> HttpCall:
        """A session list of one, the cheapest read that needs the password."""
        return HttpCall("GET", "/session?limit=1")

    def signed_in(self, auth: Mapping[str, str], secret: str) -> None:
        super().signed_in(auth, secret)
        self._json = self.json_headers
        self._reads = tuple(HttpCall("GET", path, b"", self.auth) for path in READ_PATHS)
        self._sessions = Sessions(self.http, self._json, f"loadkit {self.run_id}")

    def ready(self, rates: Mapping[str, float]) -> None:
        """Keep fresh sessions made for the turns the plan sends at its highest rate."""
        if self._sessions is not None:
            self._sessions.ready(sum(rates.get(workload, 0.0) for workload in TURNS))

    def call(self, workload: str, k: int) -> HttpCall:
        if workload == "api_read":
            return self._reads[k % len(self._reads)]
        if workload == "rag_query":
            # A topic in turn, of those the seeded documents cover (document i is on topic i).
            pattern = quote(TOPICS[k % min(len(TOPICS), self.seeded.documents)])
            return HttpCall("GET", f"/find?pattern={pattern}", b"", self.auth)
        raise ValueError(f"{workload} is not a plain-HTTP workload without a session here")

    @contextlib.contextmanager
    def exchange(self, workload: str, attempt: Attempt) -> Iterator[HttpCall]:
        """An agent run is the blocking message call on a session held for it; the rest are
        ``call``'s requests, holding nothing."""
        if workload != "agent_run":
            yield self.call(workload, attempt.index)
            return
        session = self._session_for(attempt)
        ended = False
        try:
            prompt = self.agent_plan.prompt(workload, attempt.index, run_prompt(attempt.index))
            yield self._message_call(session, "message", prompt)
            ended = True
        finally:
            self._settle(attempt, session, ended)

    def answer(self, workload: str, k: int, status: int, body: bytes) -> Result:
        """A failed turn is a 200 whose ``info.error`` says why; every answer is held to its
        shape (answers.py) and read."""
        result = refusal(status, body)
        if result.outcome != OK:
            return result
        if workload == "api_read":
            return fits(result, held(body, SESSIONS if k % len(READ_PATHS) == 0 else STATUS))
        if workload == "rag_query":
            matches = held(body, MATCHES)
            if isinstance(matches, str):
                return fits(result, matches)
            return result if matches else result._replace(outcome=FAILED, detail="no results")
        reply = held(body, REPLY)
        if isinstance(reply, str):
            return fits(result, reply)
        if reply.info.error is not None:
            why = words(reply.info.error.words())
            return result._replace(outcome=FAILED, detail=f"run error: {why}")
        if reply.info.role != "assistant" or reply.info.finish is None:
            return result._replace(outcome=FAILED, detail="no answer in the reply")
        return result

    def chat_turn(self, attempt: Attempt, timeout_s: float) -> Result:
        sent = attempt.sent()
        session = self._session_for(attempt)
        state = _TurnState()
        try:
            return self._stream_turn(attempt, sent, timeout_s, session, state)
        finally:
            self._settle(attempt, session, state.ended)

    def _stream_turn(
        self, attempt: Attempt, sent: float, timeout_s: float, session: str, state: _TurnState
    ) -> Result:
        """Wait on the session's events on the process's one subscription (live before the
        prompt goes, so none is missed), send the prompt, read the turn's events."""
        if self._events is None:
            events = HttpCall("GET", "/event", b"", {**self.auth, "Accept": "text/event-stream"})
            self._events = SessionEvents(self.http, events, refusal)
        try:
            with self._events.watching(session, socket_backstop_s(timeout_s)) as inbox:
                turn = Turn(attempt, sent, 200)
                # From here the session may be busy until its idle event says otherwise.
                state.ended = False
                refused = self._prompt(session, attempt.index)
                if refused is not None:
                    state.ended = True
                    return turn.failed(refused.detail, refused.status)
                return self._read_turn(inbox, turn, session, state)
        except Unsubscribed as exc:
            return exc.result

    def _prompt(self, session: str, k: int) -> Result | None:
        """Send the turn's message (``prompt_async``); None once accepted (204), else why not."""
        prompt = self.agent_plan.prompt("chat_stream", k, turn_message(k))
        call = self._message_call(session, "prompt_async", prompt)
        answer = self.http.send(call, timeout_s=None)
        if answer.status == 204:
            return None
        result = refusal(answer.status, answer.body)
        if result.outcome == OK:
            return result._replace(outcome=FAILED, detail=f"prompt_async: HTTP {answer.status}")
        return result

    def _read_turn(self, inbox: Inbox, turn: Turn, session: str, state: _TurnState) -> Result:
        """The session's events until it is idle again. A token is a text delta; the turn
        ended as its last assistant message says (finished, or its error), or as the cancel
        asked for (``MessageAbortedError`` after the abort went). A stream that ends or
        breaks first fails the turn as the inbox says."""
        cancel_sent, finished = False, False
        error: dict | None = None
        for event in inbox:
            turn.arrived(len(event.data))
            try:
                frame = json.loads(event.data)
            except ValueError:
                return turn.failed(BAD_FRAME)
            props = frame.get("properties") if isinstance(frame, dict) else None
            if not isinstance(props, dict):
                return turn.failed(BAD_FRAME)
            if props.get("sessionID") != session:
                continue
            kind = frame.get("type")
            if kind == "message.part.delta":
                if props.get("field") == "text" and props.get("delta"):
                    turn.token()
                    if turn.attempt.cancel and not cancel_sent:
                        cancel_sent = True
                        failed = cancel_asked(self.http, self._abort_call(session), (200,))
                        if failed is not None:
                            return turn.failed(failed.detail, failed.status)
            elif kind == "message.updated":
                info = props.get("info")
                if isinstance(info, dict) and info.get("role") == "assistant":
                    finished = finished or info.get("finish") is not None
                    error = info.get("error") or error
            elif kind == "session.error":
                error = props.get("error") or error
            elif kind == "session.idle":
                state.ended = True
                return _ended(turn, cancel_sent, finished, error)
        return turn.failed(inbox.why)

    def _session_for(self, attempt: Attempt) -> str:
        """The session this turn runs in, held by it: the conversation's own (a users-mode
        user's, or one an open arrival continues), waited for while an earlier turn of it is
        still running (inside this turn's time: a person waits for the answer); else a fresh
        one made ahead, or made now (after ``attempt.sent``) when none is left."""
        if self._sessions is None:
            raise DialectError("opencode: a turn needs sessions, which sign-in sets up")
        own = attempt.conversation
        if own is not None and own.id is not None:
            if self._turns.setdefault(own.id, Semaphore()).locked():
                attempt.sent()
            self._turns[own.id].acquire()
            return own.id
        session = self._sessions.take()
        if session is None:
            attempt.sent()
            session = self._sessions.make()
        if own is not None:
            own.id = session
            self._turns.setdefault(session, Semaphore()).acquire()
        return session

    def _settle(self, attempt: Attempt, session: str, ended: bool) -> None:
        """After a turn: a session whose turn did not end as the server said may still be
        busy, so it is aborted (in the background: the sample is already decided) and never
        given another message; a user then gets a new one for its next turn."""
        if session in self._turns:
            self._turns[session].release()
        if ended:
            return
        gevent.spawn(self._abort, session)
        self._turns.pop(session, None)
        if attempt.conversation is not None and attempt.conversation.id == session:
            attempt.conversation.id = None

    def _abort(self, session: str) -> None:
        with contextlib.suppress(Exception):
            self.http.send(self._abort_call(session), ABORT_TIMEOUT_S)

    def _abort_call(self, session: str) -> HttpCall:
        return HttpCall("POST", f"/session/{in_path(session)}/abort", b"", self.auth)

    def _message_call(self, session: str, route: str, text: str) -> HttpCall:
        body = {"model": self._model, "parts": [{"type": "text", "text": text}]}
        path = f"/session/{in_path(session)}/{route}"
        return HttpCall("POST", path, json.dumps(body).encode(), self._json)


class _TurnState:
    """Whether a streamed turn's session is known to be idle again (its turn ended there, or
    nothing reached it), so it may be given another message."""

    def __init__(self) -> None:
        self.ended = True


def _ended(turn: Turn, cancel_sent: bool, finished: bool, error: object) -> Result:
    """How a turn whose session went idle ended."""
    if isinstance(error, dict):
        named = held(json.dumps(error).encode(), ERROR)
        name = "" if isinstance(named, str) else named.name
        if name == ABORTED:
            return turn.ended(CANCELLED) if cancel_sent else turn.failed(STOPPED_UNASKED)
        said = named if isinstance(named, str) else named.words()
        return turn.failed(f"error frame: {words(said)}")
    if finished:
        # A cancel that reached a turn already finished: it ended as it ended.
        return turn.ended(OK)
    return turn.failed("turn ended without an answer")


def refusal(status: int, body: bytes) -> Result:
    """What the status alone says (2xx ok, 429 shed, else failed), a failure in the server's
    words (``{"name", "data": {"message"}}``) as ``HTTP 404: NotFoundError: <message>``."""
    result = classify(status, len(body))
    if result.outcome != FAILED:
        return result
    named = held(body, ERROR)
    if not isinstance(named, str) and named.name:
        result = result._replace(detail=f"HTTP {status}: {words(named.words())}")
    return result


# What each workload becomes on this platform, in the report's mix (CONTRACT.md has the rest).
OFFERS = {
    "api_read": "GET /session?limit=20 or /session/status",
    "chat_stream": "POST /session/{id}/prompt_async, read on GET /event (SSE); "
    "/session/{id}/abort to cancel",
    "agent_run": "POST /session/{id}/message (answered when the turn ends)",
    "rag_query": "GET /find?pattern= (opencode's text search, ripgrep, over the project folder)",
}
# What opencode does not offer, and why (the report says it).
NOT_OFFERED = {
    "ingest": "it takes no document upload (it searches the files of its project folder)",
    "trigger_fire": "it takes no signed webhook and accepts no work for later",
}
