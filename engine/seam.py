"""The contract between the core and a platform: the types the core drives (Dialect, Attempt,
Turn, what a preflight found, the Platform record and its protocols). A platform package
under ``workloads/`` implements them and the core never imports one; mypy and
tests/test_platform_contract.py hold every registered record to these signatures.

A dialect turns each workload into requests for one platform and judges each answer
against that platform's contract; the dispatcher owns the clock (a dialect calls
``attempt.sent()`` as its request leaves and never catches a timeout).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from engine.agent_plan import AgentPlan, AgentTool
from engine.followups import FollowUp
from engine.http import (
    HttpCall,
    HttpTransport,
    classify,
)
from engine.samples import FAILED, Result
from inputs.fixture import Fixture
from inputs.scenario import WORKLOADS

if TYPE_CHECKING:
    # typeshed's "any dataclass": what fixture.read_seeded reads a platform's part into.
    from _typeshed import DataclassInstance

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
        # The prompts of chat turns and agent runs, with the kit's plan of the loop; the load
        # process gives the run's (the scenario's shape, the platform's tool) after building.
        self.agent_plan = AgentPlan(run_id)

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


class DialectError(RuntimeError):
    """The platform refused something the run cannot go without (sign-in); one line."""


class PreflightError(Exception):
    """The deployment cannot do the work; the message is one line with the fix."""


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
    # The one tool its agent is given for the loop (engine/agent_plan.py); None: the kit
    # gives it none yet, and a scenario with steps above 1 is refused before load.
    tool: AgentTool | None = None
