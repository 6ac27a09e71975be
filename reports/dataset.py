"""The run's samples opened for the reports: checked, joined once, and queried out of core.

A report reads every sample, and a day's run holds millions, so none of them is held here:
the samples (the dataset's parts, engine/dataset.py, or the samples.csv of a run from before
it, converted a block at a time) go into a DuckDB database in a temporary directory, are
checked against reports/README.md (the first row that breaks it is refused in one line
naming the file, the row and the problem), and are joined once to the follow-ups and the
stub's record of the agent's loop into one table, ``samples``, holding every column the
reports derive. Each section asks it what it needs; DuckDB's memory limit bounds what it
holds: the table's blocks wait on disk, and a sort or a join larger than the limit spills.

The table's columns: the dataset's (worker ... bytes, and a streamed turn's
first_event_ms, last_token_ms, stall_ms), ``itl_ms`` and ``tpot_ms`` (a turn's inter-token
latency, (last - first token) / (tokens - 1), and time per output token, last token /
tokens, as GuideLLM defines them), ``seq`` (file order: part and row,
or a CSV's line), ``wi`` and ``pi`` (the workload's place in the mix, the offered phase's
in run.json), ``after`` / ``after_detail`` (reports/followups.py), ``model_calls``,
``stub_ms``, ``history``, ``step_overhead_ms`` (reports/loop.py), ``timed`` (a success
whose latency counts), ``planned_cancel`` (a chat turn the plan stops), ``lateness_ms`` and
``late`` (sent after due, as the report rounds it; never sent is late).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from engine.dataset import SAMPLES, read_parts, run_id_of
from engine.mix import CANCEL_STEP
from engine.run_record import PhaseRecord, RunRecord
from engine.samples import OUTCOMES, SAMPLES_FILE, STREAM_COLUMNS, SUCCESSFUL
from inputs.scenario import Scenario

# What DuckDB may hold in memory at once; past it, sorts and joins spill to the temporary
# directory. Sized so that a report, Python and its libraries included, stays under 1 GB.
MEMORY_LIMIT = "400MB"
# Rows of samples.csv converted at a time (a run from before the dataset).
CSV_CHUNK_ROWS = 500_000
# Rows handed from DuckDB to Python at a time by ``Samples.batches``.
BATCH_ROWS = 1 << 20

# Sample columns holding text; every other column holds numbers.
TEXT_COLUMNS = ("workload", "phase", "outcome", "detail")
NUMERIC_COLUMNS = tuple(n for n in SAMPLES.schema.names if n not in TEXT_COLUMNS)
# Sample columns holding times (seconds from the run start, or durations): never negative.
TIME_COLUMNS = (
    "due_s",
    "sent_s",
    "finished_s",
    "latency_ms",
    "latency_due_ms",
    "ttft_ms",
    *STREAM_COLUMNS,
)
# Columns every sample must fill in.
REQUIRED_VALUES = (
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
# The chat workload, whose whole-turn latency is over completed turns only.
STREAM_WORKLOAD = "chat_stream"
NOT_A_NUMBER = "is not a number"
# A CSV's ``seq`` is its line; a part's is its number times this plus its row.
PART_STRIDE = 1 << 32


class SamplesError(ValueError):
    """The samples break the contract; the message is one line naming the file and row."""


@dataclass(frozen=True)
class Source:
    """Where the samples came from, for messages: the CSV, or the dataset's directory."""

    path: Path
    csv: bool

    def where(self, seq: int) -> str:
        """A row as an editor or a reader of the dataset finds it."""
        if self.csv:
            return f"{self.path}: line {seq}"
        part, row = divmod(seq, PART_STRIDE)
        named = self.path / f"part-{part:06d}.parquet"
        if not named.exists():
            named = self.path / f"open-{part:06d}.arrows"
        return f"{named}: row {row + 1}"


class Samples:
    """The run's ``samples`` table in DuckDB and the temporary directory holding it.

    ``count`` is how many samples the run recorded; ``damage`` says, in one line, what a
    killed writer cut off ("" when nothing was)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, home: tempfile.TemporaryDirectory):
        self.con = con
        self._home = home
        self.count = 0
        self.damage = ""
        # The dataset's source and record, until build_table checks the copied rows.
        self.unchecked: tuple[Source, RunRecord] | None = None
        # What several sections read, each computed once (reports/charts.py's picks).
        self.memo: dict[str, object] = {}

    def rows(self, sql: str, params: Sequence = ()) -> list[tuple]:
        """A query's rows as tuples."""
        return self.con.execute(sql, list(params)).fetchall()

    def one(self, sql: str, params: Sequence = ()) -> tuple:
        """The one row a query gives (an aggregate's)."""
        (row,) = self.con.execute(sql, list(params)).fetchall()
        return row

    def frame(self, sql: str, params: Sequence = ()) -> pd.DataFrame:
        """A query's rows as a DataFrame: for the few or narrow rows a section needs whole."""
        return self.con.execute(sql, list(params)).df()

    def arrays(self, sql: str, params: Sequence = ()) -> dict[str, np.ndarray]:
        """A query's columns as numpy arrays (NULL as NaN in a float column)."""
        fetched = self.con.execute(sql, list(params)).fetchnumpy()
        return {
            k: np.asarray(v.filled(np.nan) if np.ma.isMaskedArray(v) else v)
            for k, v in fetched.items()
        }

    def batches(self, sql: str) -> Iterator[pa.RecordBatch]:
        """A query's rows a batch at a time, never all at once (an ordered query is sorted by
        DuckDB out of core first)."""
        with contextlib.closing(self.con.sql(sql).to_arrow_reader(BATCH_ROWS)) as reader:
            yield from reader

    def close(self) -> None:
        self.con.close()
        self._home.cleanup()


def open_samples(
    run_dir: Path, record: RunRecord, scenario: Scenario, phases: Sequence[PhaseRecord]
) -> Samples:
    """The run's samples, checked, in a ``samples`` table (the follow-ups and the stub's record
    are joined to it by reports/followups.py and reports/loop.py, which ``finish`` calls)."""
    home = tempfile.TemporaryDirectory(prefix="loadkit-report-")
    # A database file, not memory: a table's blocks on disk can leave memory for a sort's.
    con = duckdb.connect(str(Path(home.name) / "run.duckdb"))
    samples = Samples(con, home)
    try:
        con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
        con.execute("SET enable_progress_bar = false")
        con.execute(f"SET temp_directory = '{Path(home.name) / 'spill'}'")
        con.execute("SET preserve_insertion_order = false")
        directory = run_dir / SAMPLES.name
        if directory.is_dir():
            source = Source(directory, csv=False)
            samples.damage = _load_parts(con, directory, record.run_id)
        elif (run_dir / SAMPLES_FILE).exists():
            source = Source(run_dir / SAMPLES_FILE, csv=True)
            _load_csv(con, source.path, record.run_id)
        else:
            raise SamplesError(
                f"{directory}: missing (nor is there a {SAMPLES_FILE}); the generator writes one "
                "sample per arrival as the run goes"
            )
        # A CSV is checked as read, before its cells are typed; the dataset's parts are typed
        # already, and checked in the table they are copied into (build_table), faster.
        if source.csv:
            _check(samples, "raw", source, record, scenario, phases)
        else:
            samples.unchecked = (source, record)
    except BaseException:
        samples.close()
        raise
    return samples


def _load_parts(con: duckdb.DuckDBPyConnection, directory: Path, run_id: str) -> str:
    """The dataset's readable parts as the view ``raw``; the damage a killed writer left."""
    parts = read_parts(directory, SAMPLES)
    damage = [parts.damage] if parts.damage else []
    files = []
    for file in parts.files:
        try:
            schema = pq.read_schema(file)
        except (pa.ArrowInvalid, OSError) as exc:
            damage.append(f"{file}: unreadable ({str(exc).splitlines()[0]}); its rows are not read")
            continue
        _check_schema(file, schema, run_id)
        files.append(file)
    selects = []
    columns = ", ".join(f'"{n}"' for n in SAMPLES.schema.names)
    if files:
        listed = ", ".join(f"'{f}'" for f in files)
        number = r"CAST(regexp_extract(filename, 'part-(\d+)\.parquet$', 1) AS BIGINT)"
        selects.append(
            f"SELECT {columns}, {number} * {PART_STRIDE} + file_row_number AS seq "
            f"FROM read_parquet([{listed}], filename = true, file_row_number = true)"
        )
    if parts.open is not None and parts.open.num_rows:
        _check_schema(directory / f"open-{parts.open_number:06d}.arrows", parts.open.schema, run_id)
        first = parts.open_number * PART_STRIDE
        rows = parts.open.append_column(
            "seq", pa.array(np.arange(first, first + parts.open.num_rows), pa.int64())
        )
        con.register("open_part", rows)
        selects.append(f"SELECT {columns}, seq FROM open_part")
    if not selects:
        empty = SAMPLES.schema.empty_table().append_column("seq", pa.array([], pa.int64()))
        con.register("open_part", empty)
        selects.append(f"SELECT {columns}, seq FROM open_part")
    con.execute(f"CREATE VIEW raw AS {' UNION ALL '.join(selects)}")
    return "; ".join(damage)


def _check_schema(file: Path, schema: pa.Schema, run_id: str) -> None:
    """A part holds the samples' columns with their types, and names this run."""
    for field in SAMPLES.schema:
        if field.name not in schema.names:
            raise SamplesError(f"{file}: no column {field.name}; see reports/README.md")
        found = schema.field(field.name).type
        if found != field.type:
            raise SamplesError(f"{file}: column {field.name} is {found}, not {field.type}")
    named = run_id_of(schema)
    if named != run_id:
        raise SamplesError(f"{file}: written for run {named!r}, not run.json's {run_id!r}")


def _load_csv(con: duckdb.DuckDBPyConnection, file: Path, run_id: str) -> None:
    """samples.csv, a block of rows at a time, as the table ``raw`` (``seq`` its line): every
    column in the header, numbers where numbers belong, the run id run.json's."""
    types = {n: ("DOUBLE" if n in NUMERIC_COLUMNS else "VARCHAR") for n in SAMPLES.schema.names}
    declared = ", ".join(f'"{n}" {t}' for n, t in types.items())
    con.execute(f"CREATE TABLE raw ({declared}, run_id VARCHAR, seq BIGINT)")
    wanted = ("run_id", *(n for n in SAMPLES.schema.names if n not in STREAM_COLUMNS))
    for chunk, first_line in _csv_chunks(file, wanted):
        line_of = np.arange(first_line, first_line + len(chunk))
        for column in STREAM_COLUMNS:
            if column not in chunk.columns:
                # A run from before a turn kept these: its streams measured none.
                chunk[column] = np.nan
        for column in NUMERIC_COLUMNS:
            chunk[column] = _numeric(file, chunk, column, line_of)
        chunk["seq"] = line_of
        con.register("chunk", chunk[[*SAMPLES.schema.names, "run_id", "seq"]])
        con.execute("INSERT INTO raw SELECT * FROM chunk")
        con.unregister("chunk")
    found = con.execute(
        "SELECT seq, run_id FROM raw WHERE run_id IS DISTINCT FROM ? ORDER BY seq LIMIT 1", [run_id]
    ).fetchall()
    if found:
        line, other = found[0]
        raise SamplesError(
            f"{file}: line {line}: run_id {other!r} differs from run.json's {run_id!r}"
        )


def _csv_chunks(file: Path, columns: tuple[str, ...]) -> Iterator[tuple[pd.DataFrame, int]]:
    """samples.csv's rows a block at a time, each with the line its first row is on."""
    text = ("run_id", *TEXT_COLUMNS)
    try:
        reader = pd.read_csv(
            file,
            dtype=dict.fromkeys(text, str),
            keep_default_na=False,
            na_values={c: [""] for c in NUMERIC_COLUMNS},
            chunksize=CSV_CHUNK_ROWS,
        )
        line = 2
        header_seen = False
        with reader:
            for chunk in reader:
                if not header_seen:
                    _require_columns(file, list(chunk.columns), columns)
                    header_seen = True
                yield chunk, line
                line += len(chunk)
        if not header_seen:
            raise pd.errors.EmptyDataError
    except pd.errors.EmptyDataError:
        raise SamplesError(
            f"{file}: empty file; expected a header row ({','.join(columns)})"
        ) from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise SamplesError(f"{file}: not readable as CSV ({first})") from None


def _require_columns(file: Path, found: Sequence[str], columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in found]
    if missing:
        raise SamplesError(
            f"{file}: missing columns {', '.join(missing)}; see reports/README.md for the header"
        )


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
        raise SamplesError(
            f"{file}: line {line_of[at]}, column {column}: {as_written(raw.iloc[at])!r} "
            f"{NOT_A_NUMBER}"
        )
    return values


def as_written(value: object) -> object:
    """A cell as the file most likely spelled it: 3, not np.float64(3.0)."""
    value = value.item() if isinstance(value, np.generic) else value
    return int(value) if isinstance(value, float) and value.is_integer() else value


def quoted(values: Sequence[str]) -> str:
    """SQL string literals for ``values``, comma-separated."""
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


def _rules(
    record: RunRecord, scenario: Scenario, phases: Sequence[PhaseRecord]
) -> list[tuple[str, str | None, str]]:
    """The contract, row by row, in the order a problem is reported: (a bad row's condition,
    the column whose value the message shows, the problem)."""
    rules: list[tuple[str, str | None, str]] = [
        (f'isnan("{c}") OR isinf("{c}")', c, NOT_A_NUMBER) for c in TIME_COLUMNS
    ]
    rules += [
        (f'"{c}" < 0', c, "is negative; times and latencies are never below 0")
        for c in TIME_COLUMNS
    ]
    rules += [
        (
            f'"{c}" IS NULL' + (f" OR \"{c}\" = ''" if c in TEXT_COLUMNS else ""),
            None,
            f"column {c} is empty",
        )
        for c in REQUIRED_VALUES
    ]
    workloads = sorted(w.name for w in scenario.workloads)
    names = [p.name for p in phases]
    rules += [
        (
            f"workload NOT IN ({quoted(workloads)})",
            "workload",
            f"is not in the scenario's mix {workloads}",
        ),
        (f"phase NOT IN ({quoted(names)})", "phase", f"is not one of run.json's {names}"),
        (f"outcome NOT IN ({quoted(OUTCOMES)})", "outcome", f"is not one of {OUTCOMES}"),
        ("ok NOT IN (0, 1)", "ok", "must be 0 or 1"),
        (
            f"(ok = 1) <> (outcome IN ({quoted(SUCCESSFUL)}))",
            None,
            f"ok disagrees with outcome (ok is 1 exactly for {' and '.join(SUCCESSFUL)})",
        ),
        (
            f"outcome IN ({quoted(SUCCESSFUL)}) AND latency_ms IS NULL",
            None,
            "a successful sample has no latency_ms",
        ),
    ]
    return rules


def _check(
    samples: Samples,
    table: str,
    source: Source,
    record: RunRecord,
    scenario: Scenario,
    phases: Sequence[PhaseRecord],
) -> None:
    """Refuse the first row (in the order of ``_rules``, then of the file) that breaks the
    contract, and an index that repeats an earlier row's; all in one pass and one group-by."""
    rules = _rules(record, scenario, phases)
    firsts = ", ".join(f"min(seq) FILTER (WHERE {cond})" for cond, _, _ in rules)
    found = samples.one(f"SELECT count(*), {firsts} FROM {table}")
    samples.count = int(found[0])
    for (_, column, problem), seq in zip(rules, found[1:], strict=True):
        if seq is None:
            continue
        if column is None:
            raise SamplesError(f"{source.where(seq)}: {problem}")
        (value,) = samples.one(f'SELECT "{column}" FROM {table} WHERE seq = ?', [seq])
        if problem == NOT_A_NUMBER:
            raise SamplesError(f"{source.where(seq)}, column {column}: {value!r} {problem}")
        raise SamplesError(f"{source.where(seq)}: {column} {as_written(value)!r} {problem}")
    repeated = samples.one(
        "SELECT min(seq) FROM (SELECT seq, row_number() OVER (PARTITION BY index ORDER BY seq) AS n"
        f" FROM {table} WHERE index IN (SELECT index FROM {table} GROUP BY index"
        " HAVING count(*) > 1)) WHERE n > 1"
    )[0]
    if repeated is not None:
        (index,) = samples.one(f"SELECT index FROM {table} WHERE seq = ?", [repeated])
        raise SamplesError(
            f"{source.where(repeated)}: index {as_written(index)!r} repeats an earlier row's"
        )


def build_table(
    samples: Samples,
    scenario: Scenario,
    phases: Sequence[PhaseRecord],
    extra: Sequence[str],
    joins: Sequence[str],
) -> None:
    """The ``samples`` table: the checked rows typed, with what every section derives the same
    way, and the ``extra`` columns of the follow-ups and the loop over their ``joins``."""
    columns = ",\n".join([_derived(scenario, phases), *extra])
    samples.con.execute(f"CREATE TABLE samples AS SELECT {columns} FROM raw r {' '.join(joins)}")
    if samples.unchecked is not None:
        source, record = samples.unchecked
        _check(samples, "samples", source, record, scenario, phases)
        samples.unchecked = None
    # A CSV's rows were copied in (the table ``raw``): the copy goes; the dataset's view stays.
    if samples.rows("SELECT 1 FROM duckdb_tables() WHERE table_name = 'raw'"):
        samples.con.execute("DROP TABLE raw")


def double(value: float) -> str:
    """A float as a DuckDB DOUBLE constant, the very double Python holds (a bare 0.2 would be a
    DECIMAL, and arithmetic on it another number)."""
    return f"CAST('{float(value)!r}' AS DOUBLE)"


def _derived(scenario: Scenario, phases: Sequence[PhaseRecord]) -> str:
    names = list(scenario.mix)
    workload_index = " ".join(f"WHEN {quoted([w])} THEN {i}" for i, w in enumerate(names))
    seen: dict[str, int] = {}
    for i, p in enumerate(phases):
        seen.setdefault(p.name, i)
    phase_index = " ".join(f"WHEN {quoted([n])} THEN {i}" for n, i in seen.items())
    thousand = double(1000.0)
    # stats.py's rule, as pandas rounded it: ((sent - due) * 1000).round(3), half to even.
    lateness = f"round_even((r.sent_s - r.due_s) * {thousand} * {thousand}, 0) / {thousand}"
    cancel = f"fmod(CAST(r.index AS DOUBLE) * {double(CANCEL_STEP)}, {double(1.0)})"
    return f"""
        CAST(r.worker AS BIGINT) AS worker, CAST(r.index AS BIGINT) AS index,
        r.workload, r.phase, r.due_s, r.sent_s, r.finished_s, r.latency_ms, r.latency_due_ms,
        r.ttft_ms, CAST(r.tokens AS BIGINT) AS tokens, CAST(r.status AS BIGINT) AS status,
        CAST(r.ok AS TINYINT) AS ok, r.outcome, r.detail, CAST(r.bytes AS BIGINT) AS bytes, r.seq,
        r.first_event_ms, r.last_token_ms, r.stall_ms,
        CASE WHEN r.tokens >= 2 THEN (r.last_token_ms - r.ttft_ms) / (r.tokens - 1) END
            AS itl_ms,
        CASE WHEN r.tokens >= 1 THEN r.last_token_ms / r.tokens END AS tpot_ms,
        CAST(CASE r.workload {workload_index} END AS TINYINT) AS wi,
        CAST(CASE r.phase {phase_index} END AS SMALLINT) AS pi,
        r.ok = 1 AND (r.workload <> '{STREAM_WORKLOAD}' OR r.outcome = 'ok') AS timed,
        r.workload = '{STREAM_WORKLOAD}' AND {cancel} < {double(scenario.chat_cancel_share)}
            AS planned_cancel,
        {lateness} AS lateness_ms,
        r.sent_s IS NULL OR {lateness} > {double(scenario.lateness.late_after_ms)} AS late"""
