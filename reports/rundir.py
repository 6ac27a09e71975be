"""Read a run directory (run.json, samples.csv, probes.csv) into checked, typed data.

Everything a report says comes from these files, so a file that does not follow
reports/README.md is refused here with one line naming the file and the problem,
before any number is computed from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from engine.samples import COLUMNS as SAMPLE_COLUMNS
from engine.samples import OPERATOR_STOP, OUTCOMES, SAMPLES_FILE
from engine.samples import SUCCESSFUL as OK_OUTCOMES
from inputs.bad_input import shown
from inputs.scenario import ArrivalKind, Scenario, ScenarioError, scenario_from_dict
from reports.followups import FollowUpsError, attach
from reports.loop import StubCallsError, attach_calls

RUN_FILE = "run.json"
PROBES_FILE = "probes.csv"

PROBE_COLUMNS = ("t_s", "probe", "metric", "value")

# Sample columns holding text; every other column holds numbers.
TEXT_SAMPLE_COLUMNS = ("run_id", "workload", "phase", "outcome", "detail")
NUMERIC_SAMPLE_COLUMNS = tuple(c for c in SAMPLE_COLUMNS if c not in TEXT_SAMPLE_COLUMNS)
# Sample columns holding times (seconds from the run start, or durations): never negative.
TIME_SAMPLE_COLUMNS = ("due_s", "sent_s", "finished_s", "latency_ms", "latency_due_ms", "ttft_ms")
# Columns every sample must fill in.
REQUIRED_SAMPLE_VALUES = (
    "worker",
    "index",
    "workload",
    "phase",
    "due_s",
    "finished_s",
    "status",
    "ok",
    "outcome",
)


RUN_KEYS = ("run_id", "duration_s", "scenario", "phases", "offered")
PHASE_KEYS = ("name", "rate", "start_s", "end_s", "offered_total")


class RunDirError(ValueError):
    """A run-directory file is missing or malformed; the message names the file and the fix."""


@dataclass(frozen=True)
class PhaseWindow:
    """One phase as run: its absolute window (seconds from load start) and what it offered."""

    name: str
    rate: float
    start_s: float
    end_s: float
    reason: str
    offered: dict[str, int]
    offered_total: int
    # run.json's record of the phase's arrival process (engine/arrivals.py); runs written
    # before there were kinds were uniform.
    arrivals: dict = field(default_factory=lambda: {"kind": ArrivalKind.UNIFORM.value})

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class Run:
    """A loaded run: run.json's metadata, its scenario, the samples and probe readings."""

    path: Path
    meta: dict
    scenario: Scenario
    phases: tuple[PhaseWindow, ...]
    samples: pd.DataFrame
    probes: pd.DataFrame | None

    @property
    def run_id(self) -> str:
        return str(self.meta["run_id"])

    @property
    def offered(self) -> int:
        return int(self.meta["offered"])

    @property
    def end_s(self) -> float:
        return max(p.end_s for p in self.phases)

    @property
    def stopped_by_operator(self) -> bool:
        """The operator stopped the run (the web UI's Stop): what it cut off was abandoned by
        choice, not failed by the platform."""
        return self.meta.get("stopped") == OPERATOR_STOP

    @property
    def closed_loop(self) -> bool:
        """Users mode: each user sends when its last answer is in, so nothing was scheduled,
        nothing was due before it was sent, and lateness does not apply."""
        return self.meta.get("mode") == "users"

    @property
    def not_offered(self) -> tuple[str, ...]:
        """Workloads the scenario gives no share: never offered, sized for or judged, and
        listed once. A workload preflight skipped also runs at share 0, but for a reason
        the verdict must carry, so it is not one of these."""
        skipped = self.meta.get("skipped") or {}
        return tuple(n for n, share in self.scenario.mix.items() if share == 0 and n not in skipped)

    @property
    def workloads(self) -> tuple[str, ...]:
        """The workloads the report has rows for: every one but those not offered."""
        return tuple(n for n in self.scenario.mix if n not in self.not_offered)

    def users_step(self, phase: str) -> dict | None:
        """Users mode: run.json's record of the step run as ``phase`` (its users, the users of
        each class, the workloads it left without a user); None when not recorded."""
        steps = self.meta.get("users") if self.closed_loop else None
        if not isinstance(steps, list):
            return None
        return next((s for s in steps if isinstance(s, dict) and s.get("name") == phase), None)


def load_run(path: str | Path) -> Run:
    """The checked contents of a run directory, or RunDirError naming the bad file."""
    path = Path(path)
    if not path.is_dir():
        raise RunDirError(f"{path}: not a directory; pass the run directory (runs/<timestamp>)")
    meta, scenario, phases = _read_run_json(path / RUN_FILE)
    samples = _read_samples(path / SAMPLES_FILE, meta, scenario, phases)
    try:
        samples = attach(path, samples)
        samples = attach_calls(path, samples, scenario)
    except (FollowUpsError, StubCallsError) as exc:
        raise RunDirError(str(exc)) from None
    probes = _read_probes(path / PROBES_FILE)
    return Run(path, meta, scenario, phases, samples, probes)


def _read_run_json(file: Path) -> tuple[dict, Scenario, tuple[PhaseWindow, ...]]:
    try:
        meta = json.loads(file.read_text())
    except FileNotFoundError:
        raise RunDirError(f"{file}: missing; the generator writes it when load starts") from None
    except json.JSONDecodeError as exc:
        raise RunDirError(f"{file}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(meta, dict):
        raise RunDirError(f"{file}: expected a JSON object with keys {', '.join(RUN_KEYS)}")
    missing = [key for key in RUN_KEYS if key not in meta]
    if missing:
        raise RunDirError(f"{file}: missing keys {', '.join(missing)} (see reports/README.md)")
    try:
        scenario = scenario_from_dict(meta["scenario"], as_run=True)
    except ScenarioError as exc:
        raise RunDirError("\n".join(f"{file}: scenario.{line}" for line in exc.problems)) from None
    if not isinstance(meta["offered"], int) or isinstance(meta["offered"], bool):
        raise RunDirError(f"{file}: offered is {meta['offered']!r}; expected a whole number")
    if not isinstance(meta["duration_s"], int | float) or isinstance(meta["duration_s"], bool):
        raise RunDirError(f"{file}: duration_s is {meta['duration_s']!r}; expected seconds")
    _check_platform_log(file, meta.get("platform_log"))
    phases = _phase_windows(file, meta["phases"])
    expected = [p.name for p in scenario.phases]
    if [p.name for p in phases] != expected:
        raise RunDirError(
            f"{file}: phases {[p.name for p in phases]} differ from the scenario's {expected}"
        )
    return meta, scenario, phases


def _check_platform_log(file: Path, raw: object) -> None:
    """``platform_log``, when present: the log's path and the stretch of it the run wrote."""
    if raw is None:
        return
    fields = ("path", "from_byte", "to_byte")
    if not isinstance(raw, dict) or any(k not in raw for k in fields):
        raise RunDirError(f"{file}: platform_log must be an object with {', '.join(fields)}")
    start, end = raw["from_byte"], raw["to_byte"]
    whole = all(_whole(v) for v in (start, end))
    if not isinstance(raw["path"], str) or not whole or not 0 <= start <= end:
        raise RunDirError(
            f"{file}: platform_log is {raw!r}; expected a path and byte offsets "
            "0 <= from_byte <= to_byte"
        )
    counted = raw.get("counted")
    if counted is not None and not _counted_shape(counted):
        raise RunDirError(
            f"{file}: platform_log.counted is {shown(counted)}; expected bytes_read, by_level "
            "{ERROR, CRITICAL: counts}, most_frequent and most_frequent_count (or leave it out)"
        )


# What the run records of its log stretch (reports.platform_log.PlatformLog but the path).
COUNTED_KEYS = frozenset(
    {"bytes_read", "by_level", "most_frequent", "most_frequent_count", "missing"}
)


def _counted_shape(counted: object) -> bool:
    """Whether run.json's ``platform_log.counted`` is the counts the run wrote."""
    if not isinstance(counted, dict):
        return False
    levels = counted.get("by_level")
    whole = (counted.get("bytes_read"), counted.get("most_frequent_count"))
    return (
        set(counted) == COUNTED_KEYS
        and counted["missing"] is None
        and all(_whole(n) and n >= 0 for n in whole)
        and isinstance(levels, dict)
        and all(_whole(n) for n in levels.values())
        and (counted["most_frequent"] is None or isinstance(counted["most_frequent"], str))
    )


def _whole(value: object) -> bool:
    """Whether ``value`` is a whole number as JSON gives one (an int, and not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _phase_windows(file: Path, raw: object) -> tuple[PhaseWindow, ...]:
    if not isinstance(raw, list) or not raw:
        raise RunDirError(f"{file}: phases must be a non-empty list of {', '.join(PHASE_KEYS)}")
    phases = []
    for i, spec in enumerate(raw):
        missing = [k for k in PHASE_KEYS if not isinstance(spec, dict) or k not in spec]
        if missing:
            raise RunDirError(f"{file}: phases[{i}] is missing {', '.join(missing)}")
        try:
            phase = PhaseWindow(
                name=str(spec["name"]),
                rate=float(spec["rate"]),
                start_s=float(spec["start_s"]),
                end_s=float(spec["end_s"]),
                reason=str(spec.get("reason", "")),
                offered={str(k): int(v) for k, v in (spec.get("offered") or {}).items()},
                offered_total=int(spec["offered_total"]),
                arrivals=dict(spec.get("arrivals") or {"kind": ArrivalKind.UNIFORM.value}),
            )
        except (TypeError, ValueError, AttributeError) as exc:
            raise RunDirError(
                f"{file}: phases[{i}] has a value of the wrong type ({exc})"
            ) from None
        if not phase.end_s > phase.start_s:
            raise RunDirError(f"{file}: phases[{i}] ends at {phase.end_s}, not after its start")
        phases.append(phase)
    return tuple(phases)


def _read_csv(file: Path, columns: tuple[str, ...], what: str, **kwargs) -> pd.DataFrame:
    """A CSV with at least ``columns`` in its header, or RunDirError saying what is wrong."""
    if not file.exists():
        raise RunDirError(f"{file}: missing; the generator writes {what} as the run goes")
    try:
        frame = pd.read_csv(file, **kwargs)
    except pd.errors.EmptyDataError:
        raise RunDirError(
            f"{file}: empty file; expected a header row ({','.join(columns)})"
        ) from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise RunDirError(f"{file}: not readable as CSV ({first})") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise RunDirError(
            f"{file}: missing columns {', '.join(missing)}; see reports/README.md for the header"
        )
    return frame


def _numeric(file: Path, frame: pd.DataFrame, column: str, line_of: np.ndarray) -> pd.Series:
    """The column as finite floats; a cell that is not a number (NaN, inf and -inf included:
    they would become a percentile of inf and bare ``Infinity`` in JSON) is refused with its
    line."""
    raw = frame[column]
    if pd.api.types.is_numeric_dtype(raw):
        values = raw.astype("float64")
        bad = pd.Series(np.isinf(values.to_numpy()), index=values.index)
    else:
        values = pd.to_numeric(raw, errors="coerce").astype("float64")
        bad = (values.isna() & raw.notna()) | np.isinf(values)
    if bad.any():
        at = int(np.argmax(bad.to_numpy()))
        raise RunDirError(
            f"{file}: line {line_of[at]}, column {column}: {_as_written(raw.iloc[at])!r} "
            "is not a number"
        )
    return values


def _read_samples(
    file: Path, meta: dict, scenario: Scenario, phases: tuple[PhaseWindow, ...]
) -> pd.DataFrame:
    frame = _read_csv(
        file,
        SAMPLE_COLUMNS,
        "one sample per arrival",
        dtype=dict.fromkeys(TEXT_SAMPLE_COLUMNS, str),
        keep_default_na=False,
        na_values={c: [""] for c in NUMERIC_SAMPLE_COLUMNS},
    )
    frame = frame[list(SAMPLE_COLUMNS)]
    # Line numbers as an editor shows them: the header is line 1.
    line_of = np.arange(2, len(frame) + 2)
    for column in NUMERIC_SAMPLE_COLUMNS:
        frame[column] = _numeric(file, frame, column, line_of)
    for column in TIME_SAMPLE_COLUMNS:
        _refuse_first(
            file,
            frame[column] < 0,
            line_of,
            "is negative; times and latencies are never below 0",
            frame[column],
        )
    for column in REQUIRED_SAMPLE_VALUES:
        values = frame[column]
        empty = values.isna() if column in NUMERIC_SAMPLE_COLUMNS else values == ""
        _refuse_first(file, empty, line_of, f"column {column} is empty")
    _check_values(file, frame, line_of, meta, scenario, phases)
    samples = frame.astype(
        {"worker": "int64", "index": "int64", "status": "int64", "ok": "int8"},
    )
    for column in ("workload", "phase", "outcome"):
        samples[column] = samples[column].astype("category")
    return samples


def _refuse_first(
    file: Path, bad: pd.Series, line_of: np.ndarray, problem: str, shown: pd.Series | None = None
) -> None:
    """RunDirError at the first row where ``bad`` holds, naming its line (and value, if shown)."""
    if bad.any():
        at = int(np.argmax(bad.to_numpy()))
        value = "" if shown is None else f"{shown.name} {_as_written(shown.iloc[at])!r} "
        raise RunDirError(f"{file}: line {line_of[at]}: {value}{problem}")


def _as_written(value: object) -> object:
    """A cell as the file most likely spelled it: 3, not np.float64(3.0)."""
    value = value.item() if isinstance(value, np.generic) else value
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _check_values(
    file: Path,
    frame: pd.DataFrame,
    line_of: np.ndarray,
    meta: dict,
    scenario: Scenario,
    phases: tuple[PhaseWindow, ...],
) -> None:
    """Refuse values the contract does not allow, so statistics never guess."""
    run_id = str(meta["run_id"])
    _refuse_first(
        file,
        frame["run_id"] != run_id,
        line_of,
        f"differs from run.json's {run_id!r}",
        frame["run_id"],
    )
    workloads = {w.name for w in scenario.workloads}
    _refuse_first(
        file,
        ~frame["workload"].isin(workloads),
        line_of,
        f"is not in the scenario's mix {sorted(workloads)}",
        frame["workload"],
    )
    names = [p.name for p in phases]
    _refuse_first(
        file,
        ~frame["phase"].isin(names),
        line_of,
        f"is not one of run.json's {names}",
        frame["phase"],
    )
    _refuse_first(
        file,
        ~frame["outcome"].isin(OUTCOMES),
        line_of,
        f"is not one of {OUTCOMES}",
        frame["outcome"],
    )
    _refuse_first(file, ~frame["ok"].isin((0, 1)), line_of, "must be 0 or 1", frame["ok"])
    ok_outcome = frame["outcome"].isin(OK_OUTCOMES)
    _refuse_first(
        file,
        (frame["ok"] == 1) != ok_outcome,
        line_of,
        f"ok disagrees with outcome (ok is 1 exactly for {' and '.join(OK_OUTCOMES)})",
    )
    _refuse_first(
        file,
        ok_outcome & frame["latency_ms"].isna(),
        line_of,
        "a successful sample has no latency_ms",
    )
    _refuse_first(
        file, frame["index"].duplicated(), line_of, "repeats an earlier row's", frame["index"]
    )


def _read_probes(file: Path) -> pd.DataFrame | None:
    """Probe readings in long format, or None when the run kept no probes.csv."""
    if not file.exists():
        return None
    frame = _read_csv(file, PROBE_COLUMNS, "probe readings", dtype={"probe": str, "metric": str})
    frame = frame[list(PROBE_COLUMNS)]
    line_of = np.arange(2, len(frame) + 2)
    for column in ("t_s", "value"):
        frame[column] = _numeric(file, frame, column, line_of)
        _refuse_first(file, frame[column].isna(), line_of, f"column {column} is empty")
    for column in ("probe", "metric"):
        _refuse_first(file, frame[column].isna(), line_of, f"column {column} is empty")
    return frame.sort_values("t_s", kind="stable").reset_index(drop=True)
