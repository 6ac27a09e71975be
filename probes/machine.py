"""The master's machine as a whole: CPU in use by every process on it, and its load average.

A run's own processes are probed one by one (the API, the load generators); the machine
beside them says how busy it was, in every run's record rather than a note beside a
committed run, and a comparison states it when two runs' machines differ (reports/compare).
Steal counts as busy: a hypervisor that gave the core to another guest took it from the run.
"""

from __future__ import annotations

import os
import time

import psutil


def _busy_and_wall() -> tuple[float, float]:
    times = psutil.cpu_times()
    busy = times.user + times.nice + times.system + times.irq + times.softirq
    return busy + getattr(times, "steal", 0.0), time.monotonic()


class MachineProbe:
    """Reads the whole machine; the first reading sets the CPU baseline."""

    name = "machine"

    def __init__(self) -> None:
        self._last = _busy_and_wall()

    def read(self) -> dict[str, float]:
        """Cores busy since the last reading (all processes, steal included), the 1-minute load
        average, and the cores there are."""
        busy, wall = _busy_and_wall()
        last_busy, last_wall = self._last
        self._last = (busy, wall)
        return {
            "cpu_busy_cores": (busy - last_busy) / max(wall - last_wall, 1e-9),
            "load_1m": os.getloadavg()[0],
            "cpus": float(psutil.cpu_count() or 0),
        }

    def close(self) -> None:
        """Nothing to release: the machine is only observed."""
