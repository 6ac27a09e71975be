"""Checks a plan offers too few arrivals to judge, said before any load with what reaches them.

Every check has a minimum count (scenario.yaml ``judging.min_counts``): below it a
p95 is the largest value seen and an error rate bounds nothing. The schedule and
the mix are deterministic, so before a single request the plan knows how many
arrivals of each workload each phase offers, and which chat turns it will cancel
(those are not timed as whole turns). A check its plan cannot judge is said then,
one line each, with the ``--scale`` (or ``--run-time``) that reaches it, instead of
a verdict after the load that passes on three samples or blames the platform for
a plan that offered none. The run still goes ahead (a short exploratory run is
legitimate), and its verdict is INCONCLUSIVE, exit 2, unless something it could
judge failed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from engine.mix import Mix
from engine.schedule import Plan
from inputs.phases import BASELINE_PHASE, RECOVERY_PHASE
from inputs.scenario import Scenario
from inputs.thresholds import metric_name

# The one workload whose arrivals the plan may cancel (after the first token); a cancelled
# turn is not timed as a whole turn, so it does not count towards a whole-turn percentile.
CANCELLED_WORKLOAD = "chat_stream"
# --scale values a reader would type, tried in order for the smallest that reaches a check:
# 0.05 steps to 1, quarter steps to 4, then whole numbers to MAX_SCALE.
MAX_SCALE = 20
SCALES = (
    *(round(0.05 * k, 2) for k in range(1, 21)),
    *(1 + 0.25 * k for k in range(1, 13)),
    *range(5, MAX_SCALE + 1),
)
# The longest --run-time suggested: a day; beyond it the share or the minimum is the fix.
MAX_RUN_TIME_S = 86_400
# Where a check counts the whole run rather than one phase.
WHOLE_RUN = "the whole run"


@dataclass(frozen=True)
class Planned:
    """What a plan offers one workload in one phase: arrivals, and of them those whose whole
    latency is timed when they succeed (all but the chat turns it cancels)."""

    arrivals: int
    timeable: int


@dataclass(frozen=True)
class Shortfall:
    """One check the plan offers fewer than its minimum: what it counts, planned and needed."""

    workload: str
    phase: str
    check: str
    planned: int
    needed: int
    # True when the check counts timed arrivals (a whole-turn percentile), not all arrivals.
    timed: bool = False

    def planned_in(self, counts: dict[tuple[str, str], Planned]) -> int:
        """What this check counts in another plan's counts (as ``planned_counts`` gives them)."""
        if self.phase == WHOLE_RUN:
            return sum(p.arrivals for (_, w), p in counts.items() if w == self.workload)
        found = counts.get((self.phase, self.workload), Planned(0, 0))
        return found.timeable if self.timed else found.arrivals

    def line(self, fix: str) -> str:
        """The one line said before load."""
        what = ("timed arrival" if self.timed else "arrival") + ("" if self.planned == 1 else "s")
        return (
            f"inconclusive before load: {self.workload} {self.check} in {self.phase}: the plan "
            f"offers {self.planned:,} {what}, the check needs {self.needed:,}; {fix}"
        )


def planned_counts(scenario: Scenario, plan: Plan) -> dict[tuple[str, str], Planned]:
    """(segment name, workload) -> what a closed plan offers, for every offered workload."""
    mix = Mix.from_scenario(scenario)
    counts = {}
    for segment in plan.segments:
        picked, cancelled = mix.counts_in(segment)
        for name in scenario.offered:
            skipped = cancelled.get(name, 0) if name == CANCELLED_WORKLOAD else 0
            counts[segment.name, name] = Planned(picked.get(name, 0), picked.get(name, 0) - skipped)
    return counts


def shortfalls(scenario: Scenario, plan: Plan) -> tuple[Shortfall, ...]:
    """Every check of ``scenario`` run on ``plan`` whose planned count is below its minimum.

    Empty for an open plan (no end, so no count) and for segments offered at rate 0 (a
    closed loop's steps and a sweep's rest have no schedule to count). A workload the
    scenario gives no share has no checks.
    """
    scheduled = {s.name for s in plan.segments if s.rate > 0}
    if not plan.closed or not scheduled:
        return ()
    scenario = plan.scenario_as_run(scenario)
    counts = planned_counts(scenario, plan)
    found = []
    for t in scenario.thresholds:
        if t.workload not in scenario.offered:
            continue
        timed = t.metric != "error_rate" and not t.metric.endswith("_ttft_ms")
        for phase in t.phases:
            if phase not in scheduled:
                continue
            short = Shortfall(t.workload, phase, metric_name(t.metric), 0, t.min_count, timed)
            have = short.planned_in(counts)
            if have < t.min_count:
                found.append(replace(short, planned=have))
    found += _recovery(scenario, counts, scheduled)
    for name in scenario.offered:
        if not any(counts[s.name, name].arrivals for s in plan.segments):
            found.append(Shortfall(name, WHOLE_RUN, "any sample", 0, 1))
    return tuple(found)


def _recovery(
    scenario: Scenario, counts: dict[tuple[str, str], Planned], scheduled: set[str]
) -> list[Shortfall]:
    """Each workload whose sustain or recover (the smaller) offers fewer than recovery needs."""
    if not {BASELINE_PHASE, RECOVERY_PHASE} <= scheduled:
        return []
    need = scenario.judging.min_counts.recovery
    found = []
    for name in scenario.offered:
        have, phase = min(
            (counts[phase, name].arrivals, phase) for phase in (RECOVERY_PHASE, BASELINE_PHASE)
        )
        if have < need:
            found.append(Shortfall(name, phase, "recovery", have, need))
    return found


def scale_fixes(base: Scenario, found: tuple[Shortfall, ...], scale: float) -> list[str]:
    """For each shortfall, the smallest --scale above ``scale`` (of SCALES) that reaches it,
    as the line's fix, then one line with the smallest that reaches them all; ``base`` is
    the scenario before scaling."""
    fixes: dict[Shortfall, str] = {}
    everything = None
    for candidate in SCALES:
        if candidate <= scale:
            continue
        scaled = base.scaled(candidate)
        counts = planned_counts(scaled, Plan.from_scenario(scaled))
        reached = 0
        for short in found:
            have = short.planned_in(counts)
            reached += have >= short.needed
            if short not in fixes and have >= short.needed:
                fixes[short] = f"--scale {candidate:g} offers {have:,}"
        if reached == len(found):
            everything = candidate
            break
    beyond = (
        f"no --scale up to {MAX_SCALE} reaches it; raise the workload's share or lower "
        "judging.min_counts"
    )
    lines = [short.line(fixes.get(short, beyond)) for short in found]
    if everything is not None and len(found) > 1:
        lines.append(
            f"inconclusive before load: {len(found)} checks; --scale {everything:g} offers "
            "every one its minimum"
        )
    return lines


def run_time_fixes(scenario: Scenario, found: tuple[Shortfall, ...], rate: float) -> list[str]:
    """For each shortfall of a constant-rate plan, the shortest whole-second --run-time at
    ``rate`` that reaches it (counts grow with the run time: the plan's arrivals are a
    prefix of one sequence, so a bisection finds it)."""
    lines = []
    for short in found:
        low, high = 1, MAX_RUN_TIME_S
        if _constant(scenario, rate, high, short) < short.needed:
            lines.append(
                short.line(
                    f"no --run-time up to {MAX_RUN_TIME_S:,} s reaches it at {rate:g}/s; raise "
                    "the rate or the workload's share"
                )
            )
            continue
        while low < high:
            middle = (low + high) // 2
            if _constant(scenario, rate, middle, short) >= short.needed:
                high = middle
            else:
                low = middle + 1
        have = _constant(scenario, rate, low, short)
        lines.append(short.line(f"--run-time {low}s at {rate:g}/s offers {have:,}"))
    return lines


def _constant(scenario: Scenario, rate: float, seconds: int, short: Shortfall) -> int:
    """What ``short`` counts in a constant-rate plan of ``seconds``, its one segment named as
    the shortfall's phase."""
    plan = Plan.constant(rate).closed_at(float(seconds))
    counts = planned_counts(scenario, plan)
    return short.planned_in({(short.phase, w): p for (_, w), p in counts.items()})


def longer_phase_fixes(found: tuple[Shortfall, ...], plan: Plan) -> list[str]:
    """For a plan that is neither the scenario's phases nor one constant rate (a rate sweep):
    roughly how long the phase would need to be at its rate."""
    rates = {s.name: s for s in plan.segments}
    lines = []
    for short in found:
        segment = rates.get(short.phase)
        if segment is None or short.planned == 0:
            lines.append(short.line(f"a longer {short.phase} offers more"))
            continue
        seconds = math.ceil(segment.span_s() * short.needed / short.planned)
        lines.append(short.line(f"about {seconds:,} s of {short.phase} offers it"))
    return lines
