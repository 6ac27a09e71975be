"""How often a process sleeps, and what one sleep costs here: the part of a request's CPU
that an open-arrival generator pays and a closed loop does not.

A generator offering arrivals on a schedule sleeps whenever nothing is due and no answer
is readable; a closed loop such as wrk always has an answer to read. Each sleep and wake
costs the process CPU time of its own (the kernel's path into and out of the wait, and on
a virtual machine the exits around it), so CPU per request is only comparable beside the
sleeps each tool took per request and the price of one on the same core.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

# Sleeps timed for the cost of one: short enough to sleep, not spin, on any kernel.
SLEEP_S = 50e-6
SLEEPS = 2000


def voluntary_switches(pid: int) -> dict[int, int]:
    """Per thread of ``pid``, the times it gave up its core to wait so far (Linux's count)."""
    counts = {}
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            lines = status.read_text().splitlines()
        except OSError:
            continue  # a thread that ended while it was read
        voluntary = [int(line.split()[1]) for line in lines if line.startswith("voluntary_ctxt")]
        counts[int(status.parent.name)] = voluntary[0]
    return counts


def slept(before: dict[int, int], after: dict[int, int]) -> int:
    """Sleeps between two readings of voluntary_switches: a thread born between them counts
    from 0; one that ended between them is not seen (for k6, whose runtime ends threads,
    a lower bound)."""
    return sum(n - before.get(tid, 0) for tid, n in after.items())


def sleep_cost_us(core: int | None) -> float:
    """Microseconds of this process's own run time (schedstat, in nanoseconds) per sleep and
    wake, on ``core`` (None: wherever it runs)."""
    before_affinity = os.sched_getaffinity(0)
    if core is not None:
        os.sched_setaffinity(0, {core})
    try:
        schedstat = Path("/proc/self/schedstat")
        ran = int(schedstat.read_text().split()[0])
        for _ in range(SLEEPS):
            time.sleep(SLEEP_S)
        return (int(schedstat.read_text().split()[0]) - ran) / SLEEPS / 1000
    finally:
        os.sched_setaffinity(0, before_affinity)
