"""The seam between what a workload exercises and how one platform spells it on the wire.

The core drives this seam, so the core owns its types (Dialect, Attempt, Turn, the
names a broken turn is given, what a preflight found, the Platform record); a
platform package under ``workloads/`` implements them and the core never imports
one.

The six workloads are defined once, by what they exercise; a dialect turns "an
api_read", "a chat turn, cancelled after the first token or not", ... into
requests for one platform. Another platform (opencode, a team's own API) is one
package exporting one ``Platform`` record, not a fork of the generator: the
record's parts are typed here (the Dialect class, the ``RunPreflight``,
``SeedCommand`` and ``FollowUpAccepted`` protocols, the fixture part's
dataclass), so mypy holds every platform to the signatures the runner calls,
and tests/test_platform_contract.py holds every registered record to them at run
time.
The dispatcher owns the clock: a dialect calls ``attempt.sent()`` at the moment
its request leaves, and returns a Result; it never catches timeouts. A dialect
also judges each answer against its platform's contract (a 2xx with the wrong
body is a failure) and notes which arrivals the platform accepted for later
work (a 202), so the platform's follower can find out what became of them.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from engine.followups import FollowUp
from engine.http import (
    BACKSTOP_TIMEOUT_S,
    CLOSED_IN_BODY,
    Answer,
    ExchangeError,
    HttpCall,
    HttpTransport,
    StreamedAnswer,
    classify,
    failure_detail,
)
from engine.samples import FAILED, Result
from inputs.fixture import Fixture
from inputs.scenario import WORKLOADS

if TYPE_CHECKING:
    # typeshed's "any dataclass": what fixture.read_seeded reads a platform's part into.
    from _typeshed import DataclassInstance

# The platform's words are kept to this many characters: enough to say what broke,
# short enough for a table cell.
WORDS_MAX = 80
# Ids in a message would make every failure its own group; they read as <id>.
_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_SPACE = re.compile(r"\s+")

# How a chat turn that broke is named, in the same words on every platform:
# the platform ended the stream in good order (a WebSocket close frame, the end of
# the event stream's body) without the turn's final frame,
STREAM_ENDED = "stream ended before complete"
# the connection closed (a FIN) without that, or was reset (an RST),
CONNECTION_CLOSED = "connection closed before complete"
CONNECTION_RESET = "connection reset before complete"
# a frame or event that is not a JSON object, a stop (or cancel) nobody asked for.
BAD_FRAME = "bad frame: not a JSON object"
STOPPED_UNASKED = "stopped unasked"

# Work a platform accepted for later, as the dialect notes it: (arrival index, workload, the
# platform's reference to it), followed after the run by the platform's FollowUpAccepted.
Accepted = tuple[int, str, str]


@dataclass
class Attempt:
    """One arrival being served: its global index and the dispatcher's clock hooks."""

    index: int
    cancel: bool
    now: Callable[[], float]
    sent: Callable[[], float]
    # A users-mode user's own state, kept across its requests (a chat user's conversation);
    # None in open arrival, where every arrival is a stranger.
    session: dict | None = None


class Turn:
    """A chat turn being read: how far it got (tokens, bytes, time to first token), so that a
    turn that breaks says so as well as how it broke, on every platform alike."""

    def __init__(self, attempt: Attempt, sent: float, status: int):
        self.attempt, self.sent, self.status = attempt, sent, status
        self.tokens, self.received = 0, 0
        self.ttft_ms: float | None = None

    def token(self) -> None:
        """A token arrived; the first one's time from the send is the time to first token."""
        self.tokens += 1
        if self.ttft_ms is None:
            self.ttft_ms = (self.attempt.now() - self.sent) * 1000

    def ended(self, outcome: str) -> Result:
        """The turn ended as the platform promised (ok, or cancelled as asked)."""
        return Result(self.status, outcome, "", self.received, self.tokens, self.ttft_ms)

    def failed(self, detail: str, status: int | None = None) -> Result:
        """The turn failed, named by ``detail``, with what it got so far."""
        status = self.status if status is None else status
        return Result(status, FAILED, detail, self.received, self.tokens, self.ttft_ms)


class Dialect(ABC):
    """How one platform is signed in to and how each workload becomes requests.

    Every dialect is built as the load process builds it: ``(fixture, base_url, run_id,
    http)``. A platform's own constructor takes exactly these (the contract test holds it
    to them) and reads its part of the fixture there, so a missing field stops the run
    before sign-in.
    """

    def __init__(self, fixture: Fixture, base_url: str, run_id: str, http: HttpTransport):
        self.fixture = fixture
        # The API's address as the run was given it (--host); ``http`` is bound to the same,
        # resolved once. A connection the transport does not carry (a WebSocket) starts here.
        self.base_url = base_url
        self.run_id = run_id
        self.http = http
        self._accepted: list[Accepted] = []

    @abstractmethod
    def sign_in(self, email: str, password: str) -> None:
        """Sign in once for this process; keep the credential in memory only."""

    @abstractmethod
    def call(self, workload: str, k: int) -> HttpCall:
        """The request for arrival k of a plain-HTTP workload (everything but chat_stream)."""

    @abstractmethod
    def chat_turn(self, attempt: Attempt, timeout_s: float) -> Result:
        """One streamed chat turn; with ``attempt.cancel`` it stops after the first token."""

    def exchange(self, workload: str, attempt: Attempt) -> AbstractContextManager[HttpCall]:
        """The request of a plain-HTTP workload's arrival, held for as long as it is answered:
        by default ``call``'s, holding nothing. A platform whose request needs something of
        its own for the exchange (opencode: a session, which must run one turn at a time)
        takes it on entry and settles it on exit, however the exchange ended (answered,
        timed out, broken), so the next arrival never finds it busy."""
        return nullcontext(self.call(workload, attempt.index))

    def ready(self, rates: Mapping[str, float]) -> None:
        """The plan as this process will offer it: per workload, its share of the plan's highest
        rate (arrivals a second; 0 in users mode). A platform that makes something ahead of
        its arrivals (opencode: a fresh session for each) sizes that here; the default makes
        nothing. Called when the plan arrives or changes, and must not block."""
        del rates

    def answer(self, workload: str, k: int, status: int, body: bytes) -> Result:
        """What the answer to arrival k means. This default trusts the status alone; a
        platform's dialect checks the body against its contract. Work the platform accepts
        for later is noted here with ``accept`` and followed after the run, never waited
        for: the sample is the platform's answer, on every platform alike."""
        return classify(status, len(body))

    def accept(self, k: int, workload: str, ref: str) -> None:
        """Note that the platform accepted arrival k for later work, known to it as ``ref``."""
        self._accepted.append((k, workload, ref))

    def take_accepted(self) -> list[Accepted]:
        """The accepted arrivals noted since the last call: (index, workload, ref)."""
        taken, self._accepted = self._accepted, []
        return taken


def error_frame(data: object) -> str:
    """``error frame: <message>``, the reason a chat turn failed as the platform gave it."""
    message = data.get("message") if isinstance(data, dict) else None
    return f"error frame: {words(str(message))}" if message else "error frame"


def broken_stream(exc: ExchangeError) -> str:
    """How a streamed turn whose body broke is named: the connection closed (a FIN inside
    the body), else the stream was not one (a bad chunk, a line past the bound)."""
    if exc.detail == CLOSED_IN_BODY:
        return CONNECTION_CLOSED
    return f"bad event stream: {words(exc.detail)}"


def redirected(answer: Answer) -> Result:
    """A 3xx, failed and named by where it pointed (``HTTP 302 to /login``): the kit never
    follows one, since that would send the request a second time, elsewhere."""
    if answer.location is None:
        return Result(answer.status, FAILED, f"HTTP {answer.status}, no Location", len(answer.body))
    detail = f"HTTP {answer.status} to {words(answer.location)}"
    return Result(answer.status, FAILED, detail, len(answer.body))


def event_stream_turn(
    http: HttpTransport,
    call: HttpCall,
    attempt: Attempt,
    timeout_s: float,
    refused: Callable[[int, bytes], Result],
    read: Callable[[StreamedAnswer, Turn], Result],
) -> Result:
    """A chat turn streamed as server-sent events on the kit's own connection (agno,
    LangGraph): a 3xx is ``redirected``, another status than 200 is ``refused`` in the
    platform's words, and a 200's events are ``read`` by the platform's dialect. How the
    body breaks is named here, alike on every such platform: a reset, a closed connection
    or a bad stream; a break before the status line as the HTTP transport names it."""
    sent = attempt.sent()
    try:
        with http.stream(call, socket_backstop_s(timeout_s)) as answer:
            if 300 <= answer.status < 400:
                return redirected(Answer(answer.status, b"", answer.location))
            if answer.status != 200:
                return refused(answer.status, answer.read())
            turn = Turn(attempt, sent, 200)
            try:
                return read(answer, turn)
            except (ConnectionResetError, BrokenPipeError):
                return turn.failed(CONNECTION_RESET)
            except ExchangeError as exc:
                return turn.failed(broken_stream(exc))
    except ExchangeError as exc:
        return Result(0, FAILED, exc.detail)


def cancel_asked(http: HttpTransport, call: HttpCall, accepted: tuple[int, ...]) -> Result | None:
    """Ask the platform to cancel a streamed run with ``call``: None when it answered one of
    ``accepted``, else what went wrong, named as the cancel's (``cancel: HTTP 500``), not
    mistaken for the stream's own break."""
    try:
        status, body, _ = http.send(call)
    except Exception as exc:
        return Result(0, FAILED, f"cancel: {failure_detail(exc)}")
    if status in accepted:
        return None
    return Result(status, FAILED, f"cancel: HTTP {status}", len(body))


def socket_backstop_s(timeout_s: float) -> float:
    """A chat socket's own timeout: a backstop only, well past the turn's timeout, so that the
    dispatcher's deadline (counted from the send) always ends a silent turn as ``timed out``
    instead of racing it and leaving a failure named by the socket's exception."""
    return max(BACKSTOP_TIMEOUT_S, 2 * timeout_s)


def words(text: str) -> str:
    """The platform's words, on one line, ids masked, trimmed to WORDS_MAX characters."""
    text = _ID.sub("<id>", _SPACE.sub(" ", text).strip())
    return text if len(text) <= WORDS_MAX else text[: WORDS_MAX - 3].rstrip() + "..."


class DialectError(RuntimeError):
    """The platform refused something the run cannot go without (sign-in); one line."""


class PreflightError(Exception):
    """The deployment cannot do the work; the message is one line with the fix."""


@dataclass(frozen=True)
class PreflightResult:
    """What preflight saw: enough for the summary line, and whether trigger_fire can run.

    A check is made only for a workload the run offers (``offered``): a search for
    rag_query or ingest, a run for agent_run or chat_stream, a signed delivery for
    trigger_fire. What it did not check is None, never a pass.
    """

    api_url: str
    agent_id: str
    # How the platform holds the agent: "published" (AgenticOS), "served" (agno).
    agent_state: str
    offered: frozenset[str]
    search_results: int | None
    run_id: str | None
    run_seconds: float | None
    # None when a signed delivery was accepted or none was tried (trigger_fire not offered),
    # else why the run leaves trigger_fire out.
    trigger_skip_reason: str | None
    # How long a probe upload took to be processed, where the preflight makes one.
    upload_seconds: float | None = None
    # What that probe was, in the summary's words ("an upload", "a background run").
    upload_kind: str = "an upload"

    @property
    def trigger_fire_ready(self) -> bool:
        """Whether the run can offer trigger_fire: it asks for it and a delivery was accepted."""
        return "trigger_fire" in self.offered and self.trigger_skip_reason is None

    @property
    def skipped(self) -> dict[str, str]:
        """Workloads the run must leave out, each with the reason the report gives."""
        return (
            {} if self.trigger_skip_reason is None else {"trigger_fire": self.trigger_skip_reason}
        )

    def summary(self) -> str:
        """The one line the command prints when the deployment is ready."""
        parts = [f"preflight: ok; {self.api_url} agent {self.agent_id} {self.agent_state}"]
        if self.search_results is not None:
            parts.append(f"search found {self.search_results}")
        if self.run_id is not None and self.run_seconds is not None:
            parts.append(f"run {self.run_id} completed in {self.run_seconds:.2f} s")
        if self.upload_seconds is not None:
            parts.append(f"{self.upload_kind} completed in {self.upload_seconds:.2f} s")
        if self.trigger_fire_ready:
            parts.append("trigger_fire ready")
        elif self.trigger_skip_reason is not None:
            parts.append(f"trigger_fire will be skipped: {self.trigger_skip_reason}")
        unchecked = sorted(set(WORKLOADS) - self.offered)
        if unchecked:
            parts.append(f"not checked, not offered: {', '.join(unchecked)}")
        return "; ".join(parts)


class RunPreflight(Protocol):
    """A platform's preflight, as the runner and ``python -m workloads.<platform>.preflight``
    call it: (fixture, email, password, the workloads the run offers) -> what it saw, whose
    ``skipped`` maps workload -> reason; PreflightError (one line) when the deployment cannot
    do that work. A platform without users takes the password as its key and ignores email."""

    def __call__(
        self, fixture: Fixture, email: str, password: str, offered: frozenset[str], /
    ) -> PreflightResult: ...


class SeedCommand(Protocol):
    """A platform's seed command line (``python -m workloads.<platform>.seed ARGS``, ``make
    seed``, ``loadkit seed``): builds or finds what the fixture names and writes it; 0, or 1
    with one line (2 for a bad option). ``prog`` is how its usage and refusals name it."""

    def __call__(self, argv: list[str], /, prog: str = ...) -> int: ...


class FollowUpAccepted(Protocol):
    """After the run, what became of the work the platform accepted for later: one FollowUp
    per ``accepted`` arrival, polled for at most ``grace_s``. Called on the master, which
    writes them to followups.csv; what the platform cannot show is "not verifiable"."""

    def __call__(
        self,
        fixture: Fixture,
        email: str,
        password: str,
        /,
        *,
        run_id: str,
        start_epoch: float,
        accepted: list[Accepted],
        grace_s: float,
    ) -> list[FollowUp]: ...


@dataclass(frozen=True, kw_only=True)
class Platform:
    """One platform, whole: what its package exports as ``PLATFORM`` and the registry
    (workloads/platforms.py) hands the runner, the seed and preflight commands and the tests.
    Each part is typed, so a platform that spells one differently fails ``make lint``."""

    # The name the registry and the fixture's ``platform`` know it by.
    name: str
    # How each workload becomes requests; built as Dialect.__init__ says.
    dialect: type[Dialect]
    # The fixture's platform part (``Fixture.seeded``) as a dataclass, read by
    # fixture.read_seeded: what the seed writes and the dialect, preflight and follow-up read.
    seeded: type[DataclassInstance]
    seed: SeedCommand
    run_preflight: RunPreflight
    # None when the platform shows nothing of accepted work (it is then "not verifiable").
    follow_up: FollowUpAccepted | None
    # What each workload it offers becomes on this platform, for the report's mix.
    requests: Mapping[str, str]
