"""CPU and memory of the API process, read from outside because AgenticOS exposes neither.

CPU is the difference of cumulative CPU time over the wall time between two
readings, not ``ps``'s %CPU (a lifetime average that hides a burst's saturation).
Beside it, the time its threads were ready to run and waited for a CPU (the
kernel's schedstat): what a busier machine takes from the platform, which its
own CPU cannot show once the machine is full.
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil


def cpu_wait_s(pid: int) -> float:
    """Seconds the process's threads have waited on a run queue, from /proc/PID/task/*/schedstat
    (a thread that ended meanwhile takes its count with it)."""
    waited = 0
    for thread in Path(f"/proc/{pid}/task").iterdir():
        try:
            waited += int((thread / "schedstat").read_text().split()[1])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return waited / 1e9


def private_dirty_bytes(pid: int) -> int:
    """Memory the process wrote and owns alone, from /proc/PID/smaps_rollup."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Private_Dirty:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/{pid}/smaps_rollup has no Private_Dirty line")


class ProcessProbe:
    """Reads one process by PID; the first reading sets the CPU baseline."""

    name = "api"

    def __init__(self, pid: int):
        self._process = psutil.Process(pid)
        self._last = self._cpu_and_wall()

    def _cpu_and_wall(self) -> tuple[float, float, float]:
        times = self._process.cpu_times()
        return times.user + times.system, cpu_wait_s(self._process.pid), time.monotonic()

    def read(self) -> dict[str, float]:
        """CPU percent of one core since the last reading, the same for the time its threads
        waited for a CPU, RSS and private dirty bytes."""
        cpu, waited, wall = self._cpu_and_wall()
        last_cpu, last_waited, last_wall = self._last
        self._last = (cpu, waited, wall)
        seconds = max(wall - last_wall, 1e-9)
        return {
            "cpu_percent": 100.0 * (cpu - last_cpu) / seconds,
            "cpu_wait_percent": 100.0 * (waited - last_waited) / seconds,
            "rss_bytes": float(self._process.memory_info().rss),
            "private_dirty_bytes": float(private_dirty_bytes(self._process.pid)),
        }

    def close(self) -> None:
        """Nothing to release: the process is only observed."""
