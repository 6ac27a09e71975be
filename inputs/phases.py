"""The phases: each one's name, length, rate and reason, and how its arrivals are spaced.

A phase reads and checks itself (Phase.read), its arrival process too (Arrivals.read: a
kind, a trace file to read and spread over the phase, or a trace as a run recorded it),
and the list of phases checks what no single phase can: unique names, and a plan small
enough to enumerate.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from enum import StrEnum
from pathlib import Path

from msgspec import Struct
from msgspec.structs import replace

from inputs.bad_input import Problems, label, shown
from inputs.numbers import positive
from inputs.trace_file import read_trace

# The phase every other phase is held against, and the one whose numbers must come back to
# it: the verdict judges recovery between them, and a plan must offer enough of both.
BASELINE_PHASE = "sustain"
RECOVERY_PHASE = "recover"

# Phases shorter than this cannot hold a meaningful arrival schedule, even scaled.
MIN_PHASE_S = 2.0

# Every number is finite and within these bounds, so a typo in units is refused, not planned.
# The most arrivals per second a phase may ask: above what one master takes in (measured by
# bench/master_rate.py, which must offer past it; docs/internals.md), so no distributed run
# is refused for its size, while 1.0e+12 is refused instead of planned until the machine
# gives up.
MAX_RATE = 1_000_000.0
# The longest phase: a day, a soak test; a longer one is a unit slip (ms for s).
MAX_PHASE_S = 86_400.0
# The most arrivals a run may plan in all: a run enumerates its plan to count what each
# phase offers (run.json), which stays seconds up to here.
MAX_ARRIVALS = 100_000_000


class ArrivalKind(StrEnum):
    """How a phase's arrivals may be spaced in time: the one list of kinds, which
    engine/arrivals.py implements member by member. Uniform unless a phase says otherwise,
    because two uniform runs offer the same instants and compare cleanly."""

    UNIFORM = "uniform"
    POISSON = "poisson"
    TRACE = "trace"


class Arrivals(Struct, frozen=True, omit_defaults=True):
    """How a phase's arrivals are spaced (engine/arrivals.py draws them): ``kind`` is one of
    ArrivalKind. A trace also keeps the file it was read from and its arrivals, already
    spread over the phase (inputs/trace_file.py), so a run's record replays without the file."""

    kind: ArrivalKind = ArrivalKind.UNIFORM
    trace: str = ""
    offsets: tuple[float, ...] = ()
    workloads: tuple[str, ...] = ()

    def without(self, workloads: Collection[str]) -> Arrivals:
        """A trace that names its arrivals' workloads, without those of ``workloads`` (a
        platform that does not offer them): the others keep their instants."""
        if not self.workloads:
            return self
        kept = [i for i, name in enumerate(self.workloads) if name not in workloads]
        return replace(
            self,
            offsets=tuple(self.offsets[i] for i in kept),
            workloads=tuple(self.workloads[i] for i in kept),
        )

    def within(self, duration_s: float) -> Arrivals:
        """The arrivals a phase shortened to ``duration_s`` keeps: a trace's beginning."""
        kept = sum(1 for offset in self.offsets if offset < duration_s)
        return replace(self, offsets=self.offsets[:kept], workloads=self.workloads[:kept])

    def to_dict(self) -> str | dict:
        """As a scenario file says it; a trace with its arrivals, which a record replays."""
        if self.kind != ArrivalKind.TRACE:
            return self.kind.value
        return {
            "trace": self.trace,
            "offsets": list(self.offsets),
            "workloads": list(self.workloads),
        }

    @classmethod
    def read(
        cls,
        raw: object,
        where: str,
        duration_s: float | None,
        workloads: set[str] | None,
        base: Path | None,
        problems: Problems,
    ) -> Arrivals | None:
        """A phase's arrival process: a kind's name, or ``{trace: FILE}`` (read, and spread
        over the phase when its length is known), or a recorded trace ``{trace, offsets,
        workloads}`` taken as it is; None, and its problems, when it is none of these."""
        if isinstance(raw, str) and raw in set(ArrivalKind) - {ArrivalKind.TRACE}:
            return cls(ArrivalKind(raw))
        if not isinstance(raw, dict) or not isinstance(raw.get("trace"), str) or not raw["trace"]:
            kinds = ", ".join(k for k in ArrivalKind if k != ArrivalKind.TRACE)
            problems.add(
                f"{where}: {shown(raw)} is not an arrival process; use {kinds} or {{trace: FILE}} "
                "(a CSV of offsets in seconds)"
            )
            return None
        unknown = set(raw) - {"trace", "offsets", "workloads"}
        if unknown:
            problems.add(f"{where}: {sorted(map(label, unknown))} unknown; give only trace: FILE")
            return None
        if "offsets" in raw:
            return cls._recorded(raw, where, workloads, problems)
        path = Path(raw["trace"])
        file = path if base is None else base / path
        trace, lines = read_trace(file, f"{where}.trace", workloads)
        for line in lines:
            problems.add(line)
        if trace is None or duration_s is None:
            return None
        return cls(ArrivalKind.TRACE, raw["trace"], trace.spread_over(duration_s), trace.workloads)

    @classmethod
    def _recorded(
        cls, raw: dict, where: str, workloads: set[str] | None, problems: Problems
    ) -> Arrivals | None:
        """A trace as a run recorded it: offsets already spread over the phase, sorted."""
        offsets, named = raw["offsets"], raw.get("workloads") or []
        numbers = isinstance(offsets, list) and all(
            isinstance(o, int | float) and not isinstance(o, bool) and math.isfinite(o) and o >= 0
            for o in offsets
        )
        if not numbers or offsets != sorted(offsets):
            problems.add(f"{where}.offsets: expected sorted offsets in seconds, 0 or more")
            return None
        known = workloads is None or set(named) <= workloads
        if named and (len(named) != len(offsets) or not known):
            problems.add(f"{where}.workloads: expected one workload of the mix per offset, or none")
            return None
        return cls(
            ArrivalKind.TRACE, raw["trace"], tuple(map(float, offsets)), tuple(map(str, named))
        )


class Phase(Struct, frozen=True, omit_defaults=True):
    name: str
    duration_s: float
    rate: float
    reason: str
    arrivals: Arrivals = Arrivals()

    def thinned(self, kept: float, not_offered: Collection[str]) -> Phase:
        """The phase with the arrivals of ``not_offered`` workloads left out and every other
        workload's rate as it was: a rate shrinks to the ``kept`` share of the mix, a trace
        that names workloads drops theirs. A trace without names has no arrivals of one
        workload to drop: its rate stays, and the offered workloads take the whole of it."""
        if self.arrivals.kind != ArrivalKind.TRACE:
            return replace(self, rate=self.rate * kept)
        if not self.arrivals.workloads:
            return self
        arrivals = self.arrivals.without(not_offered)
        return replace(self, rate=len(arrivals.offsets) / self.duration_s, arrivals=arrivals)

    def lasting(self, duration_s: float) -> Phase:
        """The phase shortened (or lengthened) to ``duration_s``; a trace keeps its beginning."""
        return replace(self, duration_s=duration_s, arrivals=self.arrivals.within(duration_s))

    @classmethod
    def read(
        cls,
        spec: dict,
        as_run: bool,
        workloads: set[str] | None,
        base: Path | None,
        problems: Problems,
    ) -> Phase | None:
        """The phase named in ``spec``: its length, its arrivals and its rate (a trace's, read
        from its file, or the one written); None, and its problems, when any is refused."""
        where = f"phases.{label(spec['name'])}"
        duration = positive(
            spec.get("duration_s"), f"{where}.duration_s", problems, most=MAX_PHASE_S
        )
        given = spec.get("arrivals", ArrivalKind.UNIFORM.value)
        arrivals = Arrivals.read(given, f"{where}.arrivals", duration, workloads, base, problems)
        if isinstance(given, dict) and "offsets" not in given:
            # A trace read from its file says the rate (none if it or the length was refused).
            rate = None
            if arrivals is not None and duration is not None:
                rate = _trace_rate(spec, where, arrivals, duration, problems)
        else:
            rate = _rate(spec.get("rate"), f"{where}.rate", as_run, problems)
        if duration is None or rate is None or arrivals is None:
            return None
        return cls(str(spec["name"]), duration, rate, str(spec.get("reason", "")), arrivals)


def read_phases(
    raw: object, as_run: bool, workloads: set[str] | None, base: Path | None, problems: Problems
) -> tuple[tuple[Phase, ...], tuple[str, ...]]:
    """The valid phases, and every phase name given: thresholds and judging may name a phase
    whose numbers were refused without being refused again for it.

    ``as_run`` reads a run's record, where a phase may have rate 0 (a users-mode step, a
    sweep's rest); a trace file is read relative to ``base`` (the working folder if None).
    """
    if not isinstance(raw, list) or not raw:
        problems.add("phases: expected a list of {name, duration_s, rate, reason}")
        return (), ()
    phases: list[Phase] = []
    seen: dict[str, None] = {}
    for i, spec in enumerate(raw):
        if not isinstance(spec, dict) or not spec.get("name"):
            problems.add(f"phases[{i}]: expected a mapping with a name")
            continue
        name = str(spec["name"])
        if name in seen:
            problems.add(f"phases[{i}].name: {shown(name)} appears twice; names must be unique")
            continue
        seen[name] = None
        phase = Phase.read(spec, as_run, workloads, base, problems)
        if phase is not None:
            phases.append(phase)
    return tuple(phases), tuple(seen)


def check_plan_size(phases: tuple[Phase, ...], problems: Problems, fix: str = "") -> None:
    """One problem when the phases plan more than MAX_ARRIVALS arrivals in all."""
    planned = sum(p.rate * p.duration_s for p in phases)
    if planned > MAX_ARRIVALS:
        problems.add(
            f"phases: {planned:.3g} arrivals planned in all, more than {MAX_ARRIVALS:.0e}; "
            f"{fix or 'lower the rates or shorten the phases'}"
        )


def _rate(value: object, where: str, as_run: bool, problems: Problems) -> float | None:
    """A phase's rate: above 0, or also 0 in a run's record (a users step, a sweep's rest)."""
    if as_run and value == 0 and not isinstance(value, bool):
        return 0.0
    return positive(value, where, problems, most=MAX_RATE)


def _trace_rate(
    spec: dict, where: str, arrivals: Arrivals, duration_s: float, problems: Problems
) -> float | None:
    """A trace phase's rate: its arrivals over its length, which a written rate must not
    contradict (the trace, not the rate, says how many arrivals there are)."""
    rate = len(arrivals.offsets) / duration_s
    if "rate" in spec:
        problems.add(
            f"{where}.rate: a trace phase's rate is its trace's ({len(arrivals.offsets)} "
            f"arrivals over {duration_s:g} s, {rate:g}/s); drop rate"
        )
        return None
    return rate
