"""The run directory on the master: samples appended as they arrive, run.json kept current.

Every file is created new, never through a symlink someone left in the directory
(engine/nofollow.py); ``check_new_run_dir`` refuses such a directory before preflight.

A killed run must still leave something to read, so nothing waits for the end:
each batch is appended to ``samples.csv`` and flushed when it arrives, and
``run.json`` is rewritten (atomically) whenever what it says changes, starting
with "did not end" until the run records how it ended.
"""

from __future__ import annotations

import csv
import os
import platform
import socket
from collections.abc import Iterable
from pathlib import Path

import psutil
from locust.stats import PERCENTILES_TO_REPORT, StatsCSV

from engine import nofollow, run_record
from engine.run_record import RUN_FILE, Machine, RunRecord
from engine.samples import COLUMNS, SAMPLES_FILE, Sample, csv_row

# Locust's own tables, kept beside ours for its familiar views (never used for the verdict).
LOCUST_TABLES = {
    "locust_stats.csv": "requests_csv",
    "locust_failures.csv": "failures_csv",
    "locust_exceptions.csv": "exceptions_csv",
}


class RunFiles:
    """Writes one run directory; ``recorded`` counts the sample rows written."""

    def __init__(self, run_dir: Path, run_id: str):
        self.dir = run_dir
        self.run_id = run_id
        self.recorded = 0
        run_dir.mkdir(parents=True, exist_ok=True)
        self._file = nofollow.create(run_dir / SAMPLES_FILE)
        self._csv = csv.writer(self._file)
        self._csv.writerow(COLUMNS)
        self._file.flush()

    def append_samples(self, worker: int, rows: Iterable, phases: list[str]) -> int:
        """Append a batch of sample tuples from one process; returns how many were written."""
        samples = [Sample(*row) for row in rows]
        run_id = self.run_id
        # One writerows for the batch: a master writes every process's rows.
        self._csv.writerows([csv_row(run_id, worker, phases[s.segment], s) for s in samples])
        self._file.flush()
        self.recorded += len(samples)
        return len(samples)

    def write_run_json(self, record: RunRecord) -> None:
        """Replace run.json in one step, so a reader never sees half of it."""
        nofollow.replace(self.dir / RUN_FILE, run_record.encode(record))

    def write_locust_tables(self, environment) -> None:
        """Locust's own request, failure and exception tables, as its --csv would write them."""
        tables = StatsCSV(environment, PERCENTILES_TO_REPORT)
        for name, method in LOCUST_TABLES.items():
            with nofollow.create(self.dir / name) as out:
                getattr(tables, method)(csv.writer(out))

    def close(self) -> None:
        """Close samples.csv; nothing is appended after."""
        self._file.close()


def machine() -> Machine:
    """The machine the master ran on, for the report's header."""
    return Machine(
        hostname=socket.gethostname(),
        cpus=os.cpu_count(),
        memory_gb=round(psutil.virtual_memory().total / 2**30, 1),
        os=platform.platform(),
        python=platform.python_version(),
    )
