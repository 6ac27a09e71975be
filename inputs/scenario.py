"""The scenario as plain data: the mix, the phases, the timeouts and the thresholds.

Loading validates every field before any load is offered, so a typo costs one
clear line instead of a run measured against a mix nobody looked at. The
generator, the shapes and the reports all read the scenario through this module;
a run directory keeps the normalised dict (``Scenario.to_dict``) so a report can
be rebuilt from it alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

import yaml

from inputs.agent import Agent, agent_dict, read_agent
from inputs.bad_input import BadInput, Problems, label, shown
from inputs.faults import Fault, fault_dict, read_faults, scaled_faults
from inputs.trace_file import read_trace

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
    # The platform's own time per step of an agent's loop (reports/loop.py): chat_stream and
    # agent_run, where the kit plans the loop.
    "p50_step_overhead_ms",
    "p95_step_overhead_ms",
    "p99_step_overhead_ms",
    # A streamed turn token by token (docs/DESIGN.md "Streams timed token by token"): its
    # first event, inter-token latency, longest gap (a stall) and time per output token.
    *(f"{p}_{m}" for m in ("first_event_ms", "itl_ms", "tpot_ms") for p in ("p50", "p95", "p99")),
    "p95_stall_ms",
    "p99_stall_ms",
    "max_stall_ms",
    "error_rate",
)
# The measures only a streamed turn has (the chat workload's): a threshold on another
# workload's is a figure it cannot have, refused before load.
STREAM_MEASURES = ("ttft_ms", "first_event_ms", "itl_ms", "stall_ms", "tpot_ms")
# Each measure's words (metric_name).
_MEASURE_WORDS = {
    "ttft_ms": "first token",
    "step_overhead_ms": "step overhead",
    "first_event_ms": "first event",
    "itl_ms": "inter-token latency",
    "stall_ms": "longest gap",
    "tpot_ms": "time per output token",
}

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
# The longest timeout: an hour; no request of a load test waits longer for its answer.
MAX_TIMEOUT_S = 3_600.0
# Lateness beyond a minute is not lateness any more; a larger tolerance is a unit slip.
MAX_LATE_MS = 60_000.0
# Shares are relative, so any finite size works; this only keeps sums finite.
MAX_SHARE = 1e9
# What a field of a checked mapping is read as (_known_entries).
T = TypeVar("T")
# The largest answer body a sample may read, in MiB: a gigabyte is past any API's answer.
MAX_BODY_MIB = 1024.0


class ArrivalKind(StrEnum):
    """How a phase's arrivals may be spaced in time: the one list of kinds, which
    engine/arrivals.py implements member by member. Uniform unless a phase says otherwise,
    because two uniform runs offer the same instants and compare cleanly."""

    UNIFORM = "uniform"
    POISSON = "poisson"
    TRACE = "trace"


# Seeds are whole numbers from 0 to this: any 32-bit seed; the generator spreads it (with
# the phase's name) over its whole state, so a larger one would add nothing.
MAX_SEED = 2**32 - 1

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "scenario.yaml"


def _metrics() -> str:
    """The metrics a threshold may name, grouped by measure (p50/p95/p99_ttft_ms, ...)."""
    by_measure: dict[str, list[str]] = {}
    for metric in METRICS:
        percentile, _, measure = metric.partition("_")
        if metric == "error_rate":
            percentile, measure = metric, ""
        by_measure.setdefault(measure, []).append(percentile)
    return ", ".join("/".join(ps) + (f"_{m}" if m else "") for m, ps in by_measure.items())


def metric_name(metric: str) -> str:
    """A threshold metric in words: ``p95_ttft_ms`` is "p95 first token", ``p95_ms`` "p95"."""
    if metric == "error_rate":
        return "error rate"
    percentile, _, rest = metric.partition("_")
    words = _MEASURE_WORDS.get(rest)
    return f"{percentile} {words}" if words else percentile


class ScenarioError(BadInput):
    """Scenario fields are wrong; one line each, naming the field and the fix."""


@dataclass(frozen=True)
class PlatformShare:
    """One platform's own share of a workload, with the reason it differs (0: the platform
    does not offer it, as opencode has no uploads)."""

    platform: str
    share: float
    why: str


@dataclass(frozen=True)
class Workload:
    name: str
    share: float
    description: str
    # The loop a chat turn or an agent run makes (inputs/agent.py); the seed's one call.
    agent: Agent = field(default_factory=Agent)
    # Shares that differ by platform (Scenario.for_platform applies one; a run records none).
    per_platform: tuple[PlatformShare, ...] = ()
    # Why the share is what it is on the platform the run is on (the report shows it).
    why: str = ""

    def for_platform(self, platform: str) -> Workload:
        """This workload as offered on ``platform``: its own share and reason, if it has one."""
        own = next((p for p in self.per_platform if p.platform == platform), None)
        share, why = (own.share, own.why) if own else (self.share, self.why)
        return replace(self, share=share, why=why, per_platform=())


@dataclass(frozen=True)
class Arrivals:
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


@dataclass(frozen=True)
class Phase:
    name: str
    duration_s: float
    rate: float
    reason: str
    arrivals: Arrivals = field(default_factory=Arrivals)

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
class PlatformLimit:
    """One platform's own limit for a threshold, with the reason it differs from the rest."""

    platform: str
    limit: float
    why: str


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
    # Limits that differ by platform (Scenario.for_platform applies one; a run records none).
    per_platform: tuple[PlatformLimit, ...] = ()

    def for_platform(self, platform: str) -> Threshold:
        """This threshold as judged on ``platform``: its own limit and reason, if it has one."""
        own = next((p for p in self.per_platform if p.platform == platform), None)
        limit, why = (own.limit, own.why) if own else (self.limit, self.why)
        return replace(self, limit=limit, why=why, per_platform=())


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
    # Seeds the Poisson phases' gaps (engine/arrivals.py): the same seed, the same instants.
    seed: int = 0
    # The largest answer body (or WebSocket message) read, in MiB; scenario.yaml says why 8.
    max_body_mib: float = 8.0
    # Fault windows, each in one phase (inputs/faults.py); none: the run as before.
    faults: tuple[Fault, ...] = ()

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
        """The same experiment with shorter phases: durations scale, rates never do; a scale
        that makes a phase longer than MAX_PHASE_S, or the plan larger than MAX_ARRIVALS, is
        refused."""
        if not (math.isfinite(scale) and scale > 0):
            raise ScenarioError(f"--scale: {shown(scale)} is not above 0; use e.g. 0.1 or 1")
        phases = tuple(p.lasting(max(MIN_PHASE_S, p.duration_s * scale)) for p in self.phases)
        longest = max(p.duration_s for p in phases)
        if longest > MAX_PHASE_S:
            most = MAX_PHASE_S / max(p.duration_s for p in self.phases)
            raise ScenarioError(
                f"--scale: {scale:g} makes a phase {longest:.0f} s long, more than "
                f"{MAX_PHASE_S:.0f} s; give --scale {most:.3g} or less"
            )
        problems = Problems()
        _check_plan_size(phases, problems, f"give a smaller --scale than {scale:g}")
        problems.raise_as(ScenarioError)
        lengths = {
            p.name: (p.duration_s, s.duration_s) for p, s in zip(self.phases, phases, strict=True)
        }
        return replace(self, phases=phases, faults=scaled_faults(self.faults, lengths))

    @property
    def platforms_named(self) -> set[str]:
        """Every platform a threshold or a workload gives a value of its own (settings checks
        each exists)."""
        limits = {p.platform for t in self.thresholds for p in t.per_platform}
        return limits | {p.platform for w in self.workloads for p in w.per_platform}

    def agent(self, workload: str) -> Agent:
        """The loop ``workload``'s turns make (one call for a workload not in the mix)."""
        return next((w.agent for w in self.workloads if w.name == workload), Agent())

    def for_platform(self, platform: str, not_offered: Mapping[str, str] | None = None) -> Scenario:
        """The scenario as ``platform`` is offered and judged: each workload at that platform's
        share, each threshold at its limit, and what the platform does not offer left out.

        A limit is a statement about what a platform should do; where one platform's design
        sets a floor the others lack (LangGraph's in-memory queue), the scenario says so
        beside the limit, and the run records the limit it was judged on. A workload the
        platform says it does not offer (``not_offered``, workload -> why: A2A has no
        uploads) gets share 0 with the platform's reason, and every other workload keeps the
        rate this scenario states (the phases' rates shrink by the share left out), so one
        scenario offers chat turns at one rate on every platform. A share the scenario sets
        for a platform (``per_platform``) is the scenario's own mix there and renormalises.
        """
        workloads = tuple(w.for_platform(platform) for w in self.workloads)
        phases = self.phases
        left_out = {w.name: why for w in workloads if (why := (not_offered or {}).get(w.name))}
        total = sum(w.share for w in workloads)
        kept = sum(w.share for w in workloads if w.name not in left_out)
        if left_out and kept > 0:
            workloads = tuple(
                replace(w, share=0.0, why=f"Not offered by {platform}: {left_out[w.name]}")
                if w.name in left_out
                else w
                for w in workloads
            )
            phases = tuple(p.thinned(kept / total, left_out) for p in phases)
        return replace(
            self,
            workloads=workloads,
            phases=phases,
            thresholds=tuple(t.for_platform(platform) for t in self.thresholds),
        )

    def to_dict(self) -> dict:
        """The scenario as run, with shares already normalised (and each threshold at the
        limit it is judged on: a run's scenario went through for_platform)."""
        data = asdict(self)
        data["phases"] = [{**asdict(p), "arrivals": p.arrivals.to_dict()} for p in self.phases]
        # A run is judged on one platform's limits (for_platform): it records those only.
        data["thresholds"] = [{**asdict(t), "phases": list(t.phases)} for t in self.thresholds]
        for threshold in data["thresholds"]:
            del threshold["per_platform"]
        # Only this scenario's phases: a constant-rate run renames them (Plan.scenario_as_run).
        names = {p.name for p in self.phases}
        data["judging"] = {
            "error_rate_phases": [p for p in self.judging.error_rate_phases if p in names],
            "latency_phases": [p for p in self.judging.latency_phases if p in names],
            "recovery": self.judging.recovery,
            "min_counts": asdict(self.judging.min_counts),
        }
        del data["faults"]
        if self.faults:
            data["faults"] = [fault_dict(f) for f in self.faults]
        data["workloads"] = {
            w.name: {
                "share": self.mix[w.name],
                "description": w.description,
                **agent_dict(w.agent),
                **({"why": w.why} if w.why else {}),
            }
            for w in self.workloads
        }
        return data


def load_scenario(path: str | Path = DEFAULT_PATH) -> Scenario:
    """The validated scenario in a YAML file, or ScenarioError naming every bad field."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ScenarioError(
            f"scenario: cannot read {shown(str(path))} ({exc.strerror}); pass --scenario PATH"
        ) from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        raise ScenarioError(
            f"scenario: {shown(str(path))} is not valid YAML{at} "
            f"({getattr(exc, 'problem', None) or 'syntax'}); fix the syntax"
        ) from None
    return scenario_from_dict(raw, base=path.parent)


def scenario_from_dict(raw: object, *, as_run: bool = False, base: Path | None = None) -> Scenario:
    """Validate a scenario given as plain data (YAML, or run.json's ``scenario``); every
    problem found is raised together, one line each, as ScenarioError.

    ``as_run`` reads a run's record, where a phase may have rate 0: a users-mode step
    (closed loop, no arrivals on a schedule) or a sweep's rest. A scenario file may not.
    A trace file a phase names is read relative to ``base`` (the working folder if None).
    """
    if not isinstance(raw, dict):
        raise ScenarioError("scenario: expected a mapping with workloads, phases and thresholds")
    problems = Problems()
    for key in raw:
        if key not in Scenario.__dataclass_fields__:
            problems.add(
                f"{label(key)}: unknown scenario field; use one of "
                f"{tuple(Scenario.__dataclass_fields__)}"
            )
    workloads = _workloads(raw.get("workloads"), problems)
    names = {w.name for w in workloads} if workloads else None
    phases, phase_names = _phases(raw.get("phases"), as_run, names, base, problems)
    judging = _judging(raw.get("judging", {}), phase_names, problems)
    thresholds = _thresholds(
        raw.get("thresholds", []),
        names,
        phase_names,
        judging,
        problems,
    )
    chat_cancel_share = _fraction(
        raw.get("chat_cancel_share", Scenario.chat_cancel_share), "chat_cancel_share", problems
    )
    timeouts = _timeouts(raw.get("timeouts", {}), problems)
    lateness = _lateness(raw.get("lateness", {}), problems)
    max_body_mib = _positive(
        raw.get("max_body_mib", Scenario.max_body_mib), "max_body_mib", problems, most=MAX_BODY_MIB
    )
    seed = _seed(raw.get("seed", Scenario.seed), problems)
    lengths = {
        name: next((p.duration_s for p in phases if p.name == name), None) for name in phase_names
    }
    faults = read_faults(raw.get("faults"), lengths, problems)
    _check_plan_size(phases, problems)
    problems.raise_as(ScenarioError)
    # A number refused above is None and added its problem, which raise_as has raised.
    assert max_body_mib is not None
    return Scenario(
        name=str(raw.get("name") or "unnamed"),
        workloads=workloads,
        phases=phases,
        thresholds=thresholds,
        chat_cancel_share=chat_cancel_share,
        timeouts=timeouts,
        lateness=lateness,
        shed_counts_as_error=bool(raw.get("shed_counts_as_error", Scenario.shed_counts_as_error)),
        judging=judging,
        max_body_mib=max_body_mib,
        seed=seed,
        faults=faults,
    )


def _number(
    value: object, where: str, fix: str, problems: Problems, *, most: float, least: float = 0.0
) -> float | None:
    """A finite number from least to most (None, and one problem, when it is not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        problems.add(f"{where}: {shown(value)} is not a number; {fix}")
        return None
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        problems.add(f"{where}: {shown(value)} is not a finite number; {fix}")
        return None
    if not least <= number <= most:
        problems.add(f"{where}: {value:g} is outside {least:g} to {most:g}; {fix}")
        return None
    return number


def _positive(value: object, where: str, problems: Problems, *, most: float) -> float | None:
    """A number above 0 and at most ``most`` (None, and one problem, when it is not)."""
    fix = f"give a number above 0, at most {most:g}"
    number = _number(value, where, fix, problems, most=most)
    if number == 0:
        problems.add(f"{where}: {shown(value)} must be above 0")
        return None
    return number


def _rate(value: object, where: str, as_run: bool, problems: Problems) -> float | None:
    """A phase's rate: above 0, or also 0 in a run's record (a users step, a sweep's rest)."""
    if as_run and value == 0 and not isinstance(value, bool):
        return 0.0
    return _positive(value, where, problems, most=MAX_RATE)


def _fraction(value: object, where: str, problems: Problems) -> float:
    number = _number(value, where, "give a fraction between 0 and 1", problems, most=1.0)
    return 0.0 if number is None else number


def _workloads(raw: object, problems: Problems) -> tuple[Workload, ...]:
    if not isinstance(raw, dict) or not raw:
        problems.add(f"workloads: expected a mapping of workload to share, e.g. {WORKLOADS}")
        return ()
    workloads = []
    for name, spec in raw.items():
        if name not in WORKLOADS:
            problems.add(f"workloads.{label(name)}: unknown workload; use one of {WORKLOADS}")
            continue
        spec = spec if isinstance(spec, dict) else {"share": spec}
        share = _number(
            spec.get("share"),
            f"workloads.{name}.share",
            "give a share of 0 or more",
            problems,
            most=MAX_SHARE,
        )
        agent = read_agent(spec, name, problems)
        where = f"workloads.{name}.per_platform"
        own = _platform_shares(spec.get("per_platform", {}), where, problems)
        if share is not None:
            description, why = str(spec.get("description", "")), str(spec.get("why", ""))
            workloads.append(Workload(name, share, description, agent, own, why))
    if len(workloads) == len(raw) and sum(w.share for w in workloads) <= 0:
        problems.add("workloads: shares sum to 0; give at least one workload a share > 0")
    return tuple(workloads)


def _seed(value: object, problems: Problems) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        problems.add(f"seed: {shown(value)} is not a whole number from 0 to {MAX_SEED}")
        return 0
    return value


def _phases(
    raw: object, as_run: bool, workloads: set[str] | None, base: Path | None, problems: Problems
) -> tuple[tuple[Phase, ...], tuple[str, ...]]:
    """The valid phases, and every phase name given: thresholds and judging may name a phase
    whose numbers were refused without being refused again for it."""
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
        where = f"phases.{label(name)}"
        duration = _positive(
            spec.get("duration_s"), f"{where}.duration_s", problems, most=MAX_PHASE_S
        )
        given = spec.get("arrivals", ArrivalKind.UNIFORM.value)
        arrivals = _arrivals(given, f"{where}.arrivals", duration, workloads, base, problems)
        if isinstance(given, dict) and "offsets" not in given:
            # A trace read from its file says the rate (none if it or the length was refused).
            rate = None
            if arrivals is not None and duration is not None:
                rate = _trace_rate(spec, where, arrivals, duration, problems)
        else:
            rate = _rate(spec.get("rate"), f"{where}.rate", as_run, problems)
        if duration is not None and rate is not None and arrivals is not None:
            phases.append(Phase(name, duration, rate, str(spec.get("reason", "")), arrivals))
    return tuple(phases), tuple(seen)


def _arrivals(
    raw: object,
    where: str,
    duration_s: float | None,
    workloads: set[str] | None,
    base: Path | None,
    problems: Problems,
) -> Arrivals | None:
    """A phase's arrival process: a kind's name, or ``{trace: FILE}`` (read, and spread over
    the phase when its length is known), or a recorded trace ``{trace, offsets, workloads}``
    taken as it is; None, and its problems, when it is none of these."""
    if isinstance(raw, str) and raw in set(ArrivalKind) - {ArrivalKind.TRACE}:
        return Arrivals(ArrivalKind(raw))
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
        return _recorded_trace(raw, where, workloads, problems)
    path = Path(raw["trace"])
    trace, lines = read_trace(path if base is None else base / path, f"{where}.trace", workloads)
    for line in lines:
        problems.add(line)
    if trace is None or duration_s is None:
        return None
    return Arrivals(ArrivalKind.TRACE, raw["trace"], trace.spread_over(duration_s), trace.workloads)


def _recorded_trace(
    raw: dict, where: str, workloads: set[str] | None, problems: Problems
) -> Arrivals | None:
    """A trace as run.json records it: offsets already spread over the phase, sorted."""
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
    return Arrivals(
        ArrivalKind.TRACE, raw["trace"], tuple(map(float, offsets)), tuple(map(str, named))
    )


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


def _check_plan_size(phases: tuple[Phase, ...], problems: Problems, fix: str = "") -> None:
    """One problem when the phases plan more than MAX_ARRIVALS arrivals in all."""
    planned = sum(p.rate * p.duration_s for p in phases)
    if planned > MAX_ARRIVALS:
        problems.add(
            f"phases: {planned:.3g} arrivals planned in all, more than {MAX_ARRIVALS:.0e}; "
            f"{fix or 'lower the rates or shorten the phases'}"
        )


def _thresholds(
    raw: object,
    workloads: set[str] | None,
    phases: tuple[str, ...],
    judging: Judging,
    problems: Problems,
) -> tuple[Threshold, ...]:
    """The thresholds; ``workloads`` None when the mix itself was refused (not checked here)."""
    if not isinstance(raw, list):
        problems.add("thresholds: expected a list of {workload, metric, limit}")
        return ()
    thresholds = []
    for i, spec in enumerate(raw):
        where = f"thresholds[{i}]"
        if not isinstance(spec, dict):
            problems.add(f"{where}: expected a mapping {{workload, metric, limit}}")
            continue
        workload, metric = spec.get("workload"), spec.get("metric")
        ok = True
        if workloads is not None and workload not in workloads:
            problems.add(
                f"{where}.workload: {shown(workload)} is not in the mix; use one of "
                f"{sorted(workloads)}"
            )
            ok = False
        if metric not in METRICS:
            problems.add(f"{where}.metric: {shown(metric)} is unknown; use one of {_metrics()}")
            continue
        if metric.partition("_")[2] in STREAM_MEASURES and workload != "chat_stream":
            problems.add(
                f"{where}.metric: {metric} is a streamed turn's, and {shown(workload)} is not "
                "streamed (no tokens); put it on chat_stream"
            )
            continue
        # A limit is any finite number of 0 or more (a fraction for error rates, ms otherwise):
        # one above what the metric can reach only never fails.
        unit = "a fraction" if metric == "error_rate" else "milliseconds"
        fix = f"give the limit in {unit}"
        limit = _number(spec.get("limit"), f"{where}.limit", fix, problems, most=math.inf)
        judged_in = _threshold_phases(spec, where, metric, phases, judging, problems)
        need: int | None = judging.min_counts.for_metric(metric)
        if "min_count" in spec:
            need = _count(spec["min_count"], f"{where}.min_count", problems)
        own = _per_platform(spec.get("per_platform", {}), f"{where}.per_platform", fix, problems)
        if ok and limit is not None and judged_in is not None and need is not None:
            why = str(spec.get("why", ""))
            thresholds.append(Threshold(str(workload), metric, limit, why, judged_in, need, own))
    return tuple(thresholds)


def _per_platform(
    raw: object, where: str, fix: str, problems: Problems
) -> tuple[PlatformLimit, ...]:
    """A threshold's own limits by platform: {name: {limit, why}}, the why required (a limit
    that differs without a reason is a limit moved to pass)."""
    own = _by_platform(raw, where, "limit", fix, math.inf, problems)
    return tuple(PlatformLimit(*value) for value in own)


def _platform_shares(raw: object, where: str, problems: Problems) -> tuple[PlatformShare, ...]:
    """A workload's own shares by platform: {name: {share, why}}, the why required (a share
    that differs without a reason is a workload quietly left out)."""
    own = _by_platform(raw, where, "share", "give a share of 0 or more", MAX_SHARE, problems)
    return tuple(PlatformShare(*value) for value in own)


def _by_platform(
    raw: object, where: str, key: str, fix: str, most: float, problems: Problems
) -> list[tuple[str, float, str]]:
    """{platform: {<key>, why}} as (platform, value, why), each bad entry one problem."""
    if not isinstance(raw, dict):
        problems.add(f"{where}: expected a mapping {{platform: {{{key}, why}}}}")
        return []
    values = []
    for name, spec in raw.items():
        at = f"{where}.{label(name)}"
        if not isinstance(spec, dict) or not str(spec.get("why") or "").strip():
            problems.add(f"{at}: expected {{{key}, why}}, the why saying what sets it apart")
            continue
        value = _number(spec.get(key), f"{at}.{key}", fix, problems, most=most)
        if value is not None:
            values.append((str(name), value, str(spec["why"])))
    return values


def _count(value: object, where: str, problems: Problems) -> int | None:
    """A minimum count: a whole number from 1 to MAX_ARRIVALS (None, and one problem, if not)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ARRIVALS:
        problems.add(
            f"{where}: {shown(value)} is not a whole number from 1 to {MAX_ARRIVALS:.0e}; e.g. 20"
        )
        return None
    return value


def _threshold_phases(
    spec: dict,
    where: str,
    metric: str,
    phases: tuple[str, ...],
    judging: Judging,
    problems: Problems,
) -> tuple[str, ...] | None:
    """The phases one threshold is judged in: its own list, its legacy ``phase``, or the default.

    A default names the four-phase scenario's phases; those this scenario lacks are
    dropped, so a one-phase test scenario is judged in what it has.
    """
    if "phases" in spec and "phase" in spec:
        problems.add(f"{where}: give phases (a list) or phase (one name), not both")
        return None
    if "phases" in spec:
        return _phase_list(spec["phases"], f"{where}.phases", phases, problems)
    if "phase" in spec:
        return _phase_list([spec["phase"]], f"{where}.phase", phases, problems)
    judged_in = judging.default_phases(metric)
    if not judged_in and phases:
        kind = "error_rate_phases" if metric == "error_rate" else "latency_phases"
        problems.add(
            f"{where}.phases: judging.{kind} names none of this scenario's phases; give the "
            f"threshold phases, e.g. phases: [{phases[0]}] or phases: all"
        )
        return None
    return judged_in


def _phase_list(
    raw: object, where: str, phases: tuple[str, ...], problems: Problems
) -> tuple[str, ...] | None:
    """A list of phase names (or ``all``), each a phase of the scenario, none twice."""
    if raw == ALL_PHASES or raw == [ALL_PHASES]:
        return phases
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        problems.add(f"{where}: expected a list of phase names or {ALL_PHASES!r}")
        return None
    names = []
    for name in raw:
        if name not in phases:
            problems.add(
                f"{where}: {shown(name)} is not a phase; use some of {phases} or {ALL_PHASES!r}"
            )
            return None
        if name in names:
            problems.add(f"{where}: {shown(name)} appears twice; name each phase once")
            return None
        names.append(name)
    return tuple(names)


def _judging(raw: object, phases: tuple[str, ...], problems: Problems) -> Judging:
    defaults = Judging()
    if not isinstance(raw, dict):
        problems.add("judging: expected a mapping {error_rate_phases, latency_phases, recovery}")
        return defaults
    problems.unknown_keys(raw, "judging", Judging.__dataclass_fields__)
    recovery = raw.get("recovery", defaults.recovery)
    if recovery not in RECOVERY_MODES:
        problems.add(f"judging.recovery: {shown(recovery)} is unknown; use one of {RECOVERY_MODES}")
        recovery = defaults.recovery
    # Given lists must name this scenario's phases (an empty one: no default); the
    # built-in ones keep the phases this scenario has.
    lists = {}
    for key in ("error_rate_phases", "latency_phases"):
        if key not in raw:
            lists[key] = tuple(p for p in getattr(defaults, key) if p in phases)
        elif raw[key] == []:
            lists[key] = ()
        else:
            lists[key] = _phase_list(raw[key], f"judging.{key}", phases, problems) or ()
    min_counts = _min_counts(raw.get("min_counts", {}), problems)
    return Judging(recovery=recovery, min_counts=min_counts, **lists)


def _min_counts(raw: object, problems: Problems) -> MinCounts:
    if not isinstance(raw, dict):
        problems.add(
            f"judging.min_counts: expected a mapping of {tuple(MinCounts.__dataclass_fields__)} "
            "to whole numbers"
        )
        return MinCounts()
    counts = _known_entries(
        raw,
        "judging.min_counts",
        MinCounts.__dataclass_fields__,
        problems,
        lambda value, where: _count(value, where, problems),
    )
    return MinCounts(**counts)


def _timeouts(raw: object, problems: Problems) -> Timeouts:
    if not isinstance(raw, dict):
        problems.add("timeouts: expected a mapping {default_s, chat_stream_s, agent_run_s}")
        return Timeouts()
    given = _known_entries(
        raw,
        "timeouts",
        Timeouts.__dataclass_fields__,
        problems,
        lambda value, where: _positive(value, where, problems, most=MAX_TIMEOUT_S),
    )
    return Timeouts(**given)


def _known_entries(
    raw: dict,
    where: str,
    known: Mapping[str, object],
    problems: Problems,
    read: Callable[[object, str], T | None],
) -> dict[str, T]:
    """The entries of the mapping at ``where`` whose keys are ``known``, each value as ``read``
    takes it (value, its field's name); an unknown key is a problem, and a value ``read``
    refused (None, its problem added) is left out."""
    given = {}
    for key, value in raw.items():
        if key not in known:
            problems.add(f"{where}.{label(key)}: unknown; use one of {tuple(known)}")
            continue
        read_value = read(value, f"{where}.{key}")
        if read_value is not None:
            given[key] = read_value
    return given


def _lateness(raw: object, problems: Problems) -> Lateness:
    if not isinstance(raw, dict):
        problems.add("lateness: expected a mapping {late_after_ms, max_late_fraction}")
        return Lateness()
    late_after = _positive(
        raw.get("late_after_ms", Lateness.late_after_ms),
        "lateness.late_after_ms",
        problems,
        most=MAX_LATE_MS,
    )
    fraction = _fraction(
        raw.get("max_late_fraction", Lateness.max_late_fraction),
        "lateness.max_late_fraction",
        problems,
    )
    return Lateness(late_after or Lateness.late_after_ms, fraction)
