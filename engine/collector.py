"""The garbage collector during load: young collections on a clock, never an older one.

A collection walks every object of the generations it collects, and stalls every turn in
flight while it does: so the turns in flight must never be in what it walks. Two things
put them there under Python's own policy. Older collections walk every live turn (at
10,000 open turns a middle one took 60-153 ms, a full one 369-382 ms); they are switched
off. And the young generation's count is allocations *less deallocations*, so when as
many turns end as begin it barely moves, while every new turn's objects pile up in the
young generation until a fluctuation triggers it (34-90 ms young collections at 10,000
turns); so the young generation is collected every ``YOUNG_EVERY_S`` as well, which
holds it to what one interval allocates.

What survives a young collection is not walked again until the run ends. Nothing is lost
by it: a finished turn is freed by its references alone (tests/test_turn_garbage.py: no
cycle a turn, answered or refused), and ``stop`` gives the run's few cycles back to the
collector.
"""

from __future__ import annotations

import gc

import gevent

# Young collections at least this often; the allocation count triggers them sooner.
YOUNG_EVERY_S = 0.05
# Young collections every 5000 allocations (Python's 700 made them needlessly frequent);
# the older generations' thresholds are never reached.
THRESHOLDS = (5000, 1 << 30, 1 << 30)


class LoadCollector:
    """Holds the collector to young collections from ``start`` until ``stop``."""

    def __init__(self) -> None:
        self._before: tuple[int, ...] | None = None
        self._clock: gevent.Greenlet | None = None

    def start(self) -> None:
        """Freeze what exists now (modules, Locust, the sign-in: it lives until the end) and
        collect only the young generation from here on."""
        self._before = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(*THRESHOLDS)
        self._clock = gevent.spawn(self._collect_young)

    def stop(self) -> None:
        """Python's own policy again, over everything the run left."""
        if self._clock is not None:
            self._clock.kill(block=True)
        if self._before is not None:
            gc.unfreeze()
            gc.set_threshold(*self._before)
            self._before = None

    @staticmethod
    def _collect_young() -> None:
        while True:
            gevent.sleep(YOUNG_EVERY_S)
            gc.collect(0)
