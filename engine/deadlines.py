"""One timer for every arrival's timeout, instead of a gevent.Timeout each.

A ``gevent.Timeout`` per arrival costs a timer start and stop on the event loop
for every request, thousands a second, to catch the few that run out. Here an
arrival arms an entry (its deadline and the greenlet serving it) when its
request leaves; one watcher greenlet sleeps until the earliest live deadline and
throws ``DeadlinePassed`` into the greenlets still serving past theirs. Entries
of one timeout are armed in send order, so each timeout's entries form a queue
sorted by deadline, and finished ones are dropped from its front as new ones come.
"""

from __future__ import annotations

import math
from collections import deque

import gevent
import gevent.event
from gevent import getcurrent
from gevent.hub import get_hub

from engine.clock import RunClock

# An entry is [deadline_s, greenlet, armed]: a list, mutated in place, is the cheapest token.
_AT, _GREENLET, _ARMED = 0, 1, 2


class DeadlinePassed(BaseException):
    """Thrown into a greenlet whose request outlived its timeout (a BaseException, like
    gevent.Timeout, so that no workload's ``except Exception`` swallows it)."""


class Deadlines:
    """Arms and watches the deadlines of one dispatcher's arrivals."""

    def __init__(self, clock: RunClock):
        self._clock = clock
        self._queues: dict[float, deque[list]] = {}
        self._wake_at = math.inf
        self._earlier = gevent.event.Event()
        self._watcher = gevent.spawn(self._watch)

    def arm(self, timeout_s: float) -> list:
        """Start the calling greenlet's deadline, ``timeout_s`` from now; the token to disarm."""
        at = self._clock.now() + timeout_s
        entry = [at, getcurrent(), True]
        queue = self._queues.get(timeout_s)
        if queue is None:
            queue = self._queues[timeout_s] = deque()
        while queue and not queue[0][_ARMED]:
            queue.popleft()
        queue.append(entry)
        if at < self._wake_at:
            self._earlier.set()
        return entry

    @staticmethod
    def disarm(entry: list) -> None:
        """The arrival finished (or gave up) before its deadline: nothing will be thrown."""
        entry[_ARMED] = False

    def close(self) -> None:
        """Stop watching; armed entries will never fire."""
        self._watcher.kill(block=True)

    def _watch(self) -> None:
        loop = get_hub().loop
        while True:
            now, earliest = self._clock.now(), math.inf
            for queue in self._queues.values():
                while queue and (not queue[0][_ARMED] or queue[0][_AT] <= now):
                    entry = queue.popleft()
                    if entry[_ARMED]:
                        loop.run_callback(_expire, entry)
                if queue:
                    earliest = min(earliest, queue[0][_AT])
            self._wake_at = earliest
            self._earlier.clear()
            self._earlier.wait(None if earliest == math.inf else max(0.0, earliest - now))


def _expire(entry: list) -> None:
    """Runs in the hub: if the arrival is still being served, it is suspended inside its
    own exchange (nothing else runs now), so the throw lands on the request that ran out."""
    if entry[_ARMED]:
        entry[_ARMED] = False
        entry[_GREENLET].throw(DeadlinePassed)
