"""A run killed mid-way keeps every sample written before it, and its report says what it read.

The samples are written as closed Parquet parts and an open Arrow stream each batch is
flushed to (engine/dataset.py). Here a writer in a process of its own is killed with
SIGKILL while it writes, and another writes until the disk it may use is full (the file
size limit, which the kernel enforces as it would a full disk: the write fails part way);
what each said it had written before it stopped must all be read back, nothing twice, and a
batch cut off mid-write must be named. Last, a real run's master is SIGKILLed under load and
its report built from what it left.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap

import pandas as pd
import pyarrow as pa
import pytest

from bench.synthetic_runs import column_of
from engine.dataset import SAMPLES, PartWriter, read_parts, read_table
from reports.build import build_report
from reports.rundir import load_run
from stack.generator_runs import RUN_TIMEOUT_S, platform, write_scenario
from stack.processes import ROOT, stop
from tests.support.generator_env import start_local, wait_for_rows, written
from tests.support.rundirs import golden_copy

# A writer that appends batches of 50 samples, in parts of the rows given, and says after
# each append (flushed) how many rows it has written, until it is stopped.
WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from engine.dataset import SAMPLES, PartWriter

    parts = PartWriter(Path(sys.argv[1]) / "samples", SAMPLES, "killed", int(sys.argv[2]))
    index = 0
    while True:
        batch = {name: [] for name in SAMPLES.schema.names}
        for _ in range(50):
            row = dict(worker=0, index=index, workload="api_read", phase="sustain", due_s=0.5,
                       sent_s=0.5, finished_s=0.6, latency_ms=100.0, latency_due_ms=100.0,
                       ttft_ms=None, tokens=0, status=200, ok=1, outcome="ok", detail="x" * 200,
                       bytes=10, first_event_ms=None, last_token_ms=None, stall_ms=None)
            for name, value in row.items():
                batch[name].append(value)
            index += 1
        try:
            parts.append(batch)
        except OSError as exc:
            print(f"failed {exc.errno}", flush=True)
            break
        print(parts.rows, flush=True)
    """
)


def _writer(run_dir, part_rows: int, limit_bytes: int | None = None) -> subprocess.Popen:
    def limited() -> None:
        if limit_bytes is not None:
            # Past the limit a write fails (EFBIG), as on a full disk (ENOSPC), not a signal.
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(run_dir), str(part_rows)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=limited,
    )


def test_a_writer_killed_mid_run_leaves_every_row_it_wrote(tmp_path):
    proc = _writer(tmp_path, part_rows=200)
    try:
        said = 0
        while said < 1000:  # past several closed parts, into an open one
            said = int(proc.stdout.readline())
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        stop(proc)
    rows = read_table(tmp_path, SAMPLES, ("index",))["index"].to_pylist()
    # Every row it said was written is read, once; a batch it was writing may be there too.
    assert set(range(said)) <= set(rows) and len(rows) == len(set(rows))
    assert rows == list(range(len(rows)))
    assert read_parts(tmp_path / "samples", SAMPLES).files


def test_a_batch_cut_off_mid_write_is_named_and_the_rows_before_it_read(tmp_path):
    parts = PartWriter(tmp_path / "samples", SAMPLES, "cut", part_rows=10_000)
    for first in (0, 50):
        parts.append(_batch(first, 50))
    stream = next((tmp_path / "samples").glob("open-*.arrows"))
    whole = stream.stat().st_size
    parts.append(_batch(100, 50))
    # The kill came while the third batch was being written.
    os.truncate(stream, whole + (stream.stat().st_size - whole) // 2)
    found = read_parts(tmp_path / "samples", SAMPLES)
    assert found.open is not None and found.open.num_rows == 100
    assert f"{stream}: cut off mid-write after 100 whole rows" in found.damage


def test_a_part_renamed_before_its_stream_went_is_read_once(tmp_path):
    parts = PartWriter(tmp_path / "samples", SAMPLES, "twice", part_rows=100)
    parts.append(_batch(0, 60))
    stream = next((tmp_path / "samples").glob("open-*.arrows"))
    kept = stream.read_bytes()
    parts.append(_batch(60, 60))  # 120 rows: the part is written, the stream removed
    # A kill between the rename and the removal leaves both.
    stream.write_bytes(kept)
    rows = read_table(tmp_path, SAMPLES, ("index",))["index"].to_pylist()
    assert sorted(rows) == list(range(120))


def test_a_full_disk_stops_the_writer_and_keeps_what_it_wrote(tmp_path):
    # The open part outgrows the limit: the write that crosses it fails part way.
    proc = _writer(tmp_path, part_rows=1_000_000, limit_bytes=200_000)
    out, _ = proc.communicate(timeout=60)
    lines = out.split()
    assert lines[-2] == "failed" and int(lines[-1]) == 27  # EFBIG, as ENOSPC would be
    said = int(lines[-3])
    rows = read_table(tmp_path, SAMPLES, ("index",))["index"].to_pylist()
    assert rows == list(range(said))
    assert "cut off mid-write" in read_parts(tmp_path / "samples", SAMPLES).damage


def _batch(first: int, n: int) -> dict:
    row = dict(
        worker=0,
        workload="api_read",
        phase="sustain",
        due_s=0.5,
        sent_s=0.5,
        finished_s=0.6,
        latency_ms=100.0,
        latency_due_ms=100.0,
        ttft_ms=None,
        tokens=0,
        status=200,
        ok=1,
        outcome="ok",
        detail="",
        bytes=10,
    )
    batch = {name: [row.get(name)] * n for name in SAMPLES.schema.names}
    batch["index"] = list(range(first, first + n))
    return batch


@pytest.mark.system
@pytest.mark.slow
def test_a_master_killed_under_load_is_reported_from_what_it_wrote(tmp_path):
    scenario = write_scenario(tmp_path, [("sustain", 60.0, 20.0)])
    run_dir = tmp_path / "run"
    with platform(tmp_path / "platform") as plat:
        proc = start_local(plat, scenario, run_dir)
        try:
            wait_for_rows(run_dir, 60, proc)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=RUN_TIMEOUT_S)
        finally:
            stop(proc)
    kept = written(run_dir)
    assert kept > 60
    # The report is built from every sample the master wrote, and the run is invalid: it
    # never recorded an end.
    assert build_report(run_dir) == 2
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["validity"]["recorded"] == kept
    assert any("killed before it ended" in r for r in summary["invalid_reasons"])
    with load_run(run_dir) as run:
        if run.damage:
            assert any(run.damage in w for w in summary["warnings"])


def test_the_report_of_a_cut_run_says_what_it_read_and_names_the_cut(tmp_path, capsys):
    """The golden run's samples in an open part whose last batch was cut off: the report is
    built from the batches before the cut, and the cut is one line on the console, in the
    report and in summary.json."""
    path = golden_copy(tmp_path / "run")
    samples = pd.read_csv(path / "samples.csv", keep_default_na=False, na_values=EMPTY)
    (path / "samples.csv").unlink()
    parts = PartWriter(path / "samples", SAMPLES, "golden")
    parts.append(_columns(samples.iloc[:20]))
    stream = next((path / "samples").glob("open-*.arrows"))
    whole = stream.stat().st_size
    parts.append(_columns(samples.iloc[20:]))
    os.truncate(stream, whole + 100)
    assert build_report(path) == 2
    out = capsys.readouterr().out
    summary = json.loads((path / "summary.json").read_text())
    assert summary["validity"]["recorded"] == 20
    (said,) = [w for w in summary["warnings"] if w.startswith("files cut off")]
    assert f"{stream.relative_to(path)}: cut off mid-write after 20 whole rows" in said
    assert said in out and said in (path / "report.md").read_text()


# samples.csv's empty cells (never sent, no first token) read as missing.
EMPTY = {c: [""] for c in ("sent_s", "latency_ms", "ttft_ms")}


def _columns(frame: pd.DataFrame) -> dict:
    return {
        f.name: pa.array(column_of(frame, f.name), from_pandas=True).cast(f.type)
        for f in SAMPLES.schema
    }
