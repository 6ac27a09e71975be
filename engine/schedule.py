"""The arrival schedule: absolute due times for every global arrival index of a run.

Arrival j of a segment is due at ``start_s`` plus its kind's j-th offset (uniform:
``j / rate``; engine/arrivals.py has the kinds), so a late dispatch never shifts the
ones after it. A segment is a phase of the scenario, or a stretch of constant rate
that ends when the operator changes the rate. Every process holds the same segments
(the master sends them), computes due times with the same float operations, and so
agrees on which index is due when without talking.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import overload

import msgspec

from engine.arrivals import KINDS, Spacing
from engine.run_record import ArrivalsRecord
from inputs.phases import Arrivals, Phase
from inputs.scenario import Scenario


@dataclass(frozen=True)
class Segment:
    """A stretch of one rate and arrival kind; ``end_s`` is None while the operator may still
    change it. ``seed`` is the scenario's, for kinds that draw (engine/arrivals.py)."""

    name: str
    rate: float
    start_s: float
    end_s: float | None
    first_index: int
    reason: str = ""
    arrivals: Arrivals = field(default_factory=Arrivals)
    seed: int = 0

    @cached_property
    def _spacing(self) -> Spacing:
        return KINDS[self.arrivals.kind].spacing(self)

    @overload
    def count(self, until_s: float) -> int: ...
    @overload
    def count(self, until_s: None = None) -> int | None: ...
    def count(self, until_s: float | None = None) -> int | None:
        """Arrivals due before the end (or ``until_s``, if earlier); None if unbounded."""
        ends = [t for t in (self.end_s, until_s) if t is not None]
        if not ends:
            return None
        return self._spacing.count(min(ends) - self.start_s)

    def closed_count(self) -> int:
        """Arrivals in a segment that has ended; ValueError for an open one (unbounded)."""
        return self.count(self.closed_end_s())

    def span_s(self) -> float:
        """Seconds from the segment's start to its end; ValueError for an open one."""
        return self.closed_end_s() - self.start_s

    def closed_end_s(self) -> float:
        """When a segment that has ended ends; ValueError for an open one."""
        if self.end_s is None:
            raise ValueError(f"segment {self.name} is open: it has no end yet")
        return self.end_s

    def due_s(self, j: int) -> float:
        """When arrival j of this segment is due, in seconds from the run start."""
        return self.start_s + self._spacing.offset_s(j)

    def arrivals_record(self) -> ArrivalsRecord:
        """What run.json and the reports say of this segment's arrival process."""
        return KINDS[self.arrivals.kind].record(self)


@dataclass(frozen=True)
class Plan:
    """The run's segments in time order; their indexes are consecutive from 0."""

    segments: tuple[Segment, ...]

    @classmethod
    def from_scenario(cls, scenario: Scenario) -> Plan:
        """The scenario's phases back to back from t = 0, as given (scale them first)."""
        segments, start, first = [], 0.0, 0
        for phase in scenario.phases:
            end = start + phase.duration_s
            segment = Segment(
                phase.name,
                phase.rate,
                start,
                end,
                first,
                phase.reason,
                phase.arrivals,
                scenario.seed,
            )
            segments.append(segment)
            first += segment.closed_count()
            start = end
        return cls(tuple(segments))

    @classmethod
    def constant(cls, rate: float) -> Plan:
        """An open-ended constant rate from t = 0, for exploratory runs."""
        return cls((Segment(_rate_name(0, rate), rate, 0.0, None, 0, "set by the operator"),))

    @property
    def closed(self) -> bool:
        """True when the last segment has an end, so the plan offers a finite count."""
        return self.segments[-1].end_s is not None

    @property
    def end_s(self) -> float | None:
        """When the last segment ends, None while it is open."""
        return self.segments[-1].end_s

    def total(self) -> int:
        """Arrivals in a closed plan."""
        return self.segments[-1].first_index + self.segments[-1].closed_count()

    def closed_at(self, at_s: float) -> Plan:
        """The plan with its open segment ended at ``at_s`` (earlier ends are kept)."""
        last = self.segments[-1]
        if last.end_s is not None and last.end_s <= at_s:
            return self
        return Plan((*self.segments[:-1], replace(last, end_s=max(at_s, last.start_s))))

    def with_rate(self, rate: float, at_s: float) -> Plan:
        """The plan with the open segment ended at ``at_s`` and a new rate from then on.

        A segment that would not have started by then is replaced, never left empty.
        """
        last = self.segments[-1]
        if at_s <= last.start_s:
            return Plan((*self.segments[:-1], replace(last, rate=rate)))
        ended = self.closed_at(at_s)
        last = ended.segments[-1]
        first = last.first_index + last.closed_count()
        name = _rate_name(len(ended.segments), rate)
        segment = Segment(name, rate, at_s, None, first, "set by the operator")
        return Plan((*ended.segments, segment))

    def as_run(self, end_s: float) -> Plan:
        """The plan as it ran until ``end_s``: the open segment ends there, unstarted ones go."""
        closed = self.closed_at(end_s)
        return Plan(tuple(s for s in closed.segments if s.span_s() > 0) or closed.segments[:1])

    def scenario_as_run(self, scenario: Scenario) -> Scenario:
        """The scenario with this plan's segments as its phases (a constant-rate run's rates),
        each threshold applied to every segment and the judging's defaults to the phases it
        still has; unchanged when the segments are its phases."""
        if [s.name for s in self.segments] == [p.name for p in scenario.phases]:
            return scenario
        phases = tuple(
            Phase(s.name, s.span_s(), s.rate, s.reason, s.arrivals) for s in self.segments
        )
        names = tuple(s.name for s in self.segments)
        thresholds = tuple(msgspec.structs.replace(t, phases=names) for t in scenario.thresholds)
        judging = scenario.judging.within(names)
        return msgspec.structs.replace(
            scenario, phases=phases, thresholds=thresholds, judging=judging
        )

    def due_before(self, at_s: float) -> int:
        """How many arrivals were due before ``at_s``: what the schedule has offered by then."""
        return sum(segment.count(at_s) for segment in self.segments)

    def indexes_before(self, until_s: float | None = None) -> Iterator[tuple[int, int]]:
        """(segment number, global index) of every arrival due before ``until_s`` (or the end)."""
        for number, segment in enumerate(self.segments):
            count = segment.count(until_s)
            if count is None:
                raise ValueError("an open plan has no last arrival; give until_s")
            for j in range(count):
                yield number, segment.first_index + j


def _rate_name(number: int, rate: float) -> str:
    return f"rate{number + 1}@{rate:g}/s"


class SlotCursor:
    """Walks one process's share of a plan: global indexes slot, slot + W, slot + 2W, ...

    The plan may grow while it walks (a rate change closes the open segment and
    appends a new one), so it peeks against the current plan each time.
    """

    def __init__(self, slot: int, workers: int):
        self.slot = slot
        self.workers = workers
        self.segment = 0
        self._j: int | None = None
        # The current segment's arrival count, kept while the plan object stays the same.
        self._counted: tuple[Plan, int, int | None] | None = None

    def peek(self, plan: Plan) -> tuple[int, int, float] | None:
        """(segment number, global index, due_s) of this slot's next arrival, None when done."""
        while self.segment < len(plan.segments):
            segment = plan.segments[self.segment]
            if self._j is None:
                self._j = (self.slot - segment.first_index) % self.workers
            counted = self._counted
            if counted is None or counted[0] is not plan or counted[1] != self.segment:
                counted = self._counted = (plan, self.segment, segment.count())
            count = counted[2]
            if count is None or self._j < count:
                return self.segment, segment.first_index + self._j, segment.due_s(self._j)
            self.segment += 1
            self._j = None
        return None

    def advance(self) -> None:
        """Move past the arrival ``peek`` returned."""
        assert self._j is not None
        self._j += self.workers
