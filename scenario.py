"""The scenario as plain data: the mix, the phases, the timeouts and the thresholds.

Loading validates every field before any load is offered, so a typo costs one
clear line instead of a run measured against a mix nobody looked at. The
generator, the shapes and the reports all read the scenario through this module;
a run directory keeps the normalised dict (``Scenario.to_dict``) so a report can
be rebuilt from it alone.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import yaml

WORKLOADS = ("api_read", "chat_stream", "agent_run", "rag_query", "ingest", "trigger_fire")

# Metrics a threshold may name; latency ones are over successful samples only.
METRICS = (
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "p50_ttft_ms",
    "p95_ttft_ms",
    "p99_ttft_ms",
    "error_rate",
)

# Phases shorter than this cannot hold a meaningful arrival schedule, even scaled.
MIN_PHASE_S = 2.0

DEFAULT_PATH = Path(__file__).with_name("scenario.yaml")


class ScenarioError(ValueError):
    """A scenario field is wrong; the message names the field and the fix."""


@dataclass(frozen=True)
class Workload:
    name: str
    share: float
    description: str


@dataclass(frozen=True)
class Phase:
    name: str
    duration_s: float
    rate: float
    reason: str


@dataclass(frozen=True)
class Threshold:
    workload: str
    metric: str
    limit: float
    why: str = ""
    phase: str = "sustain"


@dataclass(frozen=True)
class Timeouts:
    default_s: float = 60.0
    chat_stream_s: float = 90.0
    agent_run_s: float = 90.0

    def for_workload(self, workload: str) -> float:
        """Seconds the workload may take before its sample says ``timeout``."""
        return {"chat_stream": self.chat_stream_s, "agent_run": self.agent_run_s}.get(
            workload, self.default_s
        )

    @property
    def slowest_s(self) -> float:
        return max(self.default_s, self.chat_stream_s, self.agent_run_s)


@dataclass(frozen=True)
class Lateness:
    late_after_ms: float = 100.0
    max_late_fraction: float = 0.01


@dataclass(frozen=True)
class Scenario:
    name: str
    workloads: tuple[Workload, ...]
    phases: tuple[Phase, ...]
    thresholds: tuple[Threshold, ...]
    chat_cancel_share: float = 0.2
    timeouts: Timeouts = field(default_factory=Timeouts)
    lateness: Lateness = field(default_factory=Lateness)
    shed_counts_as_error: bool = True

    @property
    def mix(self) -> dict[str, float]:
        """Normalised shares, summing to 1; these are what reports print."""
        total = sum(w.share for w in self.workloads)
        return {w.name: w.share / total for w in self.workloads}

    @property
    def peak_rate(self) -> float:
        return max(p.rate for p in self.phases)

    @property
    def duration_s(self) -> float:
        return sum(p.duration_s for p in self.phases)

    @property
    def default_connections(self) -> int:
        """Concurrency an open run can need: peak rate times the slowest timeout."""
        return math.ceil(self.peak_rate * self.timeouts.slowest_s)

    def scaled(self, scale: float) -> Scenario:
        """The same experiment with shorter phases: durations scale, rates never do."""
        if not scale > 0:
            raise ScenarioError(f"--scale: {scale} is not positive; use e.g. 0.1 or 1")
        phases = tuple(
            replace(p, duration_s=max(MIN_PHASE_S, p.duration_s * scale)) for p in self.phases
        )
        return replace(self, phases=phases)

    def to_dict(self) -> dict:
        """The scenario as run, with shares already normalised."""
        data = asdict(self)
        data["phases"] = [asdict(p) for p in self.phases]
        data["thresholds"] = [asdict(t) for t in self.thresholds]
        data["workloads"] = {
            w.name: {"share": self.mix[w.name], "description": w.description}
            for w in self.workloads
        }
        return data


def load_scenario(path: str | Path = DEFAULT_PATH) -> Scenario:
    """The validated scenario in a YAML file, or ScenarioError naming the bad field."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ScenarioError(
            f"scenario: cannot read {path} ({exc.strerror}); pass --scenario PATH"
        ) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"scenario: {path} is not valid YAML ({exc}); fix the syntax") from None
    return scenario_from_dict(raw)


def scenario_from_dict(raw: object, *, as_run: bool = False) -> Scenario:
    """Validate a scenario given as plain data (YAML, or run.json's ``scenario``).

    ``as_run`` reads a run's record, where a phase may have rate 0: a users-mode step
    (closed loop, no arrivals on a schedule) or a sweep's rest. A scenario file may not.
    """
    if not isinstance(raw, dict):
        raise ScenarioError("scenario: expected a mapping with workloads, phases and thresholds")
    for key in raw:
        if key not in Scenario.__dataclass_fields__:
            raise ScenarioError(
                f"{key}: unknown scenario field; use one of {tuple(Scenario.__dataclass_fields__)}"
            )
    workloads = _workloads(raw.get("workloads"))
    phases = _phases(raw.get("phases"), as_run)
    names = {w.name for w in workloads}
    return Scenario(
        name=str(raw.get("name") or "unnamed"),
        workloads=workloads,
        phases=phases,
        thresholds=_thresholds(raw.get("thresholds", []), names, {p.name for p in phases}),
        chat_cancel_share=_fraction(raw.get("chat_cancel_share", 0.2), "chat_cancel_share"),
        timeouts=_timeouts(raw.get("timeouts", {})),
        lateness=_lateness(raw.get("lateness", {})),
        shed_counts_as_error=bool(raw.get("shed_counts_as_error", True)),
    )


def _number(value: object, where: str, fix: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ScenarioError(f"{where}: {value!r} is not a number; {fix}")
    return float(value)


def _positive(value: object, where: str) -> float:
    number = _number(value, where, "give a number above 0")
    if number <= 0:
        raise ScenarioError(f"{where}: {value!r} must be above 0")
    return number


def _rate(value: object, where: str, as_run: bool) -> float:
    """A phase's rate: above 0, or also 0 in a run's record (a users step, a sweep's rest)."""
    if as_run and _number(value, where, "give a rate of 0 or more") == 0:
        return 0.0
    return _positive(value, where)


def _fraction(value: object, where: str) -> float:
    number = _number(value, where, "give a fraction between 0 and 1")
    if not 0 <= number <= 1:
        raise ScenarioError(f"{where}: {value!r} must be between 0 and 1")
    return number


def _workloads(raw: object) -> tuple[Workload, ...]:
    if not isinstance(raw, dict) or not raw:
        raise ScenarioError(f"workloads: expected a mapping of workload to share, e.g. {WORKLOADS}")
    workloads = []
    for name, spec in raw.items():
        if name not in WORKLOADS:
            raise ScenarioError(f"workloads.{name}: unknown workload; use one of {WORKLOADS}")
        spec = spec if isinstance(spec, dict) else {"share": spec}
        share = _number(spec.get("share"), f"workloads.{name}.share", "give a share >= 0")
        if share < 0:
            raise ScenarioError(f"workloads.{name}.share: {share} is negative; use 0 or more")
        workloads.append(Workload(name, share, str(spec.get("description", ""))))
    if sum(w.share for w in workloads) <= 0:
        raise ScenarioError("workloads: shares sum to 0; give at least one workload a share > 0")
    return tuple(workloads)


def _phases(raw: object, as_run: bool = False) -> tuple[Phase, ...]:
    if not isinstance(raw, list) or not raw:
        raise ScenarioError("phases: expected a list of {name, duration_s, rate, reason}")
    phases, seen = [], set()
    for i, spec in enumerate(raw):
        if not isinstance(spec, dict) or not spec.get("name"):
            raise ScenarioError(f"phases[{i}]: expected a mapping with a name")
        name = str(spec["name"])
        if name in seen:
            raise ScenarioError(f"phases[{i}].name: {name!r} appears twice; names must be unique")
        seen.add(name)
        phases.append(
            Phase(
                name=name,
                duration_s=_positive(spec.get("duration_s"), f"phases.{name}.duration_s"),
                rate=_rate(spec.get("rate"), f"phases.{name}.rate", as_run),
                reason=str(spec.get("reason", "")),
            )
        )
    return tuple(phases)


def _thresholds(raw: object, workloads: set[str], phases: set[str]) -> tuple[Threshold, ...]:
    if not isinstance(raw, list):
        raise ScenarioError("thresholds: expected a list of {workload, metric, limit}")
    thresholds = []
    for i, spec in enumerate(raw):
        if not isinstance(spec, dict):
            raise ScenarioError(f"thresholds[{i}]: expected a mapping {{workload, metric, limit}}")
        workload, metric = spec.get("workload"), spec.get("metric")
        phase = str(spec.get("phase", "sustain"))
        where = f"thresholds[{i}]"
        if workload not in workloads:
            raise ScenarioError(
                f"{where}.workload: {workload!r} is not in the mix; use one of {sorted(workloads)}"
            )
        if metric not in METRICS:
            raise ScenarioError(f"{where}.metric: {metric!r} is unknown; use one of {METRICS}")
        if phase not in phases:
            raise ScenarioError(f"{where}.phase: {phase!r} is not a phase; use one of {phases}")
        limit = _number(spec.get("limit"), f"{where}.limit", "give the limit as a number")
        if limit < 0:
            raise ScenarioError(f"{where}.limit: {limit} is negative; use 0 or more")
        thresholds.append(Threshold(workload, metric, limit, str(spec.get("why", "")), phase))
    return tuple(thresholds)


def _timeouts(raw: object) -> Timeouts:
    if not isinstance(raw, dict):
        raise ScenarioError("timeouts: expected a mapping {default_s, chat_stream_s, agent_run_s}")
    known = Timeouts.__dataclass_fields__
    for key in raw:
        if key not in known:
            raise ScenarioError(f"timeouts.{key}: unknown; use one of {tuple(known)}")
    return Timeouts(**{k: _positive(v, f"timeouts.{k}") for k, v in raw.items()})


def _lateness(raw: object) -> Lateness:
    if not isinstance(raw, dict):
        raise ScenarioError("lateness: expected a mapping {late_after_ms, max_late_fraction}")
    late_after = _positive(raw.get("late_after_ms", 100.0), "lateness.late_after_ms")
    fraction = _fraction(raw.get("max_late_fraction", 0.01), "lateness.max_late_fraction")
    return Lateness(late_after, fraction)
