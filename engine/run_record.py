"""run.json as one typed, versioned record: the runner writes it and the reports read it through
this same type, so a field is spelled once and a file that does not hold to it is refused
with one line naming the field (reports/README.md says what each field means).

Version 1 is every run.json written before the record had a version (the committed runs
under results/ among them); version 2 adds nothing but the number. A field a version-1 run
may lack has a default that reads as it always did.

Version 3 holds the scenario as the typed record it was run from (inputs/scenario.py's
Scenario, its fields as they are), so a reader gets back the very object the run used.
Versions 1 and 2 held it as a scenario file says it (workloads keyed by name, an arrival
process by its name); they are read once through the scenario's own loader, which
checks every field of a file as it checks a scenario.yaml, and from there on are the
same record. The loader stays for scenario files, so this costs no second parser, and
the committed runs stay as they were written.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
from msgspec import UNSET, Struct, UnsetType, field

from inputs.phases import ArrivalKind
from inputs.scenario import Scenario, ScenarioError, scenario_from_dict

RUN_FILE = "run.json"
# A number as the file wrote it (an int stays an int, so a report prints ``24 GB``, not 24.0).
Number = int | float
# run.json's ``mode`` for each way of offering load; a report states it on its first screen.
USERS = "users"
OPEN_ARRIVAL = "open arrival"
# The version this kit writes; a file without one is version 1.
VERSION = 3
# The first version whose scenario is the typed record; earlier ones go through its loader.
TYPED_SCENARIO = 3
# run.json's ``stopped`` of a run the generator never recorded an end for.
NOT_ENDED = "killed: the generator recorded no end"
# What a run without verification (tls_verified False) says, once, and what its report
# carries; here, beside the field, so the report reads it without the TLS clients
# (engine/trust.py pulls in requests and gevent).
INSECURE_WARNING = (
    "TLS certificates were not verified (--insecure): any server on the way could have "
    "answered for the platform"
)


class RunRecordError(ValueError):
    """run.json is missing, not JSON or not the record; the message is one line a problem."""


class ArrivalsRecord(Struct, frozen=True, omit_defaults=True):
    """A phase's arrival process as run (engine/arrivals.py writes it): its kind, and what
    replays it (a Poisson phase's seed; a trace's file, arrival count and whether it named
    its workloads)."""

    kind: ArrivalKind
    seed: int | None = None
    file: str | None = None
    arrivals: int | None = None
    workloads: bool | None = None


class PhaseRecord(Struct, frozen=True):
    """One phase (or sweep step, or constant-rate stretch) as run: its window in seconds from
    the run's start, its rate, and what it offered of each workload."""

    name: str
    rate: Number
    start_s: Number
    end_s: Number
    offered_total: int
    reason: str = ""
    # Runs written before there were kinds were uniform.
    arrivals: ArrivalsRecord = field(default_factory=lambda: ArrivalsRecord(ArrivalKind.UNIFORM))
    offered: dict[str, int] = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    def __post_init__(self) -> None:
        if not self.end_s > self.start_s:
            raise ValueError(f"phase {self.name} ends at {self.end_s}, not after its start")


class ProcessStart(Struct, omit_defaults=True):
    """How one load process's start went, filled in as it goes (a process stopped early says
    only what it got to): sign-in, opening connections and settling memory (their sum its
    warm-up), the plan received before t = 0 (negative: after) and how late it woke for it."""

    sign_in_ms: float | None = None
    connect_ms: float | None = None
    settle_ms: float | None = None
    connections_opened: int | None = None
    warm_up_ms: float | None = None
    plan_ahead_ms: float | None = None
    behind_ms: float | None = None


class StartRecord(Struct, frozen=True):
    """How the start went: the lead the master picked, the worst round trip to each load
    process, and each process's own warm-up (sign-in, connections, waking for t = 0)."""

    lead_s: float
    round_trip_ms: dict[str, float] = field(default_factory=dict)
    processes: dict[str, ProcessStart] = field(default_factory=dict)


class LostProcess(Struct, frozen=True):
    """A load process that never sent its last samples, and the arrivals it never returned."""

    slot: int
    worker: str
    returned: int
    missing: int
    missing_ranges: list[list[int]] = field(default_factory=list)


class Machine(Struct, frozen=True):
    """The machine the master ran on."""

    hostname: str = "unnamed host"
    cpus: int | None = None
    memory_gb: Number | None = None
    os: str | None = None
    python: str | None = None


class ProbesSummary(Struct, frozen=True):
    """Which probes were taken, and why each other one was not (missing) or stopped (failed)."""

    taken: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)


# What run.json says of the probes until the run summarises them (killed before its end: so).
NOT_SUMMARISED = ProbesSummary(missing={"all": "the run did not end"})


class PlatformRecord(Struct, frozen=True):
    """The platform spoken to: its registry name and what each workload became on its wire."""

    name: str
    requests: dict[str, str] = field(default_factory=dict)


class LogCount(Struct, frozen=True, forbid_unknown_fields=True):
    """The platform log's ERROR and CRITICAL lines in the run's stretch, counted as it ended
    (reports.platform_log.PlatformLog without its path)."""

    bytes_read: int
    by_level: dict[str, int]
    most_frequent: str | None
    most_frequent_count: int
    missing: None

    def __post_init__(self) -> None:
        if self.bytes_read < 0 or self.most_frequent_count < 0:
            raise ValueError("platform_log.counted: a count below 0")


class PlatformLogStretch(Struct, frozen=True):
    """The platform's log, relative to the run directory, and the bytes the run wrote in it."""

    path: str
    from_byte: int
    to_byte: int
    counted: LogCount | UnsetType = UNSET

    def __post_init__(self) -> None:
        if not 0 <= self.from_byte <= self.to_byte:
            shown = {"path": self.path, "from_byte": self.from_byte, "to_byte": self.to_byte}
            raise ValueError(
                f"platform_log is {shown!r}; expected a path and byte offsets "
                "0 <= from_byte <= to_byte"
            )


class UsersStep(Struct, frozen=True):
    """Users mode: one step's users, its start, the users of each class seen, and the
    workloads its users left without one (each with the count that gives it one)."""

    name: str
    users: int
    start_s: float = 0.0
    classes: dict[str, int] = field(default_factory=dict)
    unserved: dict[str, int] = field(default_factory=dict)


class RunRecord(Struct, frozen=True, kw_only=True):
    """run.json: what ran, where, how it started and ended, and what it offered."""

    version: int = 1
    run_id: str
    started_at: str = ""
    start_epoch: float = 0.0
    # None while the run goes on, and in a run killed before it ended; absent in old runs.
    ended_at: str | UnsetType | None = UNSET
    duration_s: Number
    # The scenario as run: its phases are the run's (a constant-rate run's segments), each
    # threshold at the limit it was judged on (Scenario.for_platform).
    scenario: Scenario
    scale: Number = 1.0
    phases: list[PhaseRecord]
    offered: int
    workers: int = 1
    start: StartRecord | None = None
    lost: list[LostProcess] = field(default_factory=list)
    connections: int | None = None
    connections_needed: int | None = None
    connections_note: str = ""
    host: str = ""
    # What the run's requests asked in Accept-Encoding; absent: a run from before they asked.
    accept_encoding: str | None = None
    # Which certificates the run trusted (--ca-file, or the default store), and whether it
    # checked them at all (False: --insecure); absent in runs from before TLS was stated.
    tls_trust: str | None = None
    tls_verified: bool | None = None
    topology: str = ""
    machine: Machine | None = None
    probes: ProbesSummary = field(default_factory=ProbesSummary)
    follow_up_grace_s: Number | None = None
    # When the follow-up of accepted work ended: followups.csv's states are as of then.
    follow_up_ended_at: str | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    platform: PlatformRecord | None = None
    stopped: str = "completed"
    mode: str = OPEN_ARRIVAL
    users: list[UsersStep] | UnsetType = UNSET
    platform_log: PlatformLogStretch | UnsetType = UNSET

    @property
    def closed_loop(self) -> bool:
        """Users mode: each user sends when its last answer is in, so nothing was scheduled."""
        return self.mode == USERS


def encode(record: RunRecord) -> str:
    """The record as run.json holds it: indented JSON, one field per line."""
    return msgspec.json.format(msgspec.json.encode(record), indent=2).decode() + "\n"


def decode(text: bytes | str, file: Path | str = RUN_FILE) -> RunRecord:
    """The record in ``text`` (run.json's contents), or RunRecordError naming ``file`` and the
    field at fault."""
    try:
        if msgspec.json.decode(text, type=_Version).version >= TYPED_SCENARIO:
            return msgspec.json.decode(text, type=RunRecord)
        return _with_scenario_read(msgspec.json.decode(text), file)
    except msgspec.ValidationError as exc:
        raise RunRecordError(f"{file}: {exc} (see reports/README.md)") from None
    except msgspec.DecodeError as exc:
        raise RunRecordError(f"{file}: not valid JSON ({exc})") from None


class _Version(Struct):
    """Only the version of a run.json, which says how its scenario is held."""

    version: int = 1


def _with_scenario_read(data: object, file: Path | str) -> RunRecord:
    """A version-1 or -2 record, its scenario (as a scenario file says it) read by the
    scenario's loader; every problem of it named as run.json's ``scenario.<field>``."""
    if isinstance(data, dict) and "scenario" in data:
        try:
            scenario = scenario_from_dict(data["scenario"], as_run=True)
        except ScenarioError as exc:
            lines = (f"{file}: scenario.{line}" for line in exc.problems)
            raise RunRecordError("\n".join(lines)) from None
        data = {**data, "scenario": msgspec.to_builtins(scenario)}
    return msgspec.convert(data, RunRecord)


def read(file: Path) -> RunRecord:
    """The record in the run.json at ``file``, or RunRecordError in one line."""
    try:
        text = file.read_bytes()
    except FileNotFoundError:
        raise RunRecordError(f"{file}: missing; the generator writes it when load starts") from None
    return decode(text, file)
