"""The seam between what a workload exercises and how one platform spells it on the wire.

The six workloads are defined once, by what they exercise; a dialect turns "an
api_read", "a chat turn, cancelled after the first token or not", ... into
requests for one platform. Another platform (agno's AgentOS, opencode, a team's
own API) is one new module implementing this class, not a fork of the generator.
The dispatcher owns the clock: a dialect calls ``attempt.sent()`` at the moment
its request leaves, and returns a Result; it never catches timeouts. A dialect
also judges each answer against its platform's contract (a 2xx with the wrong
body is a failure) and notes which arrivals the platform accepted for later
work (a 202), so the platform's follower can find out what became of them.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

from engine.http import HttpCall, HttpTransport, classify
from engine.samples import Result
from workloads.fixture import Fixture

# The platform's words are kept to this many characters: enough to say what broke,
# short enough for a table cell.
WORDS_MAX = 80
# Ids in a message would make every failure its own group; they read as <id>.
_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_SPACE = re.compile(r"\s+")


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


class Dialect(ABC):
    """How one platform is signed in to and how each workload becomes requests."""

    def __init__(self, fixture: Fixture, run_id: str, http: HttpTransport):
        self.fixture = fixture
        self.run_id = run_id
        self.http = http
        self._accepted: list[tuple[int, str, str]] = []

    @abstractmethod
    def sign_in(self, email: str, password: str) -> None:
        """Sign in once for this process; keep the credential in memory only."""

    @abstractmethod
    def call(self, workload: str, k: int) -> HttpCall:
        """The request for arrival k of a plain-HTTP workload (everything but chat_stream)."""

    @abstractmethod
    def chat_turn(self, attempt: Attempt, timeout_s: float) -> Result:
        """One streamed chat turn; with ``attempt.cancel`` it stops after the first token."""

    def answer(self, workload: str, k: int, status: int, body: bytes) -> Result:
        """What the answer to arrival k means. This default trusts the status alone; a
        platform's dialect checks the body against its contract. Work the platform accepts
        for later is noted here with ``accept`` and followed after the run, never waited
        for: the sample is the platform's answer, on every platform alike."""
        return classify(status, len(body))

    def accept(self, k: int, workload: str, ref: str) -> None:
        """Note that the platform accepted arrival k for later work, known to it as ``ref``."""
        self._accepted.append((k, workload, ref))

    def take_accepted(self) -> list[tuple[int, str, str]]:
        """The accepted arrivals noted since the last call: (index, workload, ref)."""
        taken, self._accepted = self._accepted, []
        return taken


def words(text: str) -> str:
    """The platform's words, on one line, ids masked, trimmed to WORDS_MAX characters."""
    text = _ID.sub("<id>", _SPACE.sub(" ", text).strip())
    return text if len(text) <= WORDS_MAX else text[: WORDS_MAX - 3].rstrip() + "..."


class DialectError(RuntimeError):
    """The platform refused something the run cannot go without (sign-in); one line."""
