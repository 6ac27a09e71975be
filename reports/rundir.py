"""Read a run directory (run.json, the samples, the follow-ups, the stub's record, the probes)
into checked, typed data.

Everything a report says comes from these files, so a file that does not follow
reports/README.md is refused here with one line naming the file and the problem,
before any number is computed from it. The samples stay out of memory, in a DuckDB table
the sections query (reports/dataset.py); the probes, a reading a second per series, are a
DataFrame. A run written as a dataset (engine/dataset.py) and one from before it (CSV files:
the committed runs under results/) are read the same way, as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.compute as pc
from msgspec import UNSET

from engine import run_record
from engine.dataset import PROBES, read_parts, read_table
from engine.fault_record import FaultEvent, FaultRecordError, Window, placed, read_events
from engine.run_record import RUN_FILE, PhaseRecord, RunRecord, RunRecordError, UsersStep
from engine.samples import OPERATOR_STOP
from inputs.scenario import Scenario
from reports.dataset import (
    Samples,
    SamplesError,
    as_written,
    build_table,
    double,
    open_samples,
)
from reports.followups import FollowUpsError, after_columns, load_followups
from reports.loop import StubCallsError, load_calls, loop_columns

PROBES_FILE = PROBES.csv

PROBE_COLUMNS = tuple(PROBES.schema.names)


class RunDirError(ValueError):
    """A run-directory file is missing or malformed; the message names the file and the fix."""


@dataclass(frozen=True)
class Run:
    """A loaded run: run.json's record, its scenario, the samples (a table to query) and probe
    readings, and what a killed writer cut off, in one line ("" when nothing was)."""

    path: Path
    record: RunRecord
    scenario: Scenario
    phases: tuple[PhaseRecord, ...]
    samples: Samples
    probes: pd.DataFrame | None
    damage: str = ""
    # The scenario's fault windows on the run's clock, and what was done about each
    # (engine/fault_record.py); none in a run without faults.
    windows: tuple[Window, ...] = ()
    fault_events: tuple[FaultEvent, ...] = ()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Drop the samples' working copy (its temporary directory goes with it)."""
        self.samples.close()

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
    record = _read_run_json(path / RUN_FILE)
    scenario = record.scenario
    if not record.phases:
        raise RunDirError(
            f"{path}: the run was {record.stopped} in its start's lead, before its first "
            "arrival was due: nothing was offered, so there is nothing to report"
        )
    phases = tuple(record.phases)
    starts: dict[str, float] = {}
    for phase in phases:
        starts.setdefault(phase.name, float(phase.start_s))
    windows = placed(scenario, starts)
    try:
        events = read_events(path)
    except FaultRecordError as exc:
        raise RunDirError(str(exc)) from None
    try:
        samples = open_samples(path, record, scenario, phases)
    except SamplesError as exc:
        raise RunDirError(str(exc)) from None
    try:
        after, follow_join = after_columns(load_followups(samples, path, record.run_id))
        loop, loop_join = loop_columns(scenario, load_calls(samples, path, record.run_id))
        touched = touched_column(windows)
        build_table(samples, scenario, phases, (after, loop, touched), (follow_join, loop_join))
        probes, probe_damage = _read_probes(path)
    except (FollowUpsError, StubCallsError, SamplesError) as exc:
        samples.close()
        raise RunDirError(str(exc)) from None
    except BaseException:
        samples.close()
        raise
    # Named within the run directory, wherever it was read from.
    damage = "; ".join(d for d in (samples.damage, probe_damage) if d).replace(f"{path}/", "")
    return Run(path, record, scenario, phases, samples, probes, damage, windows, events)


# The samples table's column saying an arrival's life overlapped a fault window.
TOUCHED = "in_fault"


def touched_column(windows: tuple[Window, ...]) -> str:
    """``in_fault``: the arrival was due before a window ended and finished after it began, so
    the window may have decided its fate (FALSE in a run without windows). Such arrivals are
    judged in their window's section, not by their phase's thresholds or sustain's band."""
    spans = " OR ".join(
        f"(r.due_s < {double(w.end_s)} AND r.finished_s >= {double(w.start_s)})" for w in windows
    )
    return f"{spans or 'FALSE'} AS {TOUCHED}"


def _read_run_json(file: Path) -> RunRecord:
    """run.json, its phases those of the scenario it holds (or none: stopped in the lead)."""
    try:
        record = run_record.read(file)
    except RunRecordError as exc:
        raise RunDirError(str(exc)) from None
    names, expected = [p.name for p in record.phases], [p.name for p in record.scenario.phases]
    if record.phases and names != expected:
        raise RunDirError(f"{file}: phases {names} differ from the scenario's {expected}")
    return record


def _read_probes(run_dir: Path) -> tuple[pd.DataFrame | None, str]:
    """Probe readings in long format (None when the run kept none), and what a killed writer
    cut off of them."""
    directory = run_dir / PROBES.name
    if directory.is_dir():
        readings = read_table(run_dir, PROBES)
        # In time order, as a CSV's were sorted: stably, so readings of one instant keep theirs.
        order = pc.sort_indices(readings, [("t_s", "ascending")])
        damage = read_parts(directory, PROBES).damage
        return readings.take(order).to_pandas(), damage
    file = run_dir / PROBES_FILE
    if not file.exists():
        return None, ""
    frame = _read_csv(file, PROBE_COLUMNS, "probe readings", dtype={"probe": str, "metric": str})
    frame = frame[list(PROBE_COLUMNS)]
    line_of = np.arange(2, len(frame) + 2)
    for column in ("t_s", "value"):
        frame[column] = _numeric(file, frame, column, line_of)
        _refuse_first(file, frame[column].isna(), line_of, f"column {column} is empty")
    for column in ("probe", "metric"):
        _refuse_first(file, frame[column].isna(), line_of, f"column {column} is empty")
    return frame.sort_values("t_s", kind="stable").reset_index(drop=True), ""


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
    """The column as finite floats, or RunDirError naming the first cell that is not one."""
    values = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    bad = (values.isna() & frame[column].notna()) | np.isinf(values)
    if bad.any():
        at = int(np.argmax(bad.to_numpy()))
        raise RunDirError(
            f"{file}: line {line_of[at]}, column {column}: "
            f"{as_written(frame[column].iloc[at])!r} is not a number"
        )
    return values


def _refuse_first(file: Path, bad: pd.Series, line_of: np.ndarray, problem: str) -> None:
    """RunDirError at the first row where ``bad`` holds, naming its line."""
    if bad.any():
        raise RunDirError(f"{file}: line {line_of[int(np.argmax(bad.to_numpy()))]}: {problem}")
