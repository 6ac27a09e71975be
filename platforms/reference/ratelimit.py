"""Fixed-window rate limits, as AgenticOS applies them to runs and sign-in.

A fixed window (not a sliding one) is what the platform does, so a burst at a
window's edge gets twice the limit through, and the target must behave the
same for a run's shed count to mean the same thing.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

# Seconds in one window: both limits are "per minute".
WINDOW_S = 60.0


@dataclass
class FixedWindowLimiter:
    """Counts hits per key in the current window; says how long to wait when over."""

    limit: int
    window_s: float = WINDOW_S
    _windows: dict[str, tuple[float, int]] = field(default_factory=dict)

    def retry_after(self, key: str, now: float | None = None) -> int | None:
        """Record one hit for ``key``; None if allowed, else whole seconds until the window ends."""
        now = time.monotonic() if now is None else now
        start, count = self._windows.get(key, (now, 0))
        if now - start >= self.window_s:
            start, count = now, 0
        if count >= self.limit:
            return max(1, math.ceil(start + self.window_s - now))
        self._windows[key] = (start, count + 1)
        return None
