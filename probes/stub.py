"""The stub's own /stats, so every run can show the model was not its bottleneck.

The stub counts from its start, across every run sent to it: a report once
showed 73 requests abandoned and 852 chat completions in its ramp that earlier
runs had left. So the probe resets the stub's counters (``POST /stats/reset``)
before its first reading, and every figure it records (requests, faults,
abandoned, the in-flight peak, lateness) is this run's own. A reset that fails
is tried again at the next reading; nothing is recorded until one succeeds.
"""

from __future__ import annotations

from engine.trust import session


def flatten(data: dict, prefix: str = "") -> dict[str, float]:
    """Numeric leaves of nested JSON as ``a.b.c`` -> value; text and lists are left out."""
    flat = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            flat[name] = float(value)
    return flat


class StubProbe:
    """Reads GET {stub}/stats per reading."""

    name = "stub"

    def __init__(self, url: str, timeout_s: float):
        self._url = url.rstrip("/") + "/stats"
        self._timeout_s = timeout_s
        self._session = session()
        self._reset = False

    def read(self) -> dict[str, float]:
        """The stub's counters, concurrency and scheduling lateness since this run's first
        reading (the stub's counters are reset before it) as flat numbers."""
        if not self._reset:
            reset = self._session.post(self._url + "/reset", timeout=self._timeout_s)
            reset.raise_for_status()
            self._reset = True
        response = self._session.get(self._url, timeout=self._timeout_s)
        response.raise_for_status()
        return flatten(response.json())

    def close(self) -> None:
        self._session.close()
