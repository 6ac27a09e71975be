"""What differs about two runs before any number is read: their plan, platform, and where they ran.

A change between two runs is the release's only when they are one experiment on one
platform: a shorter burst builds a shorter queue, and another platform is another
product, so a difference of plan or platform decides what the comparison may claim
(``Pairing``). Where they ran (machine, topology, workers, address) is stated, not
refused: a release is often a change of configuration. Ports a local stack picked from
the ephemeral range are no difference. Everything compare reads of run.json is read in
``facts``, so the typed run record replaces one function.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

import msgspec

from engine.run_record import ArrivalsRecord, Machine
from inputs.phases import ArrivalKind
from reports import formatting as fmt
from reports.rundir import Run

# Scenario fields that judge a run without changing what it offered (the verdicts beside the
# numbers say which limits applied), and fields said per phase below; every other field is
# part of the plan, including any a later scenario adds. A Poisson seed is another draw of
# the same process (docs/arrivals.md).
NOT_PLAN = ("thresholds", "judging", "lateness", "seed", "phases")
# Ports from here up are the ephemeral range (Linux's starts at 32768, IANA's at 49152): the
# random port a local stack's stub or platform was given, not a difference between runs.
EPHEMERAL_PORTS = 32768
ADDRESS_PORT = re.compile(
    r"(\b[a-z][a-z0-9+.-]*://[^\s/:,()\[\]]+|\[[0-9a-fA-F:.]+\]|\b\d{1,3}(?:\.\d{1,3}){3}"
    r"|\blocalhost):(\d{1,5})\b"
)


class Pairing(Enum):
    """What a pair of runs can answer."""

    GATE = "one plan on one platform: a regression gate"
    PLATFORMS = "two platforms, one plan: side by side, not a regression gate"
    PLANS = "two plans: side by side, no change claimed"


@dataclass(frozen=True)
class Facts:
    """What run.json says of how and where a run ran, as compare reads it."""

    platform: str | None
    mode: str
    scale: float | None
    started_at: str
    host: str
    topology: str
    machine: Machine | None
    workers: object


@dataclass(frozen=True)
class Differences:
    """How two runs differ: in plan (each a sentence), platform (a sentence or None), and
    where they ran (each a sentence)."""

    plan: tuple[str, ...]
    platform: str | None
    environment: tuple[str, ...]

    @property
    def pairing(self) -> Pairing:
        if self.plan:
            return Pairing.PLANS
        return Pairing.PLATFORMS if self.platform else Pairing.GATE


def facts(run: Run) -> Facts:
    """The run's record as compare needs it: platform, mode, scale, addresses without their
    ephemeral ports, machine, workers."""
    record = run.record
    return Facts(
        platform=record.platform.name if record.platform is not None else None,
        mode=record.mode,
        scale=float(record.scale),
        started_at=record.started_at,
        host=without_ephemeral_ports(record.host),
        topology=without_ephemeral_ports(record.topology),
        machine=record.machine,
        workers=record.workers,
    )


def without_ephemeral_ports(text: str) -> str:
    """``text`` with every address's port from the ephemeral range left out."""

    def drop(match: re.Match) -> str:
        return match[1] if int(match[2]) >= EPHEMERAL_PORTS else match[0]

    return ADDRESS_PORT.sub(drop, text)


def differences(base: Run, run: Run) -> Differences:
    """Every way the two runs differ in plan, platform and environment."""
    old, new = facts(base), facts(run)
    platform = None
    if old.platform != new.platform and (old.platform or new.platform):
        platform = f"{_said(old.platform)} in BASE, {_said(new.platform)} in RUN"
    return Differences(plan_differences(base, run), platform, _environment(old, new))


def plan_differences(base: Run, run: Run) -> tuple[str, ...]:
    """How the two plans differ: the mode, each phase (length, rate, arrivals, users) with the
    scales when they differ, then every other field of the scenario that shapes the load."""
    old, new = facts(base), facts(run)
    found = []
    if old.mode != new.mode:
        found.append(f"mode: {old.mode} in BASE, {new.mode} in RUN")
    a, b = phase_plan(base), phase_plan(run)
    if [name for name, _ in a] != [name for name, _ in b]:
        found.append(
            f"phases: {', '.join(n for n, _ in a)} in BASE, {', '.join(n for n, _ in b)} in RUN"
        )
    else:
        moved = [
            f"{name} {was} in BASE, {now} in RUN"
            for (name, was), (_, now) in zip(a, b, strict=True)
            if was != now
        ]
        if moved and old.scale != new.scale:
            moved.insert(0, f"scale {_said(old.scale)} in BASE, {_said(new.scale)} in RUN")
        if moved:
            found.append("phases: " + "; ".join(moved))
    found += _scenario_differences(base, run)
    return tuple(found)


def phase_plan(run: Run) -> list[tuple[str, str]]:
    """Each phase as planned, in words: ``(name, "60 s at 12/s")``, with its arrival kind
    where it is not uniform and its users in users mode."""
    planned = {p.name: p for p in run.scenario.phases}
    said = []
    for window in run.phases:
        phase = planned[window.name]
        text = f"{phase.duration_s:g} s"
        step = run.users_step(window.name)
        if run.closed_loop:
            users = step.users if step is not None else None
            text += f" with {_said(users)} user{'' if users == 1 else 's'}"
        else:
            text += f" at {phase.rate:g}/s"
        kind = _arrival_kind(window.arrivals)
        if kind != "uniform":
            text += f" ({kind})"
        said.append((window.name, text))
    return said


def plan_text(run: Run) -> str:
    """The whole plan on one line, for the runs table."""
    scale = facts(run).scale
    phases = ", ".join(f"{name} {text}" for name, text in phase_plan(run))
    return f"{phases} (scale {_said(scale)})"


def _arrival_kind(record: ArrivalsRecord) -> str:
    """A phase's arrival kind as a plan states it: a Poisson seed is not part of it."""
    if record.kind == ArrivalKind.POISSON:
        return "poisson"
    return fmt.arrivals(record)


def _scenario_differences(base: Run, run: Run) -> list[str]:
    """Scenario fields other than the phases that differ, each ``field: A in BASE, B in RUN``
    (nested fields by their dotted names); a workload's share counts, its description not."""
    old, new = _plan_fields(base), _plan_fields(run)
    return [
        f"{key}: {_said(old.get(key))} in BASE, {_said(new.get(key))} in RUN"
        for key in sorted(old.keys() | new.keys())
        if old.get(key) != new.get(key)
    ]


def _plan_fields(run: Run) -> dict[str, object]:
    plan = {k: v for k, v in run.scenario.to_dict().items() if k not in NOT_PLAN}
    return _flat(plan)


def _flat(data: dict, prefix: str = "") -> dict[str, object]:
    """Nested fields as ``a.b`` -> value; shares rounded past float noise, descriptions out."""
    flat: dict[str, object] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flat(value, f"{name}."))
        elif key != "description":
            flat[name] = round(value, 9) if isinstance(value, float) else value
    return flat


def _environment(old: Facts, new: Facts) -> tuple[str, ...]:
    """Where the runs ran, where it differs: each machine field, the topology and the host
    (ephemeral ports left out), the load processes."""
    before, after = _fields(old.machine), _fields(new.machine)
    found = [
        f"machine's {key}: {_said(before.get(key))} in BASE, {_said(after.get(key))} in RUN"
        for key in Machine.__struct_fields__
        if before.get(key) != after.get(key)
    ]
    for key, a, b in (
        ("topology", old.topology, new.topology),
        ("host", old.host, new.host),
        ("load processes", old.workers, new.workers),
    ):
        if a != b:
            found.append(f"{key}: {_said(a)} in BASE, {_said(b)} in RUN")
    return tuple(found)


def _said(value: object) -> str:
    if value in (None, ""):
        return "not recorded"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _fields(machine: Machine | None) -> dict[str, object]:
    """A machine record's fields by name ({} for a run that recorded none)."""
    return msgspec.structs.asdict(machine) if machine is not None else {}
