"""One timer for every deadline of a stub process.

Thousands of concurrent streams each owe a frame every few milliseconds. A
coroutine per stream sleeping per token costs a timer, a future and a task
switch per frame; here deadlines sit in one heap behind one event-loop timer,
and a due frame is a callback that writes pre-encoded bytes straight to its
transport. Frames due in the same millisecond go out in one pass.

A deadline is never served early: uvloop rounds timers to whole milliseconds
and its clock may lag the precise one, so the timer is set a little late and a
wake-up that still comes early serves only what is due and re-arms.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections.abc import Callable

# Half of uvloop's 1 ms timer resolution: enough that rounding never wakes us early.
TIMER_GUARD_S = 0.0005


class Pacer:
    """Calls callback(deadline) once time.monotonic() has reached each deadline."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[[float], None]]] = []
        self._order = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._armed_for = math.inf

    def at(self, deadline: float, callback: Callable[[float], None]) -> None:
        """Run callback(deadline) at deadline (a time.monotonic() value), never before."""
        heapq.heappush(self._heap, (deadline, next(self._order), callback))
        if deadline < self._armed_for:
            self._arm(deadline)

    def _arm(self, deadline: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._armed_for = deadline
        delay = max(0.0, deadline - time.monotonic() + TIMER_GUARD_S)
        self._timer = asyncio.get_running_loop().call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._armed_for = math.inf
        heap = self._heap
        try:
            while heap and heap[0][0] <= time.monotonic():
                deadline, _, callback = heapq.heappop(heap)
                callback(deadline)
        finally:
            if heap:
                self._arm(heap[0][0])
