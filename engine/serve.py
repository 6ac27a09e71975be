"""Serve one arrival: the dialect's request(s), a deadline from the moment it leaves, an outcome.

The timeout starts when the request is sent, never while the arrival waited for
a pool slot, so the generator's own queue is reported as lateness and never as
the server's timeouts. The dialect reads each answer (a 200 can still be a failure,
a 202 may be followed to its end) inside that same timeout; a redirect is never
followed (that would send the request again) and fails named by its Location, on
every platform alike. Anything the network raises becomes a failure named by what
happened (the transport's words, else the exception's class); nothing is retried. A 429
says whether it asked the caller to come back later (``Retry-After``), as a platform that
sheds load politely and one that only refuses differ.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.clock import RunClock
from engine.deadlines import DeadlinePassed, Deadlines
from engine.dialect_kit import redirected
from engine.http import HttpTransport
from engine.http1 import Answer, failure_detail
from engine.samples import FAILED, SHED, TIMED_OUT, TIMEOUT, Result
from engine.seam import Attempt, Conversation, Dialect

CHAT = "chat_stream"


def serve(
    dialect: Dialect,
    http: HttpTransport,
    clock: RunClock,
    deadlines: Deadlines,
    workload: str,
    index: int,
    cancel: bool,
    timeout_s: float,
    on_sent: Callable[[float], None],
    conversation: Conversation | None = None,
) -> Result:
    """How arrival ``index`` ended; ``on_sent`` gets the run time at which its request left,
    and ``deadlines`` holds it to ``timeout_s`` from that moment.

    ``conversation`` is a users-mode user's own, or in open arrival the one a chat turn
    continues (engine/conversations.py); None for a stranger.
    """
    armed: list | None = None
    sent_at: float | None = None

    def sent() -> float:
        """The run time the arrival's first request left; its deadline runs from then. A
        dialect whose arrival sends something of its own first (opencode making the session a
        turn runs in) calls it then; later calls answer the same time."""
        nonlocal armed, sent_at
        if sent_at is None:
            sent_at = clock.now()
            on_sent(sent_at)
            armed = deadlines.arm(timeout_s)
        return sent_at

    try:
        attempt = Attempt(index, cancel, clock.now, sent, conversation)
        if workload == CHAT:
            return dialect.chat_turn(attempt, timeout_s)
        with dialect.exchange(workload, attempt) as call:
            sent()
            answer = http.send(call, timeout_s=None)
            if 300 <= answer.status < 400:
                return redirected(answer)
            result = dialect.answer(workload, index, answer.status, answer.body)
            return said_retry_after(result, answer) if result.outcome == SHED else result
    except DeadlinePassed:
        return Result(0, TIMEOUT, TIMED_OUT)
    except Exception as exc:
        return Result(0, FAILED, failure_detail(exc))
    finally:
        if armed is not None:
            deadlines.disarm(armed)


def said_retry_after(result: Result, answer: Answer) -> Result:
    """A shed answer's detail with its Retry-After, or that it had none."""
    wait = answer.retry_after
    said = f"Retry-After {wait}" if wait is not None else "no Retry-After"
    return result._replace(detail=f"{result.detail}, {said}" if result.detail else said)
