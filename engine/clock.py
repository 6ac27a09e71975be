"""The run's clock: seconds since load started, on a monotonic base.

Every process measures due, sent and finished times against the same wall-clock
start the master chose, but reads a monotonic clock so a time adjustment during
the run cannot make a request look early or late.
"""

from __future__ import annotations

import time


class RunClock:
    """Seconds from ``start_epoch`` (unix time when load starts), read monotonically."""

    def __init__(self, start_epoch: float):
        self.start_epoch = start_epoch
        self._offset = time.monotonic() - (time.time() - start_epoch)

    def now(self) -> float:
        """Seconds since the run started (negative before it starts)."""
        return time.monotonic() - self._offset
