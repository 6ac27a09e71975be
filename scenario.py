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

# The phase every other phase is held against, and the one whose numbers must come back to
# it: the verdict judges recovery between them, and a plan must offer enough of both.
BASELINE_PHASE = "sustain"
RECOVERY_PHASE = "recover"

# Phases shorter than this cannot hold a meaningful arrival schedule, even scaled.
MIN_PHASE_S = 2.0

DEFAULT_PATH = Path(__file__).with_name("scenario.yaml")


def metric_name(metric: str) -> str:
    """A threshold metric in words: ``p95_ttft_ms`` is "p95 first token", ``p95_ms`` "p95"."""
    if metric == "error_rate":
        return "error rate"
    percentile, _, rest = metric.partition("_")
    return f"{percentile} first token" if rest == "ttft_ms" else percentile


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


# A threshold's phase list may say this instead of naming phases: every phase of the scenario.
ALL_PHASES = "all"

# Recovery either decides the verdict or is only reported.
RECOVERY_MODES = ("required", "informational")


@dataclass(frozen=True)
class MinCounts:
    """The fewest observations each kind of check is judged on; scenario.yaml argues each.

    A latency percentile counts the arrivals that would be timed if they succeeded,
    an error rate the arrivals offered, recovery the arrivals of each of sustain and
    recover. A plan that offers fewer cannot judge the check: the run is inconclusive.
    """

    p50: int = 2
    p95: int = 20
    p99: int = 100
    max: int = 1
    error_rate: int = 20
    recovery: int = 20

    def for_metric(self, metric: str) -> int:
        """The default minimum of a threshold on ``metric`` (p95_ttft_ms reads as p95)."""
        return getattr(self, metric if metric == "error_rate" else metric.split("_")[0])


@dataclass(frozen=True)
class Threshold:
    """A limit on one workload's metric, judged separately in each phase it names."""

    workload: str
    metric: str
    limit: float
    why: str = ""
    phases: tuple[str, ...] = ("sustain",)
    # The fewest observations it is judged on (judging.min_counts unless the threshold says).
    min_count: int = 1


@dataclass(frozen=True)
class Judging:
    """Which phases a threshold is judged in when it names none, and whether recovery counts.

    The defaults are the scenario's to argue with (scenario.yaml gives the reasons):
    error rates everywhere that matters, latency limits where the rate is the planned
    one (whether latency came back after the burst is what recovery judges).
    """

    error_rate_phases: tuple[str, ...] = ("sustain", "burst", "recover")
    latency_phases: tuple[str, ...] = ("sustain",)
    recovery: str = "required"
    min_counts: MinCounts = field(default_factory=MinCounts)

    def default_phases(self, metric: str) -> tuple[str, ...]:
        """The phases a threshold on ``metric`` is judged in when it does not say."""
        return self.error_rate_phases if metric == "error_rate" else self.latency_phases

    @property
    def recovery_required(self) -> bool:
        """True when a workload that did not recover fails the run."""
        return self.recovery == "required"


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
    judging: Judging = field(default_factory=Judging)
    # The largest answer body (or WebSocket message) read, in MiB; scenario.yaml says why 8.
    max_body_mib: float = 8.0

    @property
    def max_body_bytes(self) -> int:
        """The body bound in bytes, as the transport takes it."""
        return int(self.max_body_mib * (1 << 20))

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
    def offered(self) -> tuple[str, ...]:
        """The workloads this scenario offers: those with a share above 0."""
        return tuple(w.name for w in self.workloads if w.share > 0)

    def connections_needed(self, rate: float | None = None) -> int:
        """Concurrency an open run can need: at the peak rate (or ``rate``, if higher), every
        request of every offered workload in flight for its own whole timeout.

        Requests of workload w in flight at any moment are at most its arrivals over its
        last timeout, peak x share x timeout: the mix's low-discrepancy sequence keeps each
        workload's count within a few arrivals of its share over any stretch. A workload
        the scenario does not offer needs nothing, whatever its timeout.
        """
        peak = max(self.peak_rate, rate or 0.0)
        mix = self.mix
        need = sum(peak * mix[name] * self.timeouts.for_workload(name) for name in self.offered)
        return math.ceil(round(need, 9))

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
        data["thresholds"] = [{**asdict(t), "phases": list(t.phases)} for t in self.thresholds]
        # Only this scenario's phases: a constant-rate run renames them (Plan.scenario_as_run).
        names = {p.name for p in self.phases}
        data["judging"] = {
            "error_rate_phases": [p for p in self.judging.error_rate_phases if p in names],
            "latency_phases": [p for p in self.judging.latency_phases if p in names],
            "recovery": self.judging.recovery,
            "min_counts": asdict(self.judging.min_counts),
        }
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
    phase_names = tuple(p.name for p in phases)
    judging = _judging(raw.get("judging", {}), phase_names)
    return Scenario(
        name=str(raw.get("name") or "unnamed"),
        workloads=workloads,
        phases=phases,
        thresholds=_thresholds(raw.get("thresholds", []), names, phase_names, judging),
        chat_cancel_share=_fraction(raw.get("chat_cancel_share", 0.2), "chat_cancel_share"),
        timeouts=_timeouts(raw.get("timeouts", {})),
        lateness=_lateness(raw.get("lateness", {})),
        shed_counts_as_error=bool(raw.get("shed_counts_as_error", True)),
        judging=judging,
        max_body_mib=_positive(raw.get("max_body_mib", 8.0), "max_body_mib"),
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


def _thresholds(
    raw: object, workloads: set[str], phases: tuple[str, ...], judging: Judging
) -> tuple[Threshold, ...]:
    if not isinstance(raw, list):
        raise ScenarioError("thresholds: expected a list of {workload, metric, limit}")
    thresholds = []
    for i, spec in enumerate(raw):
        if not isinstance(spec, dict):
            raise ScenarioError(f"thresholds[{i}]: expected a mapping {{workload, metric, limit}}")
        workload, metric = spec.get("workload"), spec.get("metric")
        where = f"thresholds[{i}]"
        if workload not in workloads:
            raise ScenarioError(
                f"{where}.workload: {workload!r} is not in the mix; use one of {sorted(workloads)}"
            )
        if metric not in METRICS:
            raise ScenarioError(f"{where}.metric: {metric!r} is unknown; use one of {METRICS}")
        limit = _number(spec.get("limit"), f"{where}.limit", "give the limit as a number")
        if limit < 0:
            raise ScenarioError(f"{where}.limit: {limit} is negative; use 0 or more")
        judged_in = _threshold_phases(spec, where, metric, phases, judging)
        need = judging.min_counts.for_metric(metric)
        if "min_count" in spec:
            need = _count(spec["min_count"], f"{where}.min_count")
        why = str(spec.get("why", ""))
        thresholds.append(Threshold(workload, metric, limit, why, judged_in, need))
    return tuple(thresholds)


def _count(value: object, where: str) -> int:
    """A minimum count: a whole number of at least 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ScenarioError(f"{where}: {value!r} is not a whole number of at least 1; e.g. 20")
    return value


def _threshold_phases(
    spec: dict, where: str, metric: str, phases: tuple[str, ...], judging: Judging
) -> tuple[str, ...]:
    """The phases one threshold is judged in: its own list, its legacy ``phase``, or the default.

    A default names the four-phase scenario's phases; those this scenario lacks are
    dropped, so a one-phase test scenario is judged in what it has.
    """
    if "phases" in spec and "phase" in spec:
        raise ScenarioError(f"{where}: give phases (a list) or phase (one name), not both")
    if "phases" in spec:
        return _phase_list(spec["phases"], f"{where}.phases", phases)
    if "phase" in spec:
        return _phase_list([spec["phase"]], f"{where}.phase", phases)
    judged_in = judging.default_phases(metric)
    if not judged_in:
        kind = "error_rate_phases" if metric == "error_rate" else "latency_phases"
        raise ScenarioError(
            f"{where}.phases: judging.{kind} names none of this scenario's phases; give the "
            f"threshold phases, e.g. phases: [{phases[0]}] or phases: all"
        )
    return judged_in


def _phase_list(raw: object, where: str, phases: tuple[str, ...]) -> tuple[str, ...]:
    """A list of phase names (or ``all``), each a phase of the scenario, none twice."""
    if raw == ALL_PHASES or raw == [ALL_PHASES]:
        return phases
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise ScenarioError(f"{where}: expected a list of phase names or {ALL_PHASES!r}")
    names = []
    for name in raw:
        if name not in phases:
            raise ScenarioError(
                f"{where}: {name!r} is not a phase; use some of {phases} or {ALL_PHASES!r}"
            )
        if name in names:
            raise ScenarioError(f"{where}: {name!r} appears twice; name each phase once")
        names.append(name)
    return tuple(names)


def _judging(raw: object, phases: tuple[str, ...]) -> Judging:
    if not isinstance(raw, dict):
        raise ScenarioError(
            "judging: expected a mapping {error_rate_phases, latency_phases, recovery}"
        )
    known = Judging.__dataclass_fields__
    for key in raw:
        if key not in known:
            raise ScenarioError(f"judging.{key}: unknown; use one of {tuple(known)}")
    defaults = Judging()
    recovery = raw.get("recovery", defaults.recovery)
    if recovery not in RECOVERY_MODES:
        raise ScenarioError(
            f"judging.recovery: {recovery!r} is unknown; use one of {RECOVERY_MODES}"
        )
    # Given lists must name this scenario's phases (an empty one: no default); the
    # built-in ones keep the phases this scenario has.
    lists = {}
    for key in ("error_rate_phases", "latency_phases"):
        if key not in raw:
            lists[key] = tuple(p for p in getattr(defaults, key) if p in phases)
        elif raw[key] == []:
            lists[key] = ()
        else:
            lists[key] = _phase_list(raw[key], f"judging.{key}", phases)
    return Judging(recovery=recovery, min_counts=_min_counts(raw.get("min_counts", {})), **lists)


def _min_counts(raw: object) -> MinCounts:
    if not isinstance(raw, dict):
        raise ScenarioError(
            f"judging.min_counts: expected a mapping of {tuple(MinCounts.__dataclass_fields__)} "
            "to whole numbers"
        )
    known = MinCounts.__dataclass_fields__
    for key in raw:
        if key not in known:
            raise ScenarioError(f"judging.min_counts.{key}: unknown; use one of {tuple(known)}")
    return MinCounts(**{k: _count(v, f"judging.min_counts.{k}") for k, v in raw.items()})


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
