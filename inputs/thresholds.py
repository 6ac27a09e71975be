"""What a run is judged by: the thresholds (a limit on one workload's metric in the phases it
names), the metrics a threshold may name, and the judging defaults (which phases a
threshold that names none is judged in, whether recovery counts, the fewest observations
each kind of check is judged on).

Each record reads and checks itself against the scenario's mix and phases, so a threshold
on a workload not in the mix, a metric no workload of its kind has, or a phase the
scenario lacks is refused before any load.
"""

from __future__ import annotations

import math

from msgspec import Struct
from msgspec.structs import replace

from inputs.bad_input import Problems, shown
from inputs.numbers import known_entries, number
from inputs.per_platform import PlatformLimit
from inputs.phases import MAX_ARRIVALS

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

# A threshold's phase list may say this instead of naming phases: every phase of the scenario.
ALL_PHASES = "all"

# Recovery either decides the verdict or is only reported.
RECOVERY_MODES = ("required", "informational")


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


class MinCounts(Struct, frozen=True, omit_defaults=True):
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

    @classmethod
    def read(cls, raw: object, problems: Problems) -> MinCounts:
        """``judging.min_counts``: each given count a whole number (the default where not)."""
        names = cls.__struct_fields__
        if not isinstance(raw, dict):
            problems.add(f"judging.min_counts: expected a mapping of {names} to whole numbers")
            return cls()
        counts = known_entries(
            raw,
            "judging.min_counts",
            dict.fromkeys(names),
            problems,
            lambda value, where: _count(value, where, problems),
        )
        return cls(**counts)


class Judging(Struct, frozen=True, omit_defaults=True):
    """Which phases a threshold is judged in when it names none, and whether recovery counts.

    The defaults are the scenario's to argue with (scenario.yaml gives the reasons):
    error rates everywhere that matters, latency limits where the rate is the planned
    one (whether latency came back after the burst is what recovery judges).
    """

    error_rate_phases: tuple[str, ...] = ("sustain", "burst", "recover")
    latency_phases: tuple[str, ...] = ("sustain",)
    recovery: str = "required"
    min_counts: MinCounts = MinCounts()

    def default_phases(self, metric: str) -> tuple[str, ...]:
        """The phases a threshold on ``metric`` is judged in when it does not say."""
        return self.error_rate_phases if metric == "error_rate" else self.latency_phases

    @property
    def recovery_required(self) -> bool:
        """True when a workload that did not recover fails the run."""
        return self.recovery == "required"

    def within(self, phases: tuple[str, ...]) -> Judging:
        """The judging of a scenario whose phases are ``phases``: its lists keep those only."""
        return replace(
            self,
            error_rate_phases=tuple(p for p in self.error_rate_phases if p in phases),
            latency_phases=tuple(p for p in self.latency_phases if p in phases),
        )

    @classmethod
    def read(cls, raw: object, phases: tuple[str, ...], problems: Problems) -> Judging:
        """``judging``, against the scenario's ``phases``: given lists must name them (an
        empty one: no default); the built-in ones keep the phases this scenario has."""
        defaults = cls()
        if not isinstance(raw, dict):
            problems.add(
                "judging: expected a mapping {error_rate_phases, latency_phases, recovery}"
            )
            return defaults
        problems.unknown_keys(raw, "judging", cls.__struct_fields__)
        recovery = raw.get("recovery", defaults.recovery)
        if recovery not in RECOVERY_MODES:
            problems.add(
                f"judging.recovery: {shown(recovery)} is unknown; use one of {RECOVERY_MODES}"
            )
            recovery = defaults.recovery
        lists = {}
        for key in ("error_rate_phases", "latency_phases"):
            if key not in raw:
                lists[key] = tuple(p for p in getattr(defaults, key) if p in phases)
            elif raw[key] == []:
                lists[key] = ()
            else:
                lists[key] = _phase_list(raw[key], f"judging.{key}", phases, problems) or ()
        min_counts = MinCounts.read(raw.get("min_counts", {}), problems)
        return cls(recovery=recovery, min_counts=min_counts, **lists)


class Threshold(Struct, frozen=True, omit_defaults=True):
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

    @classmethod
    def read(
        cls,
        spec: object,
        where: str,
        workloads: set[str] | None,
        phases: tuple[str, ...],
        judging: Judging,
        problems: Problems,
    ) -> Threshold | None:
        """The threshold at ``where``, against the mix's ``workloads`` (None when the mix
        itself was refused: not checked here) and the scenario's ``phases``; None, and its
        problems, when it is refused."""
        if not isinstance(spec, dict):
            problems.add(f"{where}: expected a mapping {{workload, metric, limit}}")
            return None
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
            return None
        if metric.partition("_")[2] in STREAM_MEASURES and workload != "chat_stream":
            problems.add(
                f"{where}.metric: {metric} is a streamed turn's, and {shown(workload)} is not "
                "streamed (no tokens); put it on chat_stream"
            )
            return None
        # A limit is any finite number of 0 or more (a fraction for error rates, ms otherwise):
        # one above what the metric can reach only never fails.
        unit = "a fraction" if metric == "error_rate" else "milliseconds"
        fix = f"give the limit in {unit}"
        limit = number(spec.get("limit"), f"{where}.limit", fix, problems, most=math.inf)
        judged_in = _threshold_phases(spec, where, metric, phases, judging, problems)
        need: int | None = judging.min_counts.for_metric(metric)
        if "min_count" in spec:
            need = _count(spec["min_count"], f"{where}.min_count", problems)
        where_own = f"{where}.per_platform"
        own = PlatformLimit.read(spec.get("per_platform", {}), where_own, fix, problems)
        if not ok or limit is None or judged_in is None or need is None:
            return None
        why = str(spec.get("why", ""))
        return cls(str(workload), metric, limit, why, judged_in, need, own)


def read_thresholds(
    raw: object,
    workloads: set[str] | None,
    phases: tuple[str, ...],
    judging: Judging,
    problems: Problems,
) -> tuple[Threshold, ...]:
    """The thresholds, each as it reads itself."""
    if not isinstance(raw, list):
        problems.add("thresholds: expected a list of {workload, metric, limit}")
        return ()
    read = (
        Threshold.read(spec, f"thresholds[{i}]", workloads, phases, judging, problems)
        for i, spec in enumerate(raw)
    )
    return tuple(t for t in read if t is not None)


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
