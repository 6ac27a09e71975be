"""The run's tables as columnar files: typed Parquet, compressed, the run id stated once.

A day of samples is millions of rows, and the reports read them with a query engine
(reports/dataset.py), so each table is typed Parquet (zstd) whose file metadata names the
run, never a column repeating it. ``samples`` and ``probes`` grow while the run goes, and a
killed master (SIGKILL, a full disk) must keep every row it wrote, so each is a directory of
parts (docs/DESIGN.md "The run, as data"):

- ``part-000000.parquet``, ``part-000001.parquet``, ...: closed parts of PART_ROWS rows, each
  written under a temporary name and renamed, so a part is whole or absent;
- ``open-000002.arrows``: the part being filled, an Arrow IPC stream to which each batch is
  appended and flushed as it arrives, as the run's CSV was. A stream is self-delimiting, so
  a kill mid-write costs only the batch being written, which a reader names. When it holds
  PART_ROWS rows (or the run ends) it is written as ``part-000002.parquet`` and removed; a
  stream whose part exists is a leftover of a kill between the two, and readers skip it.

``followups`` and ``stub_calls`` are written once, after the drain, as single files.
``csv`` is each table's CSV name: what ``loadkit export`` writes and what runs from before
the dataset (the committed ones under results/) hold.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from engine import nofollow

# Rows in a closed part: large enough that a day is tens of parts, small enough that turning
# the open stream into a part holds little of the master's memory (about 30 MB of samples).
PART_ROWS = 250_000
COMPRESSION = "zstd"
# File metadata: which table a file holds and the run it belongs to (stated once per file).
TABLE_KEY = b"loadkit.table"
RUN_KEY = b"loadkit.run_id"
_PART = re.compile(r"^part-(\d{6})\.parquet$")
_OPEN = re.compile(r"^open-(\d{6})\.arrows$")


@dataclass(frozen=True)
class Table:
    """One of the run's tables: its name (a directory of parts, or ``name.parquet``), its
    columns and their types, and its CSV name."""

    name: str
    schema: pa.Schema
    csv: str

    def stamped(self, run_id: str) -> pa.Schema:
        """The schema with the table and the run named in its metadata."""
        return self.schema.with_metadata({TABLE_KEY: self.name.encode(), RUN_KEY: run_id.encode()})


# One row per offered arrival (reports/README.md "samples.csv"; the run id is in the metadata).
SAMPLES = Table(
    "samples",
    pa.schema(
        [
            pa.field("worker", pa.int32(), nullable=False),
            pa.field("index", pa.int64(), nullable=False),
            pa.field("workload", pa.string(), nullable=False),
            pa.field("phase", pa.string(), nullable=False),
            pa.field("due_s", pa.float64(), nullable=False),
            pa.field("sent_s", pa.float64()),
            pa.field("finished_s", pa.float64(), nullable=False),
            pa.field("latency_ms", pa.float64()),
            pa.field("latency_due_ms", pa.float64(), nullable=False),
            pa.field("ttft_ms", pa.float64()),
            pa.field("tokens", pa.int64(), nullable=False),
            pa.field("status", pa.int32(), nullable=False),
            pa.field("ok", pa.int8(), nullable=False),
            pa.field("outcome", pa.string(), nullable=False),
            pa.field("detail", pa.string(), nullable=False),
            pa.field("bytes", pa.int64(), nullable=False),
            pa.field("first_event_ms", pa.float64()),
            pa.field("last_token_ms", pa.float64()),
            pa.field("stall_ms", pa.float64()),
        ]
    ),
    "samples.csv",
)
# What became of each arrival the platform accepted (engine/followups.py).
FOLLOWUPS = Table(
    "followups",
    pa.schema(
        [
            pa.field("index", pa.int64(), nullable=False),
            pa.field("workload", pa.string(), nullable=False),
            pa.field("ref", pa.string(), nullable=False),
            pa.field("state", pa.string(), nullable=False),
            pa.field("detail", pa.string(), nullable=False),
        ]
    ),
    "followups.csv",
)
# The stub's row per planned model call (stub/calls.py's columns; the run key, ``run`` in its
# CSV, is in the metadata).
STUB_CALLS = Table(
    "stub_calls",
    pa.schema(
        [
            pa.field("arrival", pa.int64(), nullable=False),
            pa.field("step", pa.int64(), nullable=False),
            pa.field("steps", pa.int64(), nullable=False),
            pa.field("reply", pa.string(), nullable=False),
            pa.field("tool_calls", pa.int64(), nullable=False),
            pa.field("turns", pa.int64(), nullable=False),
            pa.field("prompt_tokens", pa.int64(), nullable=False),
            pa.field("started_at", pa.float64(), nullable=False),
            pa.field("first_ms", pa.float64()),
            pa.field("total_ms", pa.float64(), nullable=False),
            pa.field("outcome", pa.string(), nullable=False),
        ]
    ),
    "stub_calls.csv",
)
# Readings of the system under test and of the generator (probes/), long format.
PROBES = Table(
    "probes",
    pa.schema(
        [
            pa.field("t_s", pa.float64(), nullable=False),
            pa.field("probe", pa.string(), nullable=False),
            pa.field("metric", pa.string(), nullable=False),
            pa.field("value", pa.float64(), nullable=False),
        ]
    ),
    "probes.csv",
)
TABLES = (SAMPLES, FOLLOWUPS, STUB_CALLS, PROBES)


class PartWriter:
    """Appends batches of one growing table to a directory of parts; ``rows`` counts the rows
    written. A failed write (a full disk) is raised once and ends the writer: a stream is never
    appended to after a torn batch, so what it holds stays readable."""

    def __init__(self, directory: Path, table: Table, run_id: str, part_rows: int = PART_ROWS):
        directory.mkdir()
        self.directory = directory
        self.table = table
        self.rows = 0
        self._schema = table.stamped(run_id)
        self._part_rows = part_rows
        self._number = 0
        self._open_rows = 0
        self._broken = False
        self._start_stream()

    def append(self, columns: Mapping[str, Sequence]) -> int:
        """Write one batch (a sequence per column, in any order); returns its row count."""
        if self._broken:
            raise OSError(f"{self.directory}: no longer written after an earlier failure")
        batch = pa.RecordBatch.from_pydict(dict(columns), schema=self._schema)
        if not batch.num_rows:
            return 0
        try:
            self._stream.write_batch(batch)
            self._file.flush()
        except BaseException:
            self._broken = True
            raise
        self.rows += batch.num_rows
        self._open_rows += batch.num_rows
        if self._open_rows >= self._part_rows:
            self._close_part()
            self._start_stream()
        return batch.num_rows

    def close(self) -> None:
        """The open part becomes a closed one (or goes, if it holds nothing); nothing after."""
        if self._broken:
            with contextlib.suppress(OSError):
                self._file.close()
            return
        self._close_part()
        self._broken = True

    def _start_stream(self) -> None:
        self._path = self.directory / f"open-{self._number:06d}.arrows"
        self._file = nofollow.create(self._path, binary=True)
        self._stream = ipc.new_stream(self._file, self._schema)
        self._file.flush()
        self._open_rows = 0

    def _close_part(self) -> None:
        """The open stream as a closed part: written whole under a temporary name, renamed, then
        the stream removed (a kill between the two leaves both; readers take the part)."""
        try:
            self._stream.close()
            self._file.close()
            if self._open_rows:
                with ipc.open_stream(self._path) as stream:
                    rows = stream.read_all()
                write_parquet(self.directory / f"part-{self._number:06d}.parquet", rows)
            os.unlink(self._path)
        except BaseException:
            self._broken = True
            raise
        self._number += 1


def write_parquet(path: Path, table: pa.Table) -> None:
    """``table`` as a Parquet file written whole at ``path``: never half there, never through a
    symlink (engine/nofollow.py)."""
    partial = path.with_name(path.name + ".partial")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(partial)
    with nofollow.create(partial, binary=True) as out:
        pq.write_table(table, out, compression=COMPRESSION)
    os.replace(partial, path)


def write_table(run_dir: Path, table: Table, run_id: str, columns: Mapping[str, Sequence]) -> Path:
    """A table written once (followups, stub_calls) as ``<name>.parquet`` in ``run_dir``."""
    path = run_dir / f"{table.name}.parquet"
    write_parquet(path, pa.Table.from_pydict(dict(columns), schema=table.stamped(run_id)))
    return path


@dataclass(frozen=True)
class Parts:
    """What a table's directory holds that can be read: its closed parts in order, the open
    stream's whole batches (a part-sized table, or None) and its number, and the damage a
    killed writer left, in one line ("" when there is none)."""

    files: tuple[Path, ...]
    open: pa.Table | None
    open_number: int
    damage: str

    @property
    def empty(self) -> bool:
        return not self.files and (self.open is None or not self.open.num_rows)


def read_parts(directory: Path, table: Table) -> Parts:
    """The readable parts of ``table`` in ``directory``: every closed part, and the open stream
    up to its last whole batch when its part was never written. Read while the run goes, a
    stream may become a part between the listing and the reading: then it is listed again."""
    for _ in range(3):
        with contextlib.suppress(FileNotFoundError):
            return _read_parts(directory, table)
    return _read_parts(directory, table)


def _read_parts(directory: Path, table: Table) -> Parts:
    names = sorted(p.name for p in directory.iterdir())
    numbers = [int(m.group(1)) for m in map(_PART.match, names) if m]
    files = tuple(directory / f"part-{n:06d}.parquet" for n in numbers)
    streams = [int(m.group(1)) for m in map(_OPEN.match, names) if m]
    fresh = [n for n in streams if n not in numbers]
    if not fresh:
        return Parts(files, None, len(numbers), "")
    number = max(fresh)
    rows, damage = read_stream(directory / f"open-{number:06d}.arrows")
    return Parts(files, rows, number, damage)


def read_stream(path: Path) -> tuple[pa.Table | None, str]:
    """An open part's whole batches, and what was cut off if the writer stopped mid-batch."""
    batches: list[pa.RecordBatch] = []
    size = path.stat().st_size
    try:
        with ipc.open_stream(path) as stream:
            schema = stream.schema
            batches.extend(stream)
    except (pa.ArrowInvalid, OSError, EOFError):
        if not batches and size == 0:
            return None, ""
        rows = sum(b.num_rows for b in batches)
        whole = pa.Table.from_batches(batches) if batches else None
        said = f"{rows:,} whole row{'s' if rows != 1 else ''}"
        return whole, (
            f"{path}: cut off mid-write after {said} (the writer stopped while writing a batch: "
            "killed, or the disk was full); the rows before the cut are read"
        )
    return pa.Table.from_batches(batches, schema=schema), ""


def run_id_of(schema: pa.Schema) -> str | None:
    """The run a file's metadata names (None for a file that names none)."""
    value = (schema.metadata or {}).get(RUN_KEY)
    return None if value is None else value.decode()


def read_table(run_dir: Path, table: Table, columns: Sequence[str] | None = None) -> pa.Table:
    """A table of a run written as a dataset, whole (for what reads a few columns of it: the
    master's lost processes, benches, tests); an empty table when the run has none."""
    single = run_dir / f"{table.name}.parquet"
    if single.exists():
        return pq.read_table(single, columns=list(columns) if columns else None)
    directory = run_dir / table.name
    wanted = list(columns) if columns else table.schema.names
    if not directory.is_dir():
        return table.schema.empty_table().select(wanted)
    parts = read_parts(directory, table)
    pieces = [pq.read_table(f, columns=wanted) for f in parts.files]
    if parts.open is not None:
        pieces.append(parts.open.select(wanted))
    if not pieces:
        return table.schema.empty_table().select(wanted)
    return pa.concat_tables(pieces)
