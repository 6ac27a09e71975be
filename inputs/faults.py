"""Faults on a schedule: the scenario's ``faults:``, each a window in one phase (issue 45).

Production's faults come in windows (a provider down for 30 seconds, a 429 storm, a
database restart), and what an operator asks afterwards is what the platform did during
one and how long after it ended it was back. A window names its phase, its start and
length within it (or the whole phase) and its kind:

- the model's, which the kit's stub applies at run time (stub/schedule.py): ``outage``
  (500s, or with ``refuse: true`` connections refused), ``rate_limit`` (429s with
  Retry-After), ``slowdown`` (first token and pace times ``factor``), ``stall`` (a stream
  pauses ``stall_s`` after ``after_tokens`` tokens), ``hang`` (held open, never answered);
- the platform's, which run where the master runs (runner/fault_guard.py): ``freeze``
  (SIGSTOP of the process the operator names, SIGCONT at the end) and ``command`` (the
  operator's own command at the window's start, another at its end: any chaos tool).

Every window is checked here before any load, one line per problem naming the field and
the fix: a kind the kit does not know, a window outside its phase, and two windows whose
undoing would tangle (two model windows at once, which the stub would have to hold
together; two freezes of one process, whose first thaw would end the second). ``--scale``
shortens a window with its phase (start and length times the phase's own factor), so it
keeps its place in the phase; the run says so before load.

The module is one idea, the window, a little over 500 lines: each kind's settings and
their checks are what makes it long, and splitting them from the record would put a
kind's fields and their bounds in two places.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from enum import StrEnum

from msgspec import Struct
from msgspec.structs import replace

from inputs.bad_input import Problems, label, shown
from inputs.numbers import whole


class FaultKind(StrEnum):
    """What a window does; the first five are the model's (the stub's), the rest the
    platform's."""

    OUTAGE = "outage"
    RATE_LIMIT = "rate_limit"
    SLOWDOWN = "slowdown"
    STALL = "stall"
    HANG = "hang"
    FREEZE = "freeze"
    COMMAND = "command"


MODEL_KINDS = (
    FaultKind.OUTAGE,
    FaultKind.RATE_LIMIT,
    FaultKind.SLOWDOWN,
    FaultKind.STALL,
    FaultKind.HANG,
)
PLATFORM_KINDS = (FaultKind.FREEZE, FaultKind.COMMAND)
# ``pid: api`` freezes the run's own --api-pid, so one shipped scenario serves any stack.
API_PID = "api"

# Bounds, each a unit slip beyond: a slowdown of a thousand times is a stub that never
# answers (say hang), a pause or a Retry-After of an hour is past any request's timeout,
# a command that needs more than an hour is not a fault's start.
MAX_FACTOR = 1000.0
MAX_STALL_S = 3600.0
MAX_RETRY_AFTER_S = 3600.0
MAX_AFTER_TOKENS = 100_000
MAX_COMMAND_S = 3600.0
DEFAULT_COMMAND_S = 60.0
# A window's time to recover is judged in seconds, its amplification as a ratio.
MAX_RECOVER_S = 86_400.0
MAX_AMPLIFICATION = 1000.0

# Keys every fault may hold, and each kind's own.
_COMMON = ("name", "phase", "kind", "start_s", "duration_s", "limits")
_OWN: dict[FaultKind, tuple[str, ...]] = {
    FaultKind.OUTAGE: ("refuse", "share"),
    FaultKind.RATE_LIMIT: ("share", "retry_after_s"),
    FaultKind.SLOWDOWN: ("factor",),
    FaultKind.STALL: ("after_tokens", "stall_s"),
    FaultKind.HANG: (),
    FaultKind.FREEZE: ("pid", "pid_file"),
    FaultKind.COMMAND: ("at_start", "at_end", "timeout_s"),
}
_LIMIT_KEYS = ("time_to_recover_s", "amplification")


class FaultLimits(Struct, frozen=True, omit_defaults=True):
    """A window's own thresholds: the seconds each workload may take to get back into
    sustain's band after it, and how many times its model calls per turn may grow during
    it; None: reported, not judged."""

    time_to_recover_s: float | None = None
    amplification: float | None = None

    @classmethod
    def read(cls, raw: object, where: str, problems: Problems) -> FaultLimits:
        """A window's ``limits``: each given one a number above 0 (None where not given)."""
        if not isinstance(raw, dict):
            problems.add(f"{where}: expected a mapping of {_LIMIT_KEYS} to limits")
            return cls()
        problems.unknown_keys(raw, where, _LIMIT_KEYS)
        recover = amplification = None
        if "time_to_recover_s" in raw:
            recover = _number(
                raw["time_to_recover_s"],
                f"{where}.time_to_recover_s",
                problems,
                "give the seconds each workload may take to get back, e.g. 30",
                MAX_RECOVER_S,
            )
        if "amplification" in raw:
            amplification = _number(
                raw["amplification"],
                f"{where}.amplification",
                problems,
                "give how many times the model calls per turn may grow, e.g. 2",
                MAX_AMPLIFICATION,
            )
        return cls(recover, amplification)


class Fault(Struct, frozen=True, omit_defaults=True):
    """One window: its phase, its place in it (seconds from the phase's start), its kind and
    that kind's settings; the fields of other kinds keep their defaults."""

    name: str
    phase: str
    kind: FaultKind
    start_s: float
    duration_s: float
    # outage: connections refused instead of 500s.
    refuse: bool = False
    # outage (500s) and rate_limit: the share of model requests it answers so.
    share: float = 1.0
    # rate_limit: the Retry-After it sends, in seconds.
    retry_after_s: float = 1.0
    # slowdown: first token and pace between tokens times this.
    factor: float = 1.0
    # stall: tokens of a stream before it pauses, and the pause.
    after_tokens: int = 0
    stall_s: float = 0.0
    # freeze: the process, by PID, by a file holding it, or the run's --api-pid.
    pid: int | None = None
    pid_file: str = ""
    api_pid: bool = False
    # command: argv run at the window's start and at its end (empty: none), each bounded.
    at_start: tuple[str, ...] = ()
    at_end: tuple[str, ...] = ()
    timeout_s: float = DEFAULT_COMMAND_S
    limits: FaultLimits = FaultLimits()
    # The window as the scenario wrote it, before --scale (equal to the above at scale 1).
    written_start_s: float = 0.0
    written_duration_s: float = 0.0

    @property
    def end_s(self) -> float:
        """Where the window ends, in seconds from its phase's start."""
        return self.start_s + self.duration_s

    @property
    def model(self) -> bool:
        """Whether the stub applies it (else the master's guard does)."""
        return self.kind in MODEL_KINDS

    @property
    def target(self) -> str:
        """What a freeze stops, in words (one process: its PID, its PID file, the API's)."""
        if self.api_pid:
            return "--api-pid"
        return f"PID {self.pid}" if self.pid is not None else f"the PID in {self.pid_file}"

    @property
    def what(self) -> str:
        """The window's kind and settings in a few words, as the report heads its section."""
        if self.kind == FaultKind.OUTAGE:
            return "outage: connections refused" if self.refuse else f"outage: 500s{_share(self)}"
        if self.kind == FaultKind.RATE_LIMIT:
            return f"429 storm, Retry-After {self.retry_after_s:g} s{_share(self)}"
        if self.kind == FaultKind.SLOWDOWN:
            return f"slowdown: first token and pace x {self.factor:g}"
        if self.kind == FaultKind.STALL:
            return f"stall: streams pause {self.stall_s:g} s after {self.after_tokens} tokens"
        if self.kind == FaultKind.HANG:
            return "hang: model requests held open, never answered"
        if self.kind == FaultKind.FREEZE:
            return f"freeze: SIGSTOP of {self.target}, SIGCONT at the end"
        ends = f"; at its end {shlex.join(self.at_end)}" if self.at_end else ""
        return f"command: {shlex.join(self.at_start) or '(none at start)'}{ends}"

    def scaled(self, factor: float) -> Fault:
        """The window shortened with its phase: start and length times ``factor``."""
        return replace(self, start_s=self.start_s * factor, duration_s=self.duration_s * factor)

    @classmethod
    def read(
        cls, spec: object, where: str, phases: Mapping[str, float | None], problems: Problems
    ) -> Fault | None:
        """The window at ``where``, in one of ``phases`` (each phase's length, None where it
        was refused): its kind, its place in its phase and that kind's settings; None, and
        every problem, when any is refused."""
        if not isinstance(spec, dict):
            problems.add(f"{where}: expected a mapping {{phase, kind, start_s, duration_s}}")
            return None
        kinds = tuple(k.value for k in FaultKind)
        given = spec.get("kind")
        if given not in kinds:
            problems.add(f"{where}.kind: {shown(given)} is unknown; use one of {kinds}")
            return None
        kind = FaultKind(given)
        before = len(problems.lines)
        known = _COMMON + _OWN[kind]
        for key in spec:
            if key not in known:
                problems.add(
                    f"{where}.{label(key)}: unknown for a {kind} window; use one of {known}"
                )
        phase = spec.get("phase")
        if not isinstance(phase, str) or phase not in phases:
            problems.add(
                f"{where}.phase: {shown(phase)} is not a phase; use one of {tuple(phases)}"
            )
            return None
        length = phases[phase]
        start = _seconds(spec.get("start_s", 0.0), f"{where}.start_s", problems, least=0.0)
        if length is None or start is None:
            return None
        if start >= length:
            problems.add(
                f"{where}.start_s: {start:g} s is past the end of {phase} ({length:g} s); "
                f"start it before {length:g}"
            )
            return None
        duration = length - start
        if "duration_s" in spec:
            given_duration = _seconds(
                spec["duration_s"], f"{where}.duration_s", problems, least=None
            )
            if given_duration is None:
                return None
            if start + given_duration > length + 1e-9:
                problems.add(
                    f"{where}.duration_s: {given_duration:g} s from {start:g} s ends past "
                    f"{phase}'s {length:g} s; give at most {length - start:g}, or start earlier"
                )
                return None
            duration = given_duration
        name = str(spec.get("name") or f"{kind}@{phase}")
        settings = _settings(kind, spec, where, problems)
        limits = FaultLimits.read(spec.get("limits", {}), f"{where}.limits", problems)
        if settings is None or len(problems.lines) > before:
            return None
        return cls(
            name=name,
            phase=str(phase),
            kind=kind,
            start_s=start,
            duration_s=duration,
            limits=limits,
            written_start_s=start,
            written_duration_s=duration,
            **settings,
        )


def _share(fault: Fault) -> str:
    return "" if fault.share == 1.0 else f" to {fault.share:.0%} of requests"


def read_faults(
    raw: object, phases: Mapping[str, float | None], problems: Problems
) -> tuple[Fault, ...]:
    """The scenario's ``faults``: a list of windows, each checked against ``phases`` (every
    phase name given, mapped to its length, None where the length itself was refused)."""
    if raw is None or raw == []:
        return ()
    if not isinstance(raw, list):
        problems.add("faults: expected a list of {phase, kind, start_s, duration_s}")
        return ()
    faults: list[tuple[int, Fault]] = []
    names: dict[str, int] = {}
    for i, spec in enumerate(raw):
        fault = Fault.read(spec, f"faults[{i}]", phases, problems)
        if fault is None:
            continue
        if fault.name in names:
            problems.add(
                f"faults[{i}].name: {shown(fault.name)} is also faults[{names[fault.name]}]'s; "
                "give each window a name of its own"
            )
            continue
        names[fault.name] = i
        faults.append((i, fault))
    _overlaps(faults, phases, problems)
    return tuple(f for _, f in faults)


def _settings(kind: FaultKind, spec: dict, where: str, problems: Problems) -> dict | None:
    """The kind's own fields (None, with one problem each, when any is refused)."""
    before = len(problems.lines)
    out: dict[str, object] = {}
    if "share" in _OWN[kind] and "share" in spec:
        out["share"] = _number(
            spec["share"], f"{where}.share", problems, "give a share above 0, at most 1", 1.0
        )
    if kind == FaultKind.OUTAGE and "refuse" in spec:
        if not isinstance(spec["refuse"], bool):
            problems.add(f"{where}.refuse: {shown(spec['refuse'])} is not true or false")
        elif spec["refuse"] and "share" in spec:
            problems.add(f"{where}.share: a refused connection refuses every request; drop share")
        out["refuse"] = spec["refuse"] is True
    if kind == FaultKind.RATE_LIMIT and "retry_after_s" in spec:
        out["retry_after_s"] = _number(
            spec["retry_after_s"],
            f"{where}.retry_after_s",
            problems,
            "give the seconds a client is told to wait, e.g. 1",
            MAX_RETRY_AFTER_S,
        )
    if kind == FaultKind.SLOWDOWN:
        factor = _number(
            spec.get("factor"),
            f"{where}.factor",
            problems,
            "give how many times slower, e.g. 5",
            MAX_FACTOR,
        )
        if factor is not None and factor <= 1:
            problems.add(f"{where}.factor: {factor:g} is no slowdown; give more than 1, e.g. 5")
        out["factor"] = factor
    if kind == FaultKind.STALL:
        out["after_tokens"] = whole(
            spec.get("after_tokens"), f"{where}.after_tokens", 1, MAX_AFTER_TOKENS, problems
        )
        out["stall_s"] = _number(
            spec.get("stall_s"),
            f"{where}.stall_s",
            problems,
            "give the pause in seconds, e.g. 10",
            MAX_STALL_S,
        )
    if kind == FaultKind.FREEZE:
        out.update(_freeze(spec, where, problems))
    if kind == FaultKind.COMMAND:
        out.update(_command(spec, where, problems))
    return None if len(problems.lines) > before else out


def _freeze(spec: dict, where: str, problems: Problems) -> dict:
    """The process a freeze stops: ``pid`` (a PID, or ``api``: the run's --api-pid) or
    ``pid_file``, exactly one."""
    if ("pid" in spec) == ("pid_file" in spec):
        problems.add(
            f"{where}: give pid (a PID, or {API_PID!r}: the run's --api-pid) or pid_file, one"
        )
        return {}
    if "pid_file" in spec:
        path = spec["pid_file"]
        if not isinstance(path, str) or not path.strip():
            problems.add(f"{where}.pid_file: {shown(path)} is not a path; give the file's path")
            return {}
        return {"pid_file": path}
    pid = spec["pid"]
    if pid == API_PID:
        return {"api_pid": True}
    if isinstance(pid, bool) or not isinstance(pid, int) or not 1 < pid <= PID_MAX:
        problems.add(
            f"{where}.pid: {shown(pid)} is not a process id from 2 to {PID_MAX} nor "
            f"{API_PID!r}; give the PID of the process to freeze"
        )
        return {}
    return {"pid": pid}


def _command(spec: dict, where: str, problems: Problems) -> dict:
    """A command window's argv at its start and its end (a string runs under /bin/sh -c,
    a list is the argv itself) and each one's time limit."""
    out: dict[str, object] = {}
    for key in ("at_start", "at_end"):
        if key in spec:
            argv = _argv(spec[key], f"{where}.{key}", problems)
            if argv is not None:
                out[key] = argv
    if not out.get("at_start") and not out.get("at_end"):
        problems.add(f"{where}: give at_start, at_end or both: the command each end of it runs")
    if "timeout_s" in spec:
        out["timeout_s"] = _number(
            spec["timeout_s"],
            f"{where}.timeout_s",
            problems,
            "give seconds, e.g. 60",
            MAX_COMMAND_S,
        )
    return out


def _argv(raw: object, where: str, problems: Problems) -> tuple[str, ...] | None:
    if isinstance(raw, str) and raw.strip():
        return ("/bin/sh", "-c", raw)
    if isinstance(raw, list) and raw and all(isinstance(a, str) and a for a in raw):
        return tuple(raw)
    problems.add(
        f"{where}: {shown(raw)} is not a command; give a line for /bin/sh or a list of arguments"
    )
    return None


def _overlaps(
    faults: list[tuple[int, Fault]], phases: Mapping[str, float | None], problems: Problems
) -> None:
    """Two model windows at once, or two freezes of one process at once: the stub holds one
    fault at a time, and the first thaw would end the second freeze."""
    starts: dict[str, float] = {}
    at = 0.0
    for name, length in phases.items():
        starts[name] = at
        at += length or 0.0

    def span(f: Fault) -> tuple[float, float]:
        return starts[f.phase] + f.start_s, starts[f.phase] + f.end_s

    for k, (i, later) in enumerate(faults):
        for _, earlier in faults[:k]:
            (a0, a1), (b0, b1) = span(earlier), span(later)
            if not (a0 < b1 and b0 < a1):
                continue
            if earlier.model and later.model:
                why = "the stub holds one model fault at a time"
            elif earlier.kind == later.kind == FaultKind.FREEZE and earlier.target == later.target:
                why = f"both freeze {later.target}, and the first thaw would end the second"
            else:
                continue
            problems.add(
                f"faults[{i}]: {later.name} overlaps {earlier.name} ({earlier.phase} "
                f"{earlier.start_s:g}-{earlier.end_s:g} s): {why}; start it at or after "
                f"{earlier.end_s:g} s of {earlier.phase}, or end it before"
            )


def scaled_faults(
    faults: Sequence[Fault], lengths: Mapping[str, tuple[float, float]]
) -> tuple[Fault, ...]:
    """The windows of phases shortened (or lengthened) by --scale, ``lengths`` each phase's
    (written, scaled) length: a window keeps its place and its share of its phase."""
    return tuple(f.scaled(lengths[f.phase][1] / lengths[f.phase][0]) for f in faults)


def scale_lines(faults: Sequence[Fault]) -> list[str]:
    """One line per window --scale moved, saying where it falls now and where it was written."""
    return [
        f"faults.{f.name}: {_span(f.start_s, f.duration_s)} of {f.phase} at this --scale "
        f"({_span(f.written_start_s, f.written_duration_s)} as written): a window scales with "
        "its phase"
        for f in faults
        if not math.isclose(f.duration_s, f.written_duration_s)
        or not math.isclose(f.start_s, f.written_start_s)
    ]


def _span(start: float, duration: float) -> str:
    return f"{duration:.3g} s from {start:.3g} s"


def fault_dict(fault: Fault) -> dict:
    """A window as a scenario file says it (as run: scaled), which read_faults reads back."""
    data: dict[str, object] = {
        "name": fault.name,
        "phase": fault.phase,
        "kind": fault.kind.value,
        "start_s": fault.start_s,
        "duration_s": fault.duration_s,
    }
    defaults = Fault("", "", fault.kind, 0.0, 0.0)
    for key in _OWN[fault.kind]:
        if key == "pid" and fault.api_pid:
            data["pid"] = API_PID
            continue
        value = getattr(fault, key)
        if value != getattr(defaults, key):
            data[key] = list(value) if isinstance(value, tuple) else value
    limits = {
        k: getattr(fault.limits, k) for k in _LIMIT_KEYS if getattr(fault.limits, k) is not None
    }
    if limits:
        data["limits"] = limits
    return data


# Linux's largest possible PID (PID_MAX_LIMIT on 64-bit).
PID_MAX = 4_194_304


def _finite(value: object) -> float | None:
    """``value`` as a finite float, or None when it is no number (booleans neither)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _number(value: object, where: str, problems: Problems, fix: str, most: float) -> float | None:
    """A finite number above 0 and at most ``most`` (None, and one problem, when not)."""
    number = _finite(value)
    if number is None or not 0 < number <= most:
        problems.add(f"{where}: {shown(value)} is not a number above 0, at most {most:g}; {fix}")
        return None
    return number


def _seconds(value: object, where: str, problems: Problems, least: float | None) -> float | None:
    """Seconds: from ``least`` (0 for a start), or above 0 (``least`` None, a length)."""
    fix = "give seconds within the phase"
    number = _finite(value)
    if number is None:
        problems.add(f"{where}: {shown(value)} is not a number of seconds; {fix}")
        return None
    if (least is None and number <= 0) or (least is not None and number < least):
        bound = "above 0" if least is None else f"{least:g} or more"
        problems.add(f"{where}: {number:g} must be {bound}; {fix}")
        return None
    return number
