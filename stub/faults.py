"""Which requests misbehave and how much each delay is spread: seeded, so runs repeat.

Faults and jitter draw from two separate generators, so changing the answer
length or the jitter never changes which requests fail: the k-th model
request of a process gets the same fate for the same seed.
"""

from __future__ import annotations

import enum
import random

from stub.config import StubConfig


class Fault(enum.Enum):
    """What the stub does instead of answering."""

    ERROR = "error"
    TIMEOUT = "timeout"
    RATE_LIMIT = "rate_limit"
    # A fault window's outage with refused connections (stub/schedule.py): the connection is
    # reset, never answered.
    REFUSED = "refused"


class FaultPlan:
    """Draws one fate per model request and one spread per delay, from the seed."""

    def __init__(self, config: StubConfig, stream: int = 0) -> None:
        # Separate, derived seeds per purpose (and per process when several share a port).
        self._faults = random.Random(f"faults:{config.seed}:{stream}")
        self._jitter = random.Random(f"jitter:{config.seed}:{stream}")
        self._error_below = config.error_rate
        self._timeout_below = self._error_below + config.timeout_rate
        self._limit_below = self._timeout_below + config.rate_limit_rate
        self._spread = config.jitter

    def next_fault(self) -> Fault | None:
        """The fate of the next model request: None answers normally."""
        if self._limit_below <= 0.0:
            return None
        u = self._faults.random()
        if u < self._error_below:
            return Fault.ERROR
        if u < self._timeout_below:
            return Fault.TIMEOUT
        if u < self._limit_below:
            return Fault.RATE_LIMIT
        return None

    def spread(self, seconds: float) -> float:
        """The delay, spread uniformly by +/- the jitter fraction (unchanged without jitter)."""
        if self._spread == 0.0:
            return seconds
        return seconds * (1.0 + self._spread * (2.0 * self._jitter.random() - 1.0))
