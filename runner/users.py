"""Users mode: the six workloads as weighted, closed-loop Locust users, one sample per request.

Open arrival answers "does the deployment hold this rate?"; users mode answers
the other question a platform team asks, "how many concurrent sessions before
latency bends?" (the Agent OS seed's ``sessions == concurrency`` bench). Each
workload is a Locust User class whose ``weight`` is its share, and each user
loops on its workload through the same dialect and the same ``serve`` the
dispatcher uses, so a request leaves exactly one sample with the same outcomes
and the same reports read it. A chat user keeps its own conversation, as a
person would. A run is in one mode only: ``run.json`` says which.

``UsersDriver`` stands where the open-arrival Dispatcher stands in a load
process (same methods), so the master's run, its drain and its records are the
ones open arrival uses; the users find the driver of the current run here.

Locust hands out whole users by weight, so a small share gets none below some
user count; ``unserved`` says which workloads a count leaves out and the count
that gives each its first user, asking Locust's own order, so the run can say so
before load instead of a workload silently not appearing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Protocol

import gevent
import gevent.event
from greenlet import greenlet
from locust import User, constant, task

from engine.clock import RunClock
from engine.deadlines import Deadlines
from engine.dispatcher import Dispatcher
from engine.run_record import USERS
from engine.samples import Result, recorded
from engine.schedule import Plan
from engine.seam import Conversation
from engine.serve import CHAT, serve
from engine.share import Share
from inputs.workload import WORKLOADS

# How long an idle user (no run yet, run over, or its workload left out) waits before asking again.
IDLE_S = 0.05

_active: UsersDriver | None = None


class Driver(Protocol):
    """What offers a load process's requests: the open-arrival Dispatcher, or users mode's
    UsersDriver, which stands where the dispatcher stands."""

    clock: RunClock
    offered: Counter[tuple[int, str]]

    @property
    def in_flight(self) -> int: ...
    def start(self) -> None: ...
    def update_plan(self, plan: Plan) -> None: ...
    def drain(self, deadline_s: float) -> None: ...
    def close(self, until_s: float | None) -> None: ...


def driver_class(mode: str) -> Callable[[Share], Driver]:
    """What offers a load process's requests in ``mode``: users, or the open-arrival dispatcher."""
    return UsersDriver if mode == USERS else Dispatcher


def current() -> UsersDriver | None:
    """The users driver of the run this process is in, None outside a users-mode run."""
    return _active


class UsersDriver:
    """Serves the requests this process's users make and records one Sample per request.

    Has the Dispatcher's interface (start, update_plan, drain, close, offered,
    in_flight, clock) so the load process runs either the same way. A request's
    segment is the plan segment (sweep step) in which it was sent; its due time
    is its send time, since a closed-loop user asks only when it is ready.
    """

    def __init__(self, share: Share):
        self.clock = clock = share.clock
        self.offered: Counter[tuple[int, str]] = Counter()
        self._slot = share.slot
        self._workers = share.workers
        self._plan = share.plan
        self._mix = mix = share.mix
        self._timeouts = share.timeouts
        self._dialect = share.dialect
        self._http = share.http
        self._on_sample = share.on_sample
        # A chat user's conversation has at most this many turns; then it starts the next.
        self._turns = share.conversations.turns
        bounds = (0.0, *mix.upper_bounds)
        self._served = {n for i, n in enumerate(mix.names) if bounds[i + 1] > bounds[i]}
        self._next = 0
        self._in_flight: dict[int, tuple[str, int, float]] = {}
        self._serving: dict[int, greenlet] = {}
        self._idle = gevent.event.Event()
        self._idle.set()
        self._closed = False
        self._deadlines = Deadlines(clock)

    @property
    def in_flight(self) -> int:
        """Requests sent by this process's users and not finished."""
        return len(self._in_flight)

    def start(self) -> None:
        """Let this process's users in: requests are served from the run's start time."""
        global _active
        _active = self

    def update_plan(self, plan: Plan) -> None:
        """Follow a changed plan (a run time set or ended)."""
        self._plan = plan

    def accepting(self) -> bool:
        """True while the run is on: started, not past the plan's end, not closed."""
        now = self.clock.now()
        end = self._plan.end_s
        return not self._closed and now >= 0 and (end is None or now < end)

    def serve(self, workload: str, conversation: Conversation) -> bool:
        """One request of ``workload`` for a user; False (nothing sent) when the run is not on."""
        if workload not in self._served or not self.accepting():
            return False
        index = self._next * self._workers + self._slot
        self._next += 1
        if workload == CHAT:
            if conversation.turns >= self._turns:
                conversation.begin()
            conversation.turns += 1
        now = self.clock.now()
        segment = self._segment_at(now)
        self.offered[segment, workload] += 1
        self._in_flight[index] = (workload, segment, now)
        self._serving[index] = gevent.getcurrent()
        self._idle.clear()
        sent: list[float] = []
        result = serve(
            self._dialect,
            self._http,
            self.clock,
            self._deadlines,
            workload,
            index,
            self._mix.cancels(index),
            self._timeouts.for_workload(workload),
            sent.append,
            conversation,
        )
        self._record(index, result, sent[0] if sent else None)
        return True

    def _segment_at(self, now: float) -> int:
        segments = self._plan.segments
        return next((n for n in range(len(segments) - 1, -1, -1) if segments[n].start_s <= now), 0)

    def _record(self, index: int, result: Result | None, sent_s: float | None) -> None:
        self._serving.pop(index, None)
        if self._closed or (entry := self._in_flight.pop(index, None)) is None:
            return
        workload, segment, due_s = entry
        self._on_sample(recorded(index, workload, segment, due_s, sent_s, self.clock.now(), result))
        if not self._in_flight:
            self._idle.set()

    def drain(self, deadline_s: float) -> None:
        """Wait for the plan's end, then for requests in flight until ``deadline_s``; close."""
        end = self._plan.end_s
        if end is not None:
            gevent.sleep(max(0.0, end - self.clock.now()))
        self._idle.wait(timeout=max(0.0, deadline_s - self.clock.now()))
        self.close(until_s=None)

    def close(self, until_s: float | None) -> None:
        """Stop serving now; requests still in flight are recorded as abandoned and their
        users' greenlets stopped."""
        global _active
        if self._closed:
            return
        serving = [g for g in self._serving.values() if g is not gevent.getcurrent()]
        for index in sorted(self._in_flight):
            self._record(index, None, None)
        self._closed = True
        # Like the dispatcher's pool: nothing of this run keeps working after it closed
        # (Locust would otherwise wait its stop timeout for users still in a request).
        gevent.killall(serving, block=False)
        if _active is self:
            _active = None
        self._deadlines.close()
        self._http.close()


class WorkloadUser(User):
    """A closed-loop user of one workload: asks again as soon as its answer is in."""

    abstract = True
    workload = ""
    wait_time = constant(0)

    def on_start(self) -> None:
        """A user's own conversation, kept across its turns."""
        self.conversation = Conversation()

    @task
    def one_request(self) -> None:
        """Serve one request of this user's workload, or wait while no run is on."""
        driver = current()
        if driver is None or not driver.serve(self.workload, self.conversation):
            gevent.sleep(IDLE_S)


def _user_class(workload: str) -> type[WorkloadUser]:
    name = "".join(part.title() for part in workload.split("_")) + "User"
    doc = f"Users mode: one session looping on {workload}."
    return type(name, (WorkloadUser,), {"workload": workload, "__doc__": doc, "abstract": False})


# One User class per workload, in the scenario's order; the locustfile exports them.
USER_CLASSES: dict[str, type[WorkloadUser]] = {w: _user_class(w) for w in WORKLOADS}
