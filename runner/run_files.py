"""The run directory on the master: samples written as they arrive, run.json kept current.

Every file is created new, never through a symlink someone left in the directory
(engine/nofollow.py); ``check_new_run_dir`` refuses such a directory before preflight.

A killed run must still leave something to read, so nothing waits for the end: each
batch is appended to the ``samples`` dataset's open part and flushed when it arrives
(engine/dataset.py: closed Parquet parts, the open one an Arrow stream), and
``run.json`` is rewritten (atomically) whenever what it says changes, starting with
"did not end" until the run records how it ended. A disk that fills stops the samples
where it filled, said once; the run goes on to its end and is invalid (recorded short of
offered), and its report names the cut.
"""

from __future__ import annotations

import csv
import logging
import os
import platform
import socket
from pathlib import Path

import psutil
from locust.stats import PERCENTILES_TO_REPORT, StatsCSV

from engine import nofollow, run_record
from engine.dataset import SAMPLES, PartWriter
from engine.run_record import RUN_FILE, Machine, RunRecord
from engine.samples import Sample, columns

log = logging.getLogger(__name__)

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
        run_dir.mkdir(parents=True, exist_ok=True)
        self._samples = PartWriter(run_dir / SAMPLES.name, SAMPLES, run_id)
        # Why samples stopped being written (a full disk), once it happened.
        self.failed: str | None = None

    @property
    def recorded(self) -> int:
        """Samples written to the dataset."""
        return self._samples.rows

    def append_samples(self, worker: int, samples: list[Sample], phases: list[str]) -> int:
        """Append a batch of samples from one process; returns how many were written."""
        if self.failed is not None or not samples:
            return 0
        try:
            return self._samples.append(columns(worker, phases, samples))
        except OSError as exc:
            self.failed = f"{type(exc).__name__}: {exc}"
            log.error(
                "samples: cannot write in %s (%s); the %d written before are kept, no more are "
                "recorded, and the run will be invalid",
                self._samples.directory,
                self.failed,
                self.recorded,
            )
            return 0

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
        """Close the samples: the open part becomes a closed one; nothing is appended after."""
        try:
            self._samples.close()
        except OSError as exc:
            log.error("samples: the last part was not closed (%s); readers take the open one", exc)


def machine() -> Machine:
    """The machine the master ran on, for the report's header."""
    return Machine(
        hostname=socket.gethostname(),
        cpus=os.cpu_count(),
        memory_gb=round(psutil.virtual_memory().total / 2**30, 1),
        os=platform.platform(),
        python=platform.python_version(),
    )
