"""The contract between the core and a platform: the types the core drives (Dialect, Attempt,
Turn, the conversation a turn continues, what a preflight found, the Platform record and
what its skeleton calls). A platform package, the kit's own or an installed distribution
of a team's, implements them and the core never imports one; mypy holds the built-ins to
these signatures and ``loadkit check-platform`` holds any registered record to them.

A dialect turns each workload into requests for one platform and judges each answer
against that platform's contract; the dispatcher owns the clock (a dialect calls
``attempt.sent()`` as its request leaves and never catches a timeout). What is not the
platform's own (reaching the API, signing in, checking the credential, seeding's command
line, preflight's default, the follow-up's scaffolding) is the kit's skeleton, written
once in ``workloads/``; a platform fills in only the parts named here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Generic, Protocol, TypeVar

from engine.agent_plan import AgentPlan, AgentTool
from engine.followups import FollowUp
from engine.http import HttpCall, HttpTransport
from engine.samples import FAILED, Result, classify
from engine.sign_in import NO_SIGN_IN, Credential, SignIn
from inputs.fixture import Fixture, read_seeded
from inputs.workload import WORKLOADS

if TYPE_CHECKING:
    # typeshed's "any dataclass": what fixture.read_seeded reads a platform's part into.
    from _typeshed import DataclassInstance

# A platform's part of the fixture, as its own dataclass.
S = TypeVar("S", bound="DataclassInstance")
S_co = TypeVar("S_co", bound="DataclassInstance", covariant=True)
S_contra = TypeVar("S_contra", bound="DataclassInstance", contravariant=True)

# Work a platform accepted for later, as the dialect notes it: (arrival index, workload, the
# platform's reference to it), followed after the run by the platform's FollowUpAccepted.
Accepted = tuple[int, str, str]


@dataclass(slots=True)
class Conversation:
    """One conversation's state, shared by its turns (a users-mode user's, or in open arrival
    the one a continuing chat turn joins): how many turns it has had, counted by the kit, and
    the platform's id for it once the platform has one (a thread, a session, a context)."""

    turns: int = 0
    id: str | None = None

    def begin(self) -> None:
        """Start over: the next turn opens a new conversation."""
        self.turns, self.id = 0, None


@dataclass
class Attempt:
    """One arrival being served: its global index and the dispatcher's clock hooks."""

    index: int
    cancel: bool
    now: Callable[[], float]
    sent: Callable[[], float]
    # The conversation a chat turn continues, or a users-mode user's own; None for a stranger.
    conversation: Conversation | None = None


class Turn:
    """A streamed turn being read: how far it got (events, tokens, bytes) and when, so that a
    turn that breaks says so as well as how it broke, on every platform alike.

    A turn keeps a few numbers, not every token's time: the first event of any kind (an
    A2A task's first state, AG-UI's RUN_STARTED: the platform took the turn), the first
    and the last token, and the longest gap between two tokens (a stall). From those the
    reports derive what LLM-serving teams read (GuideLLM, vLLM's benchmark): inter-token
    latency, (last - first token) / (tokens - 1), and time per output token.
    """

    def __init__(self, attempt: Attempt, sent: float, status: int):
        self.attempt, self.sent, self.status = attempt, sent, status
        self.tokens, self.received = 0, 0
        self.first_event_ms: float | None = None
        self.ttft_ms: float | None = None
        self.stall_ms: float | None = None
        # Run time of the last token so far.
        self._last: float | None = None

    def arrived(self, size: int) -> None:
        """An event (or a frame) of ``size`` bytes arrived; the first one's time from the send
        is the time to first event."""
        self.received += size
        if self.first_event_ms is None:
            self.first_event_ms = (self.attempt.now() - self.sent) * 1000

    def token(self) -> None:
        """A token arrived; the first one's time from the send is the time to first token,
        and each later one's gap from the one before may be the turn's longest."""
        now = self.attempt.now()
        self.tokens += 1
        if self._last is None:
            self.ttft_ms = (now - self.sent) * 1000
        else:
            gap = (now - self._last) * 1000
            if self.stall_ms is None or gap > self.stall_ms:
                self.stall_ms = gap
        self._last = now

    @property
    def last_token_ms(self) -> float | None:
        """The last token's time from the send (None before the first)."""
        return None if self._last is None else (self._last - self.sent) * 1000

    def ended(self, outcome: str) -> Result:
        """The turn ended as the platform promised (ok, or cancelled as asked)."""
        return self._result(self.status, outcome, "")

    def failed(self, detail: str, status: int | None = None) -> Result:
        """The turn failed, named by ``detail``, with what it got so far."""
        return self._result(self.status if status is None else status, FAILED, detail)

    def _result(self, status: int, outcome: str, detail: str) -> Result:
        return Result(
            status,
            outcome,
            detail,
            self.received,
            self.tokens,
            self.ttft_ms,
            self.first_event_ms,
            self.last_token_ms,
            self.stall_ms,
        )


@dataclass(frozen=True)
class Deployment(Generic[S]):
    """What a dialect is built on: the deployment as seeded (its platform's part already read
    and checked as the record's dataclass), the address the run was given, and the run."""

    fixture: Fixture
    seeded: S
    # The API's address as the run was given it (--host, else the fixture's api_url).
    base_url: str
    run_id: str


class Dialect(ABC, Generic[S]):
    """How one platform's workloads become requests, and what its answers mean.

    The kit builds it as every load process does, ``Dialect(deployment, http)``, then signs
    in (``sign_in``, a class attribute: none, a key in a header, or the platform's own),
    checks the credential with ``check`` and hands the headers to ``signed_in``. Load
    traffic goes through ``self.http`` only (``send``; ``stream`` for server-sent events),
    never a client of the platform's own.
    """

    # The API's unauthenticated "are you there" path (None: the platform has none; reaching
    # it is then the credential check's first request).
    HEALTH: ClassVar[str | None] = None
    # How the run signs in (engine/sign_in.py).
    sign_in: ClassVar[SignIn] = NO_SIGN_IN

    def __init__(self, deployment: Deployment[S], http: HttpTransport):
        self.deployment = deployment
        self.seeded: S = deployment.seeded
        # --host; ``http`` is bound to the same, resolved once. A connection the transport
        # does not carry (a WebSocket) starts here.
        self.base_url = deployment.base_url
        self.run_id = deployment.run_id
        self.http = http
        # What every request carries once signed in (kept in memory only).
        self.auth: dict[str, str] = {}
        self._accepted: list[Accepted] = []
        # The prompts of chat turns and agent runs, with the kit's plan of the loop; the load
        # process gives the run's (the scenario's shape, the platform's tool) after building.
        self.agent_plan = AgentPlan(deployment.run_id)

    def check(self) -> HttpCall | None:
        """One cheap request that needs the credential, sent by the kit after sign-in with
        ``auth`` added: a 401 or 403 is the credential refused. None: nothing to check."""
        return None

    def signed_in(self, auth: Mapping[str, str], secret: str) -> None:
        """The kit signed in: ``auth`` goes on every request. A platform that makes requests
        ahead (its list reads) or derives something from the credential (a webhook's
        signing secret) does so here."""
        del secret
        self.auth = dict(auth)

    @property
    def json_headers(self) -> dict[str, str]:
        """``auth`` and a JSON body's Content-Type."""
        return {**self.auth, "Content-Type": "application/json"}

    @abstractmethod
    def call(self, workload: str, k: int) -> HttpCall:
        """The request for arrival k of a plain-HTTP workload (everything but chat_stream);
        ValueError for a workload it does not serve."""

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


class DialectError(RuntimeError):
    """The platform refused something the run cannot go without (sign-in); one line."""


class PreflightError(Exception):
    """The deployment cannot do the work; the message is one line with the fix."""


class SeedError(Exception):
    """Seeding cannot continue; the message is one line naming what and the fix."""


class Skip(Exception):
    """An optional probe's workloads cannot run on this deployment and the run goes on
    without them; the message is the reason the report gives."""


@dataclass(frozen=True)
class PreflightResult:
    """What preflight saw, in the summary's words, and which workloads the run leaves out.

    A check is made only for a workload the run ``offered``; a workload it did not check is
    said to be unchecked, never passed. Nothing here names one platform's parts: each
    platform's checks say what they saw.
    """

    api_url: str
    # What serves the run's work, as the platform holds it ("agent <id> published").
    subject: str
    offered: frozenset[str]
    # What each check saw, in the order made ("search found 3", "run <id> completed in 0.2 s").
    seen: tuple[str, ...] = ()
    # Workloads a check could have left out and found ready (trigger_fire's signed delivery).
    ready: tuple[str, ...] = ()
    # Workloads the run leaves out, each with the reason the report gives.
    skipped: Mapping[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        """The one line the command prints when the deployment is ready."""
        parts = [f"preflight: ok; {self.api_url} {self.subject}", *self.seen]
        parts += [f"{name} ready" for name in self.ready]
        parts += [f"{name} will be skipped: {why}" for name, why in self.skipped.items()]
        unchecked = sorted(set(WORKLOADS) - self.offered)
        if unchecked:
            parts.append(f"not checked, not offered: {', '.join(unchecked)}")
        return "; ".join(parts)


@dataclass(frozen=True)
class Setup(Generic[S_co]):
    """A signed-in deployment outside the load, as the kit hands it to a platform's probes
    and follower: the fixture and its platform part, the credential (in memory), the
    headers sign-in made of it, and one arrival of a workload served through the run's own
    dialect and transport, judged as a sample would be."""

    fixture: Fixture
    seeded: S_co
    email: str
    secret: str
    auth: Mapping[str, str]
    one: Callable[[str], Result]


@dataclass(frozen=True)
class Probe:
    """One real request of the kind the run will make, made only when the run offers a
    workload in ``needed_by``. ``check`` returns what it saw in the summary's words ("" for
    nothing to add) or raises PreflightError, one line with the fix. An ``optional`` probe may
    raise Skip instead, leaving its workloads out; when it does not, they are said ready."""

    needed_by: frozenset[str]
    check: Callable[[], str]
    optional: bool = False


# A platform's preflight beyond the kit's reach and credential check: its probes, made while
# the block is open (a setup client opened for them is closed on the way out).
Probes = Callable[[Setup[S]], AbstractContextManager[Sequence[Probe]]]


@dataclass(frozen=True)
class SeedOption:
    """A seed option of the platform's own (``--agent ID``): its flag, help and default; a
    ``switch`` takes no value and is True when given."""

    flag: str
    help: str
    default: str | None = None
    switch: bool = False

    @property
    def dest(self) -> str:
        """Its name in SeedSetup.own: the flag without dashes, ``_`` for ``-``."""
        return self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class SeedSetup:
    """What seeding is given: the options as the command line said them (the platform's own
    under ``own``), the credential (in memory only) and the headers the platform's sign-in
    made of it before anything was seeded (``auth``: a setup client sends these)."""

    api_url: str
    stub_url: str
    documents: int
    email: str
    secret: str
    # Seconds to keep asking before the API answers (0: ask once).
    wait_s: float
    own: Mapping[str, str | bool | None] = field(default_factory=dict)
    auth: Mapping[str, str] = field(default_factory=dict)
    # A check's seed (``loadkit check-platform``), kept in memory: it must leave alone what a
    # fixture on disk names (AgenticOS recreates its trigger; a check makes one of its own).
    check: bool = False


@dataclass(frozen=True)
class Seeding(Generic[S]):
    """What a platform's seed makes or finds (``make``: the platform's part of the fixture,
    SeedError in one line when it cannot), where the platform listens by default and the
    options of its own. The command around it (``loadkit seed``) is the kit's."""

    make: Callable[[SeedSetup], S]
    api_url: str
    options: tuple[SeedOption, ...] = ()
    # What --stub-url is to this platform, for --help.
    stub_help: str = "the stub as the platform reaches it, for the record"


class FollowUpAccepted(Protocol[S_contra]):
    """After the run, what became of the work the platform accepted for later: one FollowUp
    per ``accepted`` arrival, polled for at most ``grace_s``. Called on the master, which
    writes them to followups.csv; what the platform cannot show is "not verifiable"."""

    def __call__(
        self,
        setup: Setup[S_contra],
        /,
        *,
        run_id: str,
        start_epoch: float,
        accepted: list[Accepted],
        grace_s: float,
    ) -> list[FollowUp]: ...


def _served(seeded: object) -> str:
    del seeded
    return "served"


@dataclass(frozen=True, kw_only=True)
class Platform(Generic[S]):
    """One platform, whole: what its package exports as ``PLATFORM`` and the registry
    (workloads/platforms.py) hands the runner, the seed and preflight commands, ``loadkit
    check-platform`` and the tests. Each part is typed, so a platform that spells one
    differently fails ``make lint`` (and ``loadkit check-platform``)."""

    # The name the registry and the fixture's ``platform`` know it by.
    name: str
    # How each workload becomes requests, and how the run signs in.
    dialect: type[Dialect[S]]
    # The fixture's platform part as a dataclass: what the seed makes and the dialect,
    # probes and follow-up read (``seeded_from``). A platform with nothing seeded has one
    # without fields.
    seeded: type[S]
    # What each workload it offers becomes on this platform, for the report's mix.
    offers: Mapping[str, str]
    # Every other workload, with the reason it is not offered (the report says it).
    not_offered: Mapping[str, str] = field(default_factory=dict)
    # What seeding makes; None: nothing (the part is the dataclass's defaults).
    seeding: Seeding[S] | None = None
    # Preflight's probes beyond reach and the credential; None: the kit's default (one
    # arrival of each offered agent workload, through the dialect).
    probes: Probes[S] | None = None
    # None when the platform shows nothing of accepted work (it is then "not verifiable").
    follow_up: FollowUpAccepted[S] | None = None
    # The one tool its agent is given for the loop (engine/agent_plan.py); None: the kit
    # gives it none, and a scenario with steps above 1 is refused before load.
    tool: AgentTool | None = None
    # What serves the work, for preflight's line ("agent <id> published").
    subject: Callable[[S], str] = _served
    # How its operator starts it, for a refusal when it does not answer ("make langgraph").
    started_by: str = ""

    def seeded_from(self, fixture: Fixture) -> S:
        """The fixture's part for this platform, checked against ``seeded``'s fields:
        FixtureError naming every field missing or wrong."""
        return read_seeded(self.seeded, fixture)

    def credential(self, seeded: S | None) -> Credential:
        """What LOAD_PASSWORD (and --email) are to this deployment."""
        return self.dialect.sign_in.asks(seeded)
