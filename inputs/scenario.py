"""The scenario: the mix, the phases, the timeouts, the thresholds and the faults, as one
record, and its loading from a file.

Loading checks every field before any load is offered, so a typo costs one clear line
instead of a run measured against a mix nobody looked at. Each record checks its own
fields (Workload.read, Phase.read, Threshold.read, Fault.read, ...) and this loader
assembles them, adding every problem to one list that is raised together. The
generator, the shapes and the reports all read the scenario through this type, and
run.json holds it as it was run (engine/run_record.py), so a report is rebuilt from the
run directory alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import yaml
from msgspec import Struct
from msgspec.structs import asdict, replace

from inputs.agent import Agent, agent_dict
from inputs.bad_input import BadInput, Problems, label, shown
from inputs.faults import Fault, fault_dict, read_faults, scaled_faults
from inputs.numbers import fraction, positive
from inputs.phases import MAX_PHASE_S, MIN_PHASE_S, Phase, check_plan_size, read_phases
from inputs.thresholds import Judging, Threshold, read_thresholds
from inputs.timeouts import Lateness, Timeouts
from inputs.workload import Workload, read_workloads

# The largest answer body a sample may read, in MiB: a gigabyte is past any API's answer.
MAX_BODY_MIB = 1024.0
# The bound a scenario that says none reads at; scenario.yaml says why 8.
DEFAULT_BODY_MIB = 8.0
# Seeds are whole numbers from 0 to this: any 32-bit seed; the generator spreads it (with
# the phase's name) over its whole state, so a larger one would add nothing.
MAX_SEED = 2**32 - 1

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "scenario.yaml"


class ScenarioError(BadInput):
    """Scenario fields are wrong; one line each, naming the field and the fix."""


class Scenario(Struct, frozen=True, omit_defaults=True):
    name: str
    workloads: tuple[Workload, ...]
    phases: tuple[Phase, ...]
    thresholds: tuple[Threshold, ...]
    chat_cancel_share: float = 0.2
    timeouts: Timeouts = Timeouts()
    lateness: Lateness = Lateness()
    shed_counts_as_error: bool = True
    judging: Judging = Judging()
    # Seeds the Poisson phases' gaps (engine/arrivals.py): the same seed, the same instants.
    seed: int = 0
    # The largest answer body (or WebSocket message) read, in MiB; scenario.yaml says why 8.
    max_body_mib: float = DEFAULT_BODY_MIB
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
        check_plan_size(phases, problems, f"give a smaller --scale than {scale:g}")
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
        """The scenario as a scenario file says it, which the loader reads back: shares
        normalised, each threshold at the limit it is judged on (a run's scenario went
        through for_platform)."""
        data = {
            **asdict(self),
            "timeouts": asdict(self.timeouts),
            "lateness": asdict(self.lateness),
        }
        data["phases"] = [{**asdict(p), "arrivals": p.arrivals.to_dict()} for p in self.phases]
        # A run is judged on one platform's limits (for_platform): it records those only.
        data["thresholds"] = [{**asdict(t), "phases": list(t.phases)} for t in self.thresholds]
        for threshold in data["thresholds"]:
            del threshold["per_platform"]
        # Only this scenario's phases: a constant-rate run renames them (Plan.scenario_as_run).
        names = {p.name for p in self.phases}
        judging = self.judging.within(tuple(names))
        data["judging"] = {
            "error_rate_phases": list(judging.error_rate_phases),
            "latency_phases": list(judging.latency_phases),
            "recovery": judging.recovery,
            "min_counts": asdict(judging.min_counts),
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


# The fields a scenario file may hold: the record's own, and the defaults of those it may omit.
_FIELDS = Scenario.__struct_fields__
_DEFAULTS = Scenario("", (), (), ())


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
    """The scenario given as plain data (YAML's, or a version-1 or -2 run.json's
    ``scenario``), each record checking its own fields; every problem found is raised
    together, one line each, as ScenarioError.

    ``as_run`` reads a run's record, where a phase may have rate 0: a users-mode step
    (closed loop, no arrivals on a schedule) or a sweep's rest. A scenario file may not.
    A trace file a phase names is read relative to ``base`` (the working folder if None).
    """
    if not isinstance(raw, dict):
        raise ScenarioError("scenario: expected a mapping with workloads, phases and thresholds")
    problems = Problems()
    for key in raw:
        if key not in _FIELDS:
            problems.add(f"{label(key)}: unknown scenario field; use one of {_FIELDS}")
    workloads = read_workloads(raw.get("workloads"), problems)
    names = {w.name for w in workloads} if workloads else None
    phases, phase_names = read_phases(raw.get("phases"), as_run, names, base, problems)
    judging = Judging.read(raw.get("judging", {}), phase_names, problems)
    thresholds = read_thresholds(
        raw.get("thresholds", []),
        names,
        phase_names,
        judging,
        problems,
    )
    chat_cancel_share = fraction(
        raw.get("chat_cancel_share", _DEFAULTS.chat_cancel_share), "chat_cancel_share", problems
    )
    timeouts = Timeouts.read(raw.get("timeouts", {}), problems)
    lateness = Lateness.read(raw.get("lateness", {}), problems)
    max_body_mib = positive(
        raw.get("max_body_mib", _DEFAULTS.max_body_mib), "max_body_mib", problems, most=MAX_BODY_MIB
    )
    seed = _seed(raw.get("seed", _DEFAULTS.seed), problems)
    lengths = {
        name: next((p.duration_s for p in phases if p.name == name), None) for name in phase_names
    }
    faults = read_faults(raw.get("faults"), lengths, problems)
    check_plan_size(phases, problems)
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
        shed_counts_as_error=bool(raw.get("shed_counts_as_error", _DEFAULTS.shed_counts_as_error)),
        judging=judging,
        max_body_mib=max_body_mib,
        seed=seed,
        faults=faults,
    )


def _seed(value: object, problems: Problems) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        problems.add(f"seed: {shown(value)} is not a whole number from 0 to {MAX_SEED}")
        return 0
    return value
