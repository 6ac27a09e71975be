"""What the stub did, in memory shared by every stub process on the port.

A run reads ``/stats`` to prove the stub was not its bottleneck and to see how
much concurrency the platform really put on its provider. With several
processes behind one port (SO_REUSEPORT), a ``/stats`` request reaches any one
of them, and per-process maxima cannot be summed (their peaks need not
coincide), so the combined in-flight count is kept in shared memory under one
lock and its maximum is exact. Everything else is written by one process into
its own region without a lock and summed when read.

Lateness (how late a frame left against its deadline) is kept as a histogram
of 10 microsecond bins up to 100 ms, then 1 ms bins up to 10 s: bounded
memory, and a read never sorts millions of samples on the event loop.
Percentiles are nearest-rank over those bins, reported as the bin's upper edge
(never flattering by more than 10 us); the worst is exact to the microsecond.
"""

from __future__ import annotations

import bisect
import itertools
import math
import mmap
import multiprocessing
import operator
import os
from dataclasses import dataclass

ENDPOINTS = (
    "/v1/chat/completions",
    "/v1/embeddings",
    "/api/embed",
    "/api/embeddings",
    "/v1/models",
    "/health",
    "/{version}/{phone}/messages",
)
FAULTS = ("errors", "timeouts", "rate_limited")
# First frames (or a whole non-streamed answer) and later tokens are judged apart; "loop" is
# a steady tick of the event loop itself, which also catches stalls (garbage collection, a
# starved CPU) that delay requests before their handler starts and so before any deadline.
LATENESS_KINDS = ("first_token", "token", "loop")

# Histogram geometry, in microseconds: fine where a healthy stub lives, coarse beyond.
_EARLY_US = -10_000
_FINE_END_US = 100_000
_FINE_US = 10
_COARSE_END_US = 10_000_000
_COARSE_US = 1_000
_N_FINE = (_FINE_END_US - _EARLY_US) // _FINE_US
_N_COARSE = (_COARSE_END_US - _FINE_END_US) // _COARSE_US
N_BINS = 1 + _N_FINE + _N_COARSE + 1

# Global slots.
_G_GEN, _G_IN_FLIGHT, _G_MAX = 0, 1, 2
_G_SIZE = 3
# Per-process slots; everything from _R_COUNTERS on is zeroed by a reset.
_R_GEN, _R_PID, _R_IN_FLIGHT, _R_MAX = 0, 1, 2, 3
_R_COUNTERS = 4
_R_ENDPOINTS = _R_COUNTERS
_R_FAULTS = _R_ENDPOINTS + len(ENDPOINTS)
_R_ABANDONED = _R_FAULTS + len(FAULTS)
_R_LATENESS = _R_ABANDONED + 1
# Per lateness kind: count, worst (us), then the bins.
_L_COUNT, _L_WORST, _L_BINS = 0, 1, 2
_L_SIZE = 2 + N_BINS
_R_SIZE = _R_LATENESS + len(LATENESS_KINDS) * _L_SIZE
_NO_WORST = -(2**62)


def bin_of(us: int) -> int:
    """The histogram bin holding a lateness of us microseconds."""
    if us < _EARLY_US:
        return 0
    if us < _FINE_END_US:
        return 1 + (us - _EARLY_US) // _FINE_US
    if us < _COARSE_END_US:
        return 1 + _N_FINE + (us - _FINE_END_US) // _COARSE_US
    return N_BINS - 1


def _upper_edge_us(index: int) -> int | None:
    """The largest lateness a bin can hold, or None for the open-ended last bin."""
    if index == 0:
        return _EARLY_US
    if index <= _N_FINE:
        return _EARLY_US + index * _FINE_US
    if index < N_BINS - 1:
        return _FINE_END_US + (index - _N_FINE) * _COARSE_US
    return None


@dataclass(frozen=True)
class Lateness:
    """Nearest-rank percentiles of how late frames left, in ms, with the count they rest on."""

    count: int
    p50_ms: float | None
    p99_ms: float | None
    worst_ms: float | None

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "count": self.count,
            "p50_ms": self.p50_ms,
            "p99_ms": self.p99_ms,
            "worst_ms": self.worst_ms,
        }


def lateness_from_bins(bins: list[int], worst_us: int) -> Lateness:
    """Nearest-rank p50/p99 over histogram bins (upper edges, capped by the exact worst)."""
    cumulative = list(itertools.accumulate(bins))
    count = cumulative[-1]
    if count == 0:
        return Lateness(0, None, None, None)

    def percentile(p: float) -> float:
        index = bisect.bisect_left(cumulative, max(1, math.ceil(p / 100.0 * count)))
        edge = _upper_edge_us(index)
        return round(min(worst_us, edge if edge is not None else worst_us) / 1000.0, 3)

    return Lateness(count, percentile(50), percentile(99), round(worst_us / 1000.0, 3))


class Stats:
    """Counters for one stub process, living in memory it shares with its siblings."""

    def __init__(self, memory: memoryview, lock, index: int) -> None:
        self._mem = memory
        self._lock = lock
        self._base = _G_SIZE + index * _R_SIZE
        self._n_processes = (len(memory) - _G_SIZE) // _R_SIZE
        memory[self._base + _R_PID] = os.getpid()

    @classmethod
    def shared(cls, n_processes: int) -> tuple[memoryview, object]:
        """Anonymous shared memory and a lock, created before the stub processes fork."""
        size = (_G_SIZE + n_processes * _R_SIZE) * 8
        memory = memoryview(mmap.mmap(-1, size)).cast("q")
        for r in range(n_processes):
            base = _G_SIZE + r * _R_SIZE
            for k in range(len(LATENESS_KINDS)):
                memory[base + _R_LATENESS + k * _L_SIZE + _L_WORST] = _NO_WORST
        return memory, multiprocessing.get_context("fork").Lock()

    def _current(self) -> int:
        """This process's region base, first zeroed if a reset happened since it last wrote."""
        mem, base = self._mem, self._base
        if mem[base + _R_GEN] != mem[_G_GEN]:
            _zero_region(mem, base)
            mem[base + _R_GEN] = mem[_G_GEN]
        return base

    def begin(self, endpoint: int) -> None:
        """A request arrived at ENDPOINTS[endpoint] and is now in flight."""
        mem, base = self._mem, self._current()
        mem[base + _R_ENDPOINTS + endpoint] += 1
        now = mem[base + _R_IN_FLIGHT] + 1
        mem[base + _R_IN_FLIGHT] = now
        if now > mem[base + _R_MAX]:
            mem[base + _R_MAX] = now
        with self._lock:
            total = mem[_G_IN_FLIGHT] + 1
            mem[_G_IN_FLIGHT] = total
            if total > mem[_G_MAX]:
                mem[_G_MAX] = total

    def end(self) -> None:
        """A request in flight has left: answered, failed, or abandoned by its client."""
        mem, base = self._mem, self._base
        mem[base + _R_IN_FLIGHT] -= 1
        with self._lock:
            mem[_G_IN_FLIGHT] -= 1

    def fault(self, kind: int) -> None:
        """An injected fault of FAULTS[kind] was served."""
        self._mem[self._current() + _R_FAULTS + kind] += 1

    def abandoned(self) -> None:
        """A client left before its answer was complete."""
        self._mem[self._current() + _R_ABANDONED] += 1

    def late(self, kind: int, seconds: float) -> None:
        """A frame of LATENESS_KINDS[kind] left this many seconds after its deadline."""
        mem = self._mem
        at = self._current() + _R_LATENESS + kind * _L_SIZE
        us = int(seconds * 1_000_000)
        mem[at + _L_COUNT] += 1
        if us > mem[at + _L_WORST]:
            mem[at + _L_WORST] = us
        mem[at + _L_BINS + bin_of(us)] += 1

    def reset(self) -> None:
        """Start counting afresh in every process; requests in flight stay in flight."""
        with self._lock:
            self._mem[_G_GEN] += 1
            self._mem[_G_MAX] = self._mem[_G_IN_FLIGHT]
        self._current()

    def snapshot(self) -> dict:
        """The /stats document: combined figures, lateness, and each process's own share."""
        mem = self._mem
        with self._lock:
            gen, in_flight, max_in_flight = mem[_G_GEN], mem[_G_IN_FLIGHT], mem[_G_MAX]
        requests = dict.fromkeys(ENDPOINTS, 0)
        faults = dict.fromkeys(FAULTS, 0)
        abandoned = 0
        bins: list[list[int] | None] = [None] * len(LATENESS_KINDS)
        worst = [_NO_WORST] * len(LATENESS_KINDS)
        processes = []
        for r in range(self._n_processes):
            base = _G_SIZE + r * _R_SIZE
            own_in_flight = mem[base + _R_IN_FLIGHT]
            fresh = mem[base + _R_GEN] == gen
            processes.append(
                {
                    "pid": mem[base + _R_PID],
                    "in_flight": own_in_flight,
                    "max_in_flight": mem[base + _R_MAX] if fresh else own_in_flight,
                }
            )
            if not fresh:
                continue
            for i, name in enumerate(ENDPOINTS):
                requests[name] += mem[base + _R_ENDPOINTS + i]
            for i, name in enumerate(FAULTS):
                faults[name] += mem[base + _R_FAULTS + i]
            abandoned += mem[base + _R_ABANDONED]
            for k in range(len(LATENESS_KINDS)):
                at = base + _R_LATENESS + k * _L_SIZE
                worst[k] = max(worst[k], mem[at + _L_WORST])
                region = mem[at + _L_BINS : at + _L_BINS + N_BINS].tolist()
                before = bins[k]
                bins[k] = region if before is None else list(map(operator.add, before, region))
        return {
            "in_flight": in_flight,
            "max_in_flight": max_in_flight,
            "requests": requests,
            "faults": faults,
            "abandoned": abandoned,
            "lateness": {
                name: lateness_from_bins(bins[k] or [0], worst[k]).as_dict()
                for k, name in enumerate(LATENESS_KINDS)
            },
            "processes": processes,
        }


def _zero_region(mem: memoryview, base: int) -> None:
    counters = _R_SIZE - _R_COUNTERS
    mem[base + _R_COUNTERS : base + _R_SIZE] = memoryview(bytes(8 * counters)).cast("q")
    mem[base + _R_MAX] = mem[base + _R_IN_FLIGHT]
    for k in range(len(LATENESS_KINDS)):
        mem[base + _R_LATENESS + k * _L_SIZE + _L_WORST] = _NO_WORST
