"""Whether a run can be used as a result at all, and what a reader must know beside it.

A run whose driver fell behind or lost samples, or that did not complete, is invalid
rather than failed: it judges nothing. A warning (a busy generator, an unverified TLS
peer, files a killed writer cut off) does not by itself invalidate the run.
"""

from __future__ import annotations

from engine.run_record import INSECURE_WARNING
from reports import formatting as fmt
from reports.rundir import Run
from reports.stats import RunStats
from reports.system import SystemStats

# How a warning about files a killed writer cut off begins (the console prints it too).
DAMAGED = "files cut off, read up to the cut: "


def invalid_reasons(run: Run, stats: RunStats) -> tuple[str, ...]:
    """Why the run cannot be used as a result; empty when it can."""
    reasons = []
    recorded = stats.lateness.recorded
    if recorded != run.offered:
        offered = "requests its users sent" if run.closed_loop else "arrivals were offered"
        reasons.append(
            f"recorded {fmt.plural(recorded, 'sample')} but run.json says {run.offered} {offered}"
        )
    reasons += [
        f"phase {p.name}: recorded {fmt.plural(p.recorded, 'sample')} of {p.offered} offered"
        for p in stats.phases
        if p.recorded != p.offered
    ]
    stopped = run.record.stopped
    if run.stopped_by_operator:
        when = f" at t = {run.record.duration_s:.1f} s"
        reasons.append(f"stopped by the operator{when}; a partial run is not a result")
    elif stopped != "completed":
        reasons.append(
            f"the run did not complete (stopped: {stopped}); a partial run is not a result"
        )
    if run.record.ended_at is None:
        reasons.append("run.json has no ended_at: the run was killed before it ended")
    lateness = run.scenario.lateness
    fraction = stats.lateness.fraction
    # A closed loop has no schedule to fall behind: a request is due when its user sends it.
    if run.closed_loop:
        return tuple(reasons)
    if fraction is not None and fraction > lateness.max_late_fraction:
        reasons.append(
            f"{stats.lateness.late} of {recorded} dispatches were late (sent more than "
            f"{lateness.late_after_ms:g} ms after due, or never sent): {fraction:.2%}, above the "
            f"scenario's tolerance of {lateness.max_late_fraction:.2%}"
        )
    return tuple(reasons)


def warnings(run: Run, system: SystemStats) -> tuple[str, ...]:
    """Things a reader must know that do not by themselves invalidate the run."""
    busy = tuple(
        f"{g.probe} may have been the bottleneck: {g.why}" for g in system.generators if g.busy
    )
    # False only where the run was told --insecure (older runs did not record it).
    unverified = (INSECURE_WARNING,) if run.record.tls_verified is False else ()
    # What a killed writer (or a full disk) cut off: the report reads what was written before.
    damaged = (f"{DAMAGED}{run.damage}",) if run.damage else ()
    return damaged + unverified + busy
