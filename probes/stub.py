"""The stub's own /stats, so every run can show the model was not its bottleneck."""

from __future__ import annotations

import requests


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
        self._session = requests.Session()

    def read(self) -> dict[str, float]:
        """The stub's counters, concurrency and scheduling lateness as flat numbers."""
        response = self._session.get(self._url, timeout=self._timeout_s)
        response.raise_for_status()
        return flatten(response.json())

    def close(self) -> None:
        self._session.close()
