"""Read a run directory (run.json, samples.csv, probes.csv) into checked, typed data.

Everything a report says comes from these files, so a file that does not follow
reports/README.md is refused here with one line naming the file and the problem,
before any number is computed from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from msgspec import UNSET

from engine import run_record
from engine.run_record import RUN_FILE, PhaseRecord, RunRecord, RunRecordError, UsersStep
from engine.samples import COLUMNS as SAMPLE_COLUMNS
from engine.samples import OPERATOR_STOP, OUTCOMES, SAMPLES_FILE
from engine.samples import SUCCESSFUL as OK_OUTCOMES
from inputs.scenario import Scenario, ScenarioError, scenario_from_dict
from reports.followups import FollowUpsError, attach
from reports.loop import StubCallsError, attach_calls

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


class RunDirError(ValueError):
    """A run-directory file is missing or malformed; the message names the file and the fix."""


@dataclass(frozen=True)
class Run:
    """A loaded run: run.json's record, its scenario, the samples and probe readings."""

    path: Path
    record: RunRecord
    scenario: Scenario
    phases: tuple[PhaseRecord, ...]
    samples: pd.DataFrame
    probes: pd.DataFrame | None

    @property
    def run_id(self) -> str:
        return self.record.run_id

    @property
    def offered(self) -> int:
        return self.record.offered

    @property
    def end_s(self) -> float:
        return max(p.end_s for p in self.phases)

    @property
    def stopped_by_operator(self) -> bool:
        """The operator stopped the run (the web UI's Stop): what it cut off was abandoned by
        choice, not failed by the platform."""
        return self.record.stopped == OPERATOR_STOP

    @property
    def closed_loop(self) -> bool:
        """Users mode: each user sends when its last answer is in, so nothing was scheduled,
        nothing was due before it was sent, and lateness does not apply."""
        return self.record.closed_loop

    @property
    def not_offered(self) -> tuple[str, ...]:
        """Workloads the scenario gives no share: never offered, sized for or judged, and
        listed once. A workload preflight skipped also runs at share 0, but for a reason
        the verdict must carry, so it is not one of these."""
        skipped = self.record.skipped
        return tuple(n for n, share in self.scenario.mix.items() if share == 0 and n not in skipped)

    @property
    def workloads(self) -> tuple[str, ...]:
        """The workloads the report has rows for: every one but those not offered."""
        return tuple(n for n in self.scenario.mix if n not in self.not_offered)

    def users_step(self, phase: str) -> UsersStep | None:
        """Users mode: run.json's record of the step run as ``phase`` (its users, the users of
        each class, the workloads it left without a user); None when not recorded."""
        steps = self.record.users if self.closed_loop else UNSET
        if steps is UNSET:
            return None
        return next((s for s in steps if s.name == phase), None)


def load_run(path: str | Path) -> Run:
    """The checked contents of a run directory, or RunDirError naming the bad file."""
    path = Path(path)
    if not path.is_dir():
        raise RunDirError(f"{path}: not a directory; pass the run directory (runs/<timestamp>)")
    record, scenario = _read_run_json(path / RUN_FILE)
    phases = tuple(record.phases)
    samples = _read_samples(path / SAMPLES_FILE, record, scenario, phases)
    try:
        samples = attach(path, samples)
        samples = attach_calls(path, samples, scenario)
    except (FollowUpsError, StubCallsError) as exc:
        raise RunDirError(str(exc)) from None
    probes = _read_probes(path / PROBES_FILE)
    return Run(path, record, scenario, phases, samples, probes)


def _read_run_json(file: Path) -> tuple[RunRecord, Scenario]:
    try:
        record = run_record.read(file)
    except RunRecordError as exc:
        raise RunDirError(str(exc)) from None
    try:
        scenario = scenario_from_dict(record.scenario, as_run=True)
    except ScenarioError as exc:
        raise RunDirError("\n".join(f"{file}: scenario.{line}" for line in exc.problems)) from None
    if not record.phases:
        raise RunDirError(f"{file}: phases must be a non-empty list (see reports/README.md)")
    names, expected = [p.name for p in record.phases], [p.name for p in scenario.phases]
    if names != expected:
        raise RunDirError(f"{file}: phases {names} differ from the scenario's {expected}")
    return record, scenario


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
        bad: pd.Series = pd.Series(np.isinf(values.to_numpy()), index=values.index)
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
    file: Path, record: RunRecord, scenario: Scenario, phases: tuple[PhaseRecord, ...]
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
    _check_values(file, frame, line_of, record, scenario, phases)
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
    record: RunRecord,
    scenario: Scenario,
    phases: tuple[PhaseRecord, ...],
) -> None:
    """Refuse values the contract does not allow, so statistics never guess."""
    run_id = record.run_id
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
