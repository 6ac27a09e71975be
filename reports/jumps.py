"""Failure and shed rates that jumped after the baseline phase, workload by workload.

A workload whose failures jump in burst or recover is flagged even where no threshold
covers it, because a run once "passed" while 58% of one workload's requests were
refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from inputs.phases import BASELINE_PHASE
from reports.stats import Counts, RunStats

# A failure or shed rate this far above sustain's (in absolute terms) is a jump.
JUMP_POINTS = 0.01

JUMP_RULE = (
    f"a workload is flagged when its failure rate (failed, timeout, abandoned) or its shed "
    f"rate in a phase after {BASELINE_PHASE} is more than {JUMP_POINTS * 100:g} percentage "
    f"point above its {BASELINE_PHASE} rate"
)


@dataclass(frozen=True)
class Jump:
    """A workload whose failure or shed rate rose in a phase after the baseline."""

    workload: str
    phase: str
    kind: str
    baseline_rate: float
    rate: float
    count: int
    calls: int


def jumps(stats: RunStats) -> tuple[Jump, ...]:
    """Failure and shed rates that rose after the baseline phase, per workload."""
    baseline = stats.phase(BASELINE_PHASE)
    if baseline is None:
        return ()
    later = stats.phases[stats.phases.index(baseline) + 1 :]
    found = []
    for phase in later:
        for now in phase.judged.workloads:
            before = baseline.judged.workload(now.workload).counts
            if not before.calls or not now.counts.calls:
                continue
            found += _rate_jumps(now.workload, phase.name, before, now.counts)
    return tuple(found)


def _rate_jumps(workload: str, phase: str, before: Counts, now: Counts) -> list[Jump]:
    pairs = (
        ("failure", before.failure_rate, now.failure_rate, now.failures),
        ("shed", before.shed_rate, now.shed_rate, now.shed),
    )
    return [
        Jump(workload, phase, kind, old, new, count, now.calls)
        for kind, old, new, count in pairs
        if old is not None and new is not None and new - old > JUMP_POINTS
    ]
