"""One reading per row, appended as it is taken, so a killed run keeps what it measured."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import astuple, dataclass
from pathlib import Path

from engine import nofollow

HEADER = ("t_s", "probe", "metric", "value")


@dataclass(frozen=True)
class Reading:
    t_s: float
    probe: str
    metric: str
    value: float


class ProbeCsv:
    """Appends readings to ``probes.csv`` and flushes each batch to disk."""

    def __init__(self, path: str | Path):
        self._file = nofollow.create(Path(path))
        self._writer = csv.writer(self._file)
        self._writer.writerow(HEADER)
        self._file.flush()

    def write(self, readings: Iterable[Reading]) -> None:
        for reading in readings:
            self._writer.writerow(astuple(reading))
        self._file.flush()

    def close(self) -> None:
        self._file.close()
