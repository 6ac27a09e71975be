"""``loadkit export RUN``: a run's tables as the CSV files runs used to hold.

The run keeps its tables as a dataset (engine/dataset.py); a spreadsheet, a shell pipeline or
a tool of a team's own may want ``samples.csv``. Export writes ``samples.csv``,
``followups.csv``, ``stub_calls.csv`` and ``probes.csv`` beside the dataset, each in the
columns and spelling the kit wrote before the dataset (reports/README.md): the run id on
every row of samples.csv, times to the microsecond, an empty cell for a value never
measured. The numbers are the dataset's own (the master rounded them as the CSV spelled
them), so nothing is lost either way. A part at a time, so a day's run exports in the
memory of one part. Reports read the dataset when a directory holds both.

    loadkit export runs/<timestamp>
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from engine import nofollow
from engine.dataset import FOLLOWUPS, PROBES, SAMPLES, STUB_CALLS, Table, read_parts, run_id_of

# Rows formatted at a time.
BATCH_ROWS = 65_536


def _fixed(places: int) -> Callable[[object], str]:
    """A number to ``places`` decimals, as the CSV spelled it; empty when never measured."""
    return lambda v: "" if v is None else f"{v:.{places}f}"


def _plain(value: object) -> str:
    """A value as Python's csv module writes it."""
    return "" if value is None else str(value)


# Each table's columns as its CSV spelled them: (column, how a value is written). The first
# column of samples.csv and stub_calls.csv is the run's id (key), from the file's metadata.
SPELLING: dict[str, tuple[tuple[str, Callable[[object], str]], ...]] = {
    SAMPLES.name: (
        ("worker", _plain),
        ("index", _plain),
        ("workload", _plain),
        ("phase", _plain),
        ("due_s", _fixed(6)),
        ("sent_s", _fixed(6)),
        ("finished_s", _fixed(6)),
        ("latency_ms", _fixed(3)),
        ("latency_due_ms", _fixed(3)),
        ("ttft_ms", _fixed(3)),
        ("tokens", _plain),
        ("status", _plain),
        ("ok", _plain),
        ("outcome", _plain),
        ("detail", _plain),
        ("bytes", _plain),
        ("first_event_ms", _fixed(3)),
        ("last_token_ms", _fixed(3)),
        ("stall_ms", _fixed(3)),
    ),
    FOLLOWUPS.name: tuple((n, _plain) for n in FOLLOWUPS.schema.names),
    STUB_CALLS.name: (
        ("arrival", _plain),
        ("step", _plain),
        ("steps", _plain),
        ("reply", _plain),
        ("tool_calls", _plain),
        ("turns", _plain),
        ("prompt_tokens", _plain),
        ("started_at", _fixed(6)),
        ("first_ms", _fixed(3)),
        ("total_ms", _fixed(3)),
        ("outcome", _plain),
    ),
    PROBES.name: tuple((n, _plain) for n in PROBES.schema.names),
}
# The column naming the run on every row of a CSV whose dataset states it once.
RUN_COLUMN = {SAMPLES.name: "run_id", STUB_CALLS.name: "run"}


def _sources(run_dir: Path, table: Table) -> Iterator[tuple[pa.Schema, Iterator[pa.RecordBatch]]]:
    """The table's files in order, each as its schema and its batches."""
    single = run_dir / f"{table.name}.parquet"
    if single.exists():
        file = pq.ParquetFile(single)
        yield file.schema_arrow, file.iter_batches(BATCH_ROWS)
        return
    directory = run_dir / table.name
    if not directory.is_dir():
        return
    parts = read_parts(directory, table)
    for path in parts.files:
        file = pq.ParquetFile(path)
        yield file.schema_arrow, file.iter_batches(BATCH_ROWS)
    if parts.open is not None:
        yield parts.open.schema, iter(parts.open.to_batches(BATCH_ROWS))


def has(run_dir: Path, table: Table) -> bool:
    """Whether the run holds ``table`` as a dataset."""
    return (run_dir / f"{table.name}.parquet").exists() or (run_dir / table.name).is_dir()


def csv_rows(run_dir: Path, table: Table) -> Iterator[list[str]]:
    """The table's CSV, header first, a row at a time (nothing when the run has no such
    table)."""
    if not has(run_dir, table):
        return
    spelling = SPELLING[table.name]
    named = RUN_COLUMN.get(table.name)
    yield ([named] if named else []) + [name for name, _ in spelling]
    for schema, batches in _sources(run_dir, table):
        run = [run_id_of(schema) or ""] if named else []
        for batch in batches:
            columns = [batch.column(name).to_pylist() for name, _ in spelling]
            writers = [write for _, write in spelling]
            for values in zip(*columns, strict=True):
                yield run + [w(v) for w, v in zip(writers, values, strict=True)]


def export(run_dir: Path) -> list[Path]:
    """Write each table the run holds as its CSV beside it (replacing one there, never through
    a symlink); the files written."""
    written = []
    for table in (SAMPLES, FOLLOWUPS, STUB_CALLS, PROBES):
        if not has(run_dir, table):
            continue
        path = run_dir / table.csv
        partial = path.with_name(path.name + ".partial")
        if partial.exists() or partial.is_symlink():
            os.unlink(partial)
        with nofollow.create(partial) as out:
            csv.writer(out).writerows(csv_rows(run_dir, table))
        os.replace(partial, path)
        written.append(path)
    return written


def main(argv: list[str] | None = None, prog: str = "python -m reports.export") -> int:
    """Export a run directory's tables; 0 when written, 2 when it holds no dataset."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<timestamp>)")
    run_dir = Path(parser.parse_args(argv).run_dir)
    if not has(run_dir, SAMPLES):
        print(
            f"{prog}: {run_dir / SAMPLES.name}: not a run written as a dataset "
            f"(a run from before it already holds {SAMPLES.csv})",
            file=sys.stderr,
        )
        return 2
    for path in export(run_dir):
        print(f"written: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
