"""Which workload the k-th arrival of a run is, and whether a chat turn is cancelled.

A die would make two runs at the same rate issue different numbers of uploads, so
the difference between them would be partly luck. An additive low-discrepancy
sequence gives every run the same workloads at the same indexes, spread as evenly
as any finite sequence can be, and lets each worker compute its own share without
talking to the others. A phase replaying a trace that names its workloads offers
those instead (engine/arrivals.py argues why); ``pick_in`` is the one answer to
"which workload is this arrival" for every phase.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from inputs.scenario import Scenario

if TYPE_CHECKING:
    from engine.schedule import Segment

# The golden ratio's fractional part: the additive step whose multiples fill
# [0, 1) most evenly (three-distance theorem), so shares hold over short runs.
GOLDEN_STEP = (math.sqrt(5) - 1) / 2

# sqrt(2) - 1 is rationally independent of the golden step, so the cancelled chat
# turns are spread evenly among the chat turns instead of tracking the mix.
CANCEL_STEP = math.sqrt(2) - 1


@dataclass(frozen=True)
class Mix:
    """The normalised shares as cumulative bins over [0, 1)."""

    names: tuple[str, ...]
    upper_bounds: tuple[float, ...]
    cancel_share: float
    # The workloads with a share above 0: those a trace's line may name and be offered.
    offered: frozenset[str]

    @classmethod
    def from_scenario(cls, scenario: Scenario) -> Mix:
        """The scenario's mix in its file order; the last bin ends at exactly 1."""
        names = tuple(scenario.mix)
        bounds, total = [], 0.0
        for name in names:
            total += scenario.mix[name]
            bounds.append(total)
        bounds[-1] = 1.0
        offered = frozenset(name for name, share in scenario.mix.items() if share > 0)
        return cls(names, tuple(bounds), scenario.chat_cancel_share, offered)

    def pick(self, k: int) -> str:
        """The workload of global arrival k (0-based): the bin of frac(k * golden step)."""
        return self.names[bisect.bisect_right(self.upper_bounds, (k * GOLDEN_STEP) % 1.0)]

    def pick_in(self, segment: Segment, k: int) -> str:
        """The workload of global arrival k of ``segment``: the one its trace's line names, if
        this run offers that workload; otherwise the mix's pick."""
        named = segment.arrivals.workloads
        if named:
            workload = named[k - segment.first_index]
            if workload in self.offered:
                return workload
        return self.pick(k)

    def rates(self, rate: float) -> dict[str, float]:
        """Arrivals a second of each workload when the whole mix arrives at ``rate``."""
        bounds = (0.0, *self.upper_bounds)
        return {name: rate * (bounds[i + 1] - bounds[i]) for i, name in enumerate(self.names)}

    def cancels(self, k: int) -> bool:
        """Whether arrival k, if it is a chat turn, stops after its first token."""
        return (k * CANCEL_STEP) % 1.0 < self.cancel_share

    def counts(self, indexes: Iterable[int]) -> Counter[str]:
        """How many of the given global indexes go to each workload."""
        return Counter(self.pick(k) for k in indexes)

    def counts_in(self, segment: Segment) -> tuple[Counter[str], Counter[str]]:
        """For a closed segment's arrivals: how many go to each workload, and how many of each
        workload's would be cancelled if chat turns.

        ``pick_in`` and ``cancels`` over a segment at once, for plans of millions of arrivals:
        numpy multiplies and takes remainders of float64 exactly as Python does, and
        searchsorted(side="right") is bisect_right, so the answers are the same.
        """
        first, count = segment.first_index, segment.count() or 0
        k = np.arange(first, first + count, dtype="float64")
        bins = np.searchsorted(self.upper_bounds, np.remainder(k * GOLDEN_STEP, 1.0), "right")
        named = segment.arrivals.workloads[:count]
        if named:
            number = {name: i for i, name in enumerate(self.names) if name in self.offered}
            traced = np.array([number.get(name, -1) for name in named], dtype=bins.dtype)
            bins = np.where(traced >= 0, traced, bins)
        cancels = np.remainder(k * CANCEL_STEP, 1.0) < self.cancel_share
        picked = np.bincount(bins, minlength=len(self.names))
        cancelled = np.bincount(bins[cancels], minlength=len(self.names))
        return (
            Counter({n: int(c) for n, c in zip(self.names, picked, strict=True) if c}),
            Counter({n: int(c) for n, c in zip(self.names, cancelled, strict=True) if c}),
        )
