"""The open-arrival dispatcher: one process's share of the schedule, offered on time.

Each arrival is served by one of the process's long-lived runner greenlets, at
most this process's share of ``--connections`` at once, and never more than this
process can hold (open files, memory: ``process_connection_limit``), so a
lagging server makes arrivals late instead of making the generator fail with its
own OSErrors. The dispatch loop never waits for a response, only for the due
time and, when the bound is reached, for a free slot (which the samples show as
lateness: the run admits it turned closed instead of hiding it). Every arrival
taken off the schedule leaves exactly one sample: served, or abandoned when the
run ends with it still waiting or in flight. Nothing is recorded after ``close``.
"""

from __future__ import annotations

import logging
from collections import Counter

import gevent
import gevent.event
import gevent.lock
from gevent.hub import Waiter, get_hub

from engine.collector import LoadCollector
from engine.conversations import ConversationCursor
from engine.deadlines import Deadlines
from engine.limits import process_connection_limit, two_socket_share
from engine.samples import Result, recorded
from engine.schedule import Plan, SlotCursor
from engine.seam import Conversation
from engine.serve import CHAT, serve
from engine.share import Share

log = logging.getLogger(__name__)

# A dispatch due further ahead than this waits on the plan-change event, so a new rate
# interrupts it; a nearer one just sleeps (cheaper), being well inside any change's lead.
PLAN_WATCH_S = 0.1


class _Arrival:
    """An arrival taken off the schedule and not yet recorded."""

    __slots__ = ("conversation", "due_s", "index", "segment", "sent_s", "workload")

    def __init__(
        self,
        index: int,
        workload: str,
        segment: int,
        due_s: float,
        conversation: Conversation | None,
    ):
        self.index = index
        self.workload = workload
        self.segment = segment
        self.due_s = due_s
        self.sent_s: float | None = None
        # The conversation a continuing chat turn belongs to (engine/conversations.py).
        self.conversation = conversation

    def mark_sent(self, now: float) -> None:
        """Note the run time at which the request left."""
        self.sent_s = now


class Dispatcher:
    """Offers the arrivals ``slot, slot + W, ...`` of a plan and records one Sample each."""

    def __init__(self, share: Share):
        self.clock = clock = share.clock
        self.offered: Counter[tuple[int, str]] = Counter()
        self._plan = share.plan
        self._mix = share.mix
        self._timeouts = share.timeouts
        self._dialect = share.dialect
        self._http = share.http
        self._on_sample = share.on_sample
        # Conversations put a chat turn on its conversation's process; else index mod W.
        self._cursor: SlotCursor | ConversationCursor = (
            ConversationCursor(share.slot, share.workers, share.mix, share.conversations)
            if share.conversations.continuing > 0
            else SlotCursor(share.slot, share.workers)
        )
        connections = share.connections
        chat_share = self._mix.rates(1.0).get(CHAT, 0.0)
        two = two_socket_share(chat_share, self._mix.cancel_share)
        hold = process_connection_limit(max(1, connections), two)
        self.bound = hold.arrivals
        if hold.short_because:
            log.warning(
                "this process holds at most %d concurrent arrivals, not the %d asked: %s; "
                "arrivals beyond that wait and show as lateness",
                self.bound,
                connections,
                hold.short_because,
            )
        self._slots = gevent.lock.Semaphore(self.bound)
        self._runners: list[gevent.Greenlet] = []
        # The runners waiting for an arrival, each by its own Waiter, the last to finish last.
        self._idle: list[Waiter[_Arrival]] = []
        self._deadlines = Deadlines(clock)
        self._in_flight: dict[int, _Arrival] = {}
        self._all_done = gevent.event.Event()
        self._plan_changed = gevent.event.Event()
        self._loop: gevent.Greenlet | None = None
        self._collector = LoadCollector()
        self._closed = False

    @property
    def in_flight(self) -> int:
        """Arrivals taken off the schedule and not finished (waiting for a slot or in flight)."""
        return len(self._in_flight)

    def start(self) -> None:
        """Begin offering; arrivals before their due time wait for it.

        The garbage collector walks none of the turns in flight until ``close``
        (engine/collector.py): its stalls otherwise showed as lateness and TTFT error.
        """
        self._collector.start()
        self._loop = gevent.spawn(self._offer)

    def update_plan(self, plan: Plan) -> None:
        """Follow a changed plan (a new rate); the loop re-reads its next due time."""
        self._plan = plan
        self._plan_changed.set()

    def _offer(self) -> None:
        cursor, clock = self._cursor, self.clock
        while True:
            upcoming = cursor.peek(self._plan)
            if upcoming is None:
                return
            segment, index, due_s = upcoming
            wait = due_s - clock.now()
            if wait > PLAN_WATCH_S:
                if self._plan_changed.wait(wait):
                    self._plan_changed.clear()
                continue
            if wait > 0:
                # Shorter than any plan change's lead: this arrival is due under either plan.
                gevent.sleep(wait)
            conversation = cursor.conversation if isinstance(cursor, ConversationCursor) else None
            cursor.advance()
            workload = self._mix.pick_in(self._plan.segments[segment], index)
            self.offered[segment, workload] += 1
            arrival = _Arrival(index, workload, segment, due_s, conversation)
            self._in_flight[index] = arrival
            # A full bound waits here, and the wait shows as the arrival's lateness.
            self._slots.acquire()
            if workload == CHAT:
                # A turn opens a socket of its own: the idle keep-alive ones stay within what
                # the arrivals in flight leave of the bound, so the files suffice (limits.py).
                self._http.trim_idle(self.bound - len(self._in_flight))
            if self._idle:
                # A Waiter is switched to from the hub only: the runner starts on the next turn.
                get_hub().loop.run_callback(self._idle.pop().switch, arrival)
            else:
                self._runners.append(gevent.spawn(self._run_arrivals, arrival))

    def _run_arrivals(self, arrival: _Arrival) -> None:
        """A long-lived runner: serves ``arrival``, then one after another handed to it by the loop.

        Starting a greenlet per arrival cost more than the request itself; a runner
        waits for the next one instead. The loop hands each arrival to the runner that
        finished last (its stack the likeliest still in the cache), or starts one when
        none is idle, so no arrival waits for a busy runner and runners never outnumber
        the bound. Each runner waits on a Waiter of its own, so a hand-off costs the same
        however many runners a burst left idle (a shared queue's did not: docs/internals.md).
        """
        waiter: Waiter[_Arrival] = Waiter()
        while True:
            try:
                self._serve(arrival)
            finally:
                self._slots.release()
            # Nothing switches between these two lines, so the loop hands over only to a
            # runner already waiting.
            self._idle.append(waiter)
            arrival = waiter.get()

    def _serve(self, arrival: _Arrival) -> None:
        workload = arrival.workload
        result = serve(
            self._dialect,
            self._http,
            self.clock,
            self._deadlines,
            workload,
            arrival.index,
            self._mix.cancels(arrival.index),
            self._timeouts.for_workload(workload),
            arrival.mark_sent,
            arrival.conversation,
        )
        self._record(arrival, result)

    def _record(self, arrival: _Arrival, result: Result | None) -> None:
        """The arrival's one sample; ``result`` None records it as abandoned."""
        if self._closed or self._in_flight.pop(arrival.index, None) is None:
            return
        if not self._in_flight:
            self._all_done.set()
        self._on_sample(
            recorded(
                arrival.index,
                arrival.workload,
                arrival.segment,
                arrival.due_s,
                arrival.sent_s,
                self.clock.now(),
                result,
            )
        )

    def drain(self, deadline_s: float) -> None:
        """Run a closed plan out, wait for in-flight work until ``deadline_s``, abandon the rest."""
        assert self._loop is not None
        self._loop.join(timeout=max(0.0, deadline_s - self.clock.now()))
        self._all_done.clear()
        if self._in_flight:
            self._all_done.wait(timeout=max(0.0, deadline_s - self.clock.now()))
        self.close(until_s=None)

    def close(self, until_s: float | None) -> None:
        """Stop offering now: arrivals due before ``until_s`` (all, if None) but not finished are
        recorded as abandoned, in-flight greenlets are killed, and nothing is recorded after."""
        if self._closed:
            return
        if self._loop is not None:
            self._loop.kill(block=True)
        if until_s is None and not self._plan.closed:
            until_s = self.clock.now()
        while (upcoming := self._cursor.peek(self._plan)) is not None:
            segment, index, due_s = upcoming
            if until_s is not None and due_s >= until_s:
                break
            self._cursor.advance()
            workload = self._mix.pick_in(self._plan.segments[segment], index)
            self.offered[segment, workload] += 1
            self._in_flight[index] = _Arrival(index, workload, segment, due_s, None)
        abandoned = sorted(self._in_flight.values(), key=lambda a: a.index)
        gevent.killall(self._runners, block=True)
        self._deadlines.close()
        self._collector.stop()
        for arrival in abandoned:
            self._record(arrival, None)
        self._closed = True
        self._http.close()
