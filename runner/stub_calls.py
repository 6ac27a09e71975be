"""After the drain: the stub's record of this run's model calls, beside the samples.

The stub keeps a row per call the kit's marker planned (stub/calls.py) and serves a
run's rows at ``GET /calls?run=RUN``; the master asks once every arrival has ended,
so every row is written, and keeps them as the run's ``stub_calls`` table
(``stub_calls.parquet``, engine/dataset.py: typed, the run key stated once), a file of
its own (run.json stays the run's record). The answer is streamed to disk and converted
a block at a time, so a day of calls is never held whole. Reports join them to the
samples by arrival index: the model calls each turn made and the stub's own time
for them. A stub that cannot be asked (not the kit's, or gone) leaves no file, and
the report says the loop was not measured.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import requests

from engine import nofollow
from engine.dataset import COMPRESSION, STUB_CALLS
from engine.trust import session

# Seconds to wait for the stub's answer: it reads its files and streams them back.
FETCH_TIMEOUT_S = 60.0

log = logging.getLogger("agent_loadkit")


# Bytes read from the stub's answer at a time, and converted to Parquet at a time.
CHUNK_BYTES = 1 << 20
BLOCK_BYTES = 16 << 20


def fetch_stub_calls(stub_url: str | None, run_key: str, run_dir: Path) -> int | None:
    """Write the ``stub_calls`` table with the rows of ``run_key`` (engine.agent_plan.calls_key);
    the rows it holds, or None when the stub could not say."""
    if not stub_url:
        return None
    url = stub_url.rstrip("/") + "/calls"
    with tempfile.TemporaryDirectory(prefix=".stub_calls-", dir=run_dir) as tmp:
        body = Path(tmp) / STUB_CALLS.csv
        try:
            with (
                session().get(
                    url, params={"run": run_key}, timeout=FETCH_TIMEOUT_S, stream=True
                ) as answer,
                body.open("wb") as out,
            ):
                answer.raise_for_status()
                for chunk in answer.iter_content(CHUNK_BYTES):
                    out.write(chunk)
        except requests.RequestException as exc:
            log.warning("the stub's call record was not read (%s): %s", url, type(exc).__name__)
            return None
        with body.open("rb") as head:
            if head.read(len(b"run,arrival,")) != b"run,arrival,":
                log.warning("%s did not answer the stub's call record; is it the kit's stub?", url)
                return None
        return _as_parquet(body, run_key, run_dir / f"{STUB_CALLS.name}.parquet")


def _as_parquet(body: Path, run_key: str, path: Path) -> int:
    """The stub's CSV as the typed table, a block at a time, written whole or not at all; the
    key is stated once, in the file's metadata (every row the stub answered carries it)."""
    schema = STUB_CALLS.stamped(run_key)
    types = {f.name: f.type for f in STUB_CALLS.schema}
    options = pacsv.ConvertOptions(column_types=types, include_columns=list(types))
    partial = path.with_name(path.name + ".partial")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(partial)
    rows = 0
    with (
        nofollow.create(partial, binary=True) as out,
        pq.ParquetWriter(out, schema, compression=COMPRESSION) as writer,
        pacsv.open_csv(
            body, read_options=pacsv.ReadOptions(block_size=BLOCK_BYTES), convert_options=options
        ) as blocks,
    ):
        for block in blocks:
            writer.write_table(pa.Table.from_batches([block]).cast(schema))
            rows += block.num_rows
    os.replace(partial, path)
    return rows
