"""One reading per row, appended as it is taken, so a killed run keeps what it measured.

Readings are the run's ``probes`` table (engine/dataset.py): closed Parquet parts and an
open Arrow stream each batch is flushed to, as the samples are.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from engine.dataset import PROBES, PartWriter

HEADER = tuple(PROBES.schema.names)


@dataclass(frozen=True)
class Reading:
    t_s: float
    probe: str
    metric: str
    value: float


class ProbeParts:
    """Appends readings to the run's ``probes`` table and flushes each batch to disk."""

    def __init__(self, directory: Path, run_id: str):
        self._parts = PartWriter(directory, PROBES, run_id)

    def write(self, readings: Iterable[Reading]) -> None:
        rows = list(readings)
        self._parts.append({name: [getattr(r, name) for r in rows] for name in HEADER})

    def close(self) -> None:
        self._parts.close()
