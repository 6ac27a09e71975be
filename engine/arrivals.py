"""Arrival kinds: how a segment's arrivals are spaced in time, found by name.

Each kind answers two questions about a segment, and the schedule asks nothing else:
how many arrivals are due in its first ``span_s`` seconds, and when (seconds from its
start) its j-th is due. The kinds are the scenario's ``ArrivalKind`` (inputs/scenario.py,
where a phase says which it uses); each member is a class here, found in KINDS.

- ``uniform``: arrival j at ``j / rate``. Two runs at a rate offer the same instants,
  which is what comparing releases wants, so it is the default.
- ``poisson``: exponential gaps at the phase's rate (GuideLLM's Poisson profile), what
  independent users produce. GuideLLM draws its gaps one at a time into an offset its
  worker processes share in memory; processes on several machines cannot share one, so
  here every process draws the whole phase itself, from a generator seeded with the
  scenario's seed and the phase's name, and takes its own indexes k = slot, slot + W,
  ... of it. Arrival k is due at the sum of the first k + 1 unit exponential draws over
  the rate: a pure function of (seed, phase, rate, k), so any number of processes
  offers exactly the single-process sequence without talking, and a shorter phase
  (``--scale``) offers the beginning of the same one. The draws are numpy's PCG64 and
  its table-driven exponential, summed in order, so processes run from the same image
  agree to the bit. A process holds its phases' offsets, 8 bytes an arrival: less than
  the sample each arrival leaves on the master.
- ``trace``: offsets read from a file (inputs/trace_file.py, already spread over the phase).

A trace's workload column replaces the mix in its phase. The deterministic mix exists
so that two runs offer the same workloads at the same indexes, and a trace that names
its workloads is already deterministic: it is production's own mix, in production's own
order (the uploads that came in a clump at nine come in a clump here). Reassigning its
lines by the golden-ratio sequence would keep its timing and throw away the correlation
between timing and work that it was recorded for. A line naming a workload this run does
not offer (share 0 in the scenario, or skipped by preflight) takes the mix's pick for its
index instead, so the trace's timing is replayed whole. A trace without the column is
spread over the mix by global index, as every other phase is.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import numpy as np

from engine.run_record import ArrivalsRecord
from inputs.phases import ArrivalKind, Arrivals

# Digits kept when turning duration x rate into an arrival count, so that float
# noise from scaling (6.000000000000001 s x 4/s) does not invent an arrival.
COUNT_DIGITS = 9
# Extra draws beyond a Poisson phase's expected count, in standard deviations: one batch
# of draws covers the phase in all but about one phase in a billion.
POISSON_MARGIN_SD = 6


class Spacing(Protocol):
    """A segment's due offsets: how many fall in its first ``span_s`` seconds, and the j-th."""

    def count(self, span_s: float) -> int: ...

    def offset_s(self, j: int) -> float: ...


@dataclass(frozen=True)
class Even:
    """Arrival j at j / rate."""

    rate: float

    def count(self, span_s: float) -> int:
        """Arrivals with j / rate < span_s."""
        return max(0, math.ceil(round(span_s * self.rate, COUNT_DIGITS)))

    def offset_s(self, j: int) -> float:
        """j / rate."""
        return j / self.rate


@dataclass(frozen=True)
class Listed:
    """Offsets given one by one, sorted."""

    offsets: Sequence[float]

    def count(self, span_s: float) -> int:
        """Offsets below span_s."""
        return bisect_left(self.offsets, span_s)

    def offset_s(self, j: int) -> float:
        """The j-th offset."""
        return self.offsets[j]


class Stretch(Protocol):
    """What a kind reads of a segment (engine.schedule.Segment is one), named here so that
    the kinds need nothing of the schedule that asks them."""

    @property
    def name(self) -> str: ...
    @property
    def rate(self) -> float: ...
    @property
    def start_s(self) -> float: ...
    @property
    def end_s(self) -> float | None: ...
    @property
    def seed(self) -> int: ...
    @property
    def arrivals(self) -> Arrivals: ...


class Spacer(Protocol):
    """One kind: the spacing of a segment's arrivals, and what run.json says of it."""

    name: ArrivalKind

    def spacing(self, segment: Stretch) -> Spacing: ...

    def record(self, segment: Stretch) -> ArrivalsRecord: ...


class Uniform:
    """Evenly spaced at the segment's rate; also every open (operator-set) segment."""

    name = ArrivalKind.UNIFORM

    def spacing(self, segment: Stretch) -> Spacing:
        """Even spacing at the rate."""
        return Even(segment.rate)

    def record(self, segment: Stretch) -> ArrivalsRecord:
        """Only the kind: the rate says the rest."""
        return ArrivalsRecord(self.name)


class Poisson:
    """Exponential gaps at the segment's rate, from the scenario's seed and the phase's name."""

    name = ArrivalKind.POISSON

    def spacing(self, segment: Stretch) -> Spacing:
        """The phase's whole sequence (a closed segment: a scenario phase always is)."""
        if segment.end_s is None:
            raise ValueError(f"{segment.name}: poisson arrivals need a phase with an end")
        return Listed(
            poisson_offsets(
                segment.seed, segment.name, segment.rate, segment.end_s - segment.start_s
            )
        )

    def record(self, segment: Stretch) -> ArrivalsRecord:
        """The kind and the seed that reproduces it."""
        return ArrivalsRecord(self.name, seed=segment.seed)


class Trace:
    """The offsets a trace file gave, already spread over the phase."""

    name = ArrivalKind.TRACE

    def spacing(self, segment: Stretch) -> Spacing:
        """The trace's offsets as they are."""
        return Listed(segment.arrivals.offsets)

    def record(self, segment: Stretch) -> ArrivalsRecord:
        """The kind, the file, how many arrivals, and whether it named their workloads."""
        arrivals = segment.arrivals
        return ArrivalsRecord(
            self.name,
            file=arrivals.trace,
            arrivals=len(arrivals.offsets),
            workloads=bool(arrivals.workloads),
        )


KINDS: dict[ArrivalKind, Spacer] = {k.name: k for k in (Uniform(), Poisson(), Trace())}


@lru_cache(maxsize=32)
def poisson_offsets(seed: int, phase: str, rate: float, length_s: float) -> memoryview:
    """Due offsets of a Poisson phase: cumulative unit exponentials over the rate, below
    ``length_s``. Arrival k's offset depends on (seed, phase, rate, k) alone."""
    entropy = [seed, int.from_bytes(phase.encode(), "little")]
    generator = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))
    expected = length_s * rate
    batch = int(expected + POISSON_MARGIN_SD * math.sqrt(expected)) + 16
    units = generator.standard_exponential(batch)
    np.cumsum(units, out=units)
    parts = [units]
    while parts[-1][-1] / rate < length_s:
        # Summed on from the last total, in order, exactly as one longer batch would be.
        more = np.concatenate(([parts[-1][-1]], generator.standard_exponential(batch)))
        np.cumsum(more, out=more)
        parts.append(more[1:])
    offsets = parts[0] if len(parts) == 1 else np.concatenate(parts)
    offsets /= rate
    # A memoryview indexes to plain floats, as fast as a tuple, at 8 bytes an offset.
    return offsets.data[: int(np.searchsorted(offsets, length_s, side="left"))]
