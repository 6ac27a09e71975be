"""Samples every configured probe on one absolute clock while the run lasts.

Runs as a greenlet on the Locust master. A probe that was not given, could not
start, or never answered is reported as missing with its reason; one that failed
only sometimes keeps its rows and is reported with its failure count.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import gevent
import gevent.event

from engine.run_record import ProbesSummary
from probes.machine import MachineProbe
from probes.postgres import PostgresProbe
from probes.process import ProcessProbe
from probes.prometheus import PrometheusProbe
from probes.readings import ProbeParts, Reading
from probes.stub import StubProbe

# Two seconds resolves a 45 s burst into ~20 points without loading what is measured.
DEFAULT_INTERVAL_S = 2.0


@dataclass(frozen=True)
class ProbeOptions:
    api_pid: int | None = None
    database_url: str | None = None
    metrics_url: str | None = None
    stub_url: str | None = None


class Probe(Protocol):
    """One thing a run watches (the API process, its database, /metrics, the stub, the
    machine): its name in probes.csv, a reading of it now, and its end."""

    name: str

    def read(self) -> dict[str, float]: ...

    def close(self) -> None: ...


@dataclass
class _Health:
    readings: int = 0
    failures: int = 0
    last_error: str = ""


@dataclass
class ProbeRun:
    """A running sampler; ``stop()`` ends it and says which probes were taken."""

    _parts: ProbeParts
    _probes: list[Probe]
    _missing: dict[str, str]
    _start_epoch: float
    _interval_s: float
    _stopping: gevent.event.Event = field(default_factory=gevent.event.Event)
    _health: dict[str, _Health] = field(default_factory=dict)
    _greenlet: gevent.Greenlet | None = None

    def record(self, readings: Iterable[Reading]) -> None:
        """Append readings taken elsewhere (the generator's own), through the one writer."""
        self._parts.write(readings)

    def _sample_once(self) -> None:
        t_s = round(time.time() - self._start_epoch, 3)
        rows: list[Reading] = []
        for probe in self._probes:
            health = self._health.setdefault(probe.name, _Health())
            try:
                values = probe.read()
            except Exception as exc:
                health.failures += 1
                health.last_error = _describe(exc)
                continue
            health.readings += 1
            rows.extend(Reading(t_s, probe.name, k, v) for k, v in values.items())
        self._parts.write(rows)

    def _loop(self) -> None:
        start = time.monotonic()
        tick = 0
        while not self._stopping.is_set():
            self._sample_once()
            tick += 1
            self._stopping.wait(max(0.0, start + tick * self._interval_s - time.monotonic()))

    def stop(self) -> ProbesSummary:
        """End sampling (one last reading first) and return taken / missing / failed."""
        self._stopping.set()
        if self._greenlet is not None:
            self._greenlet.join(timeout=self._interval_s * 2)
            self._sample_once()
        for probe in self._probes:
            probe.close()
        self._parts.close()
        missing = dict(self._missing)
        taken, failed = [], {}
        for probe in self._probes:
            health = self._health.get(probe.name, _Health())
            if health.readings == 0:
                missing[probe.name] = f"never answered: {health.last_error or 'no reading'}"
                continue
            taken.append(probe.name)
            if health.failures:
                total = health.readings + health.failures
                failed[probe.name] = (
                    f"{health.failures} of {total} readings failed: {health.last_error}"
                )
        return ProbesSummary(taken, missing, failed)


def _describe(exc: BaseException) -> str:
    """A stable one-line reason: the exception's class and its first line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _open_probes(options: ProbeOptions, timeout_s: float) -> tuple[list[Probe], dict[str, str]]:
    """The probes that could start, and the reason for each that did not: the machine's always,
    the others where their option was given.

    Reasons never repeat the option's value: a database URL may carry a password.
    """
    api, db, metrics, stub = (
        options.api_pid,
        options.database_url,
        options.metrics_url,
        options.stub_url,
    )
    wanted: dict[str, tuple[str, Callable[[], Probe] | None]] = {
        "api": ("--api-pid", (lambda: ProcessProbe(api)) if api else None),
        "db": ("--database-url", (lambda: PostgresProbe(db)) if db else None),
        "metrics": (
            "--metrics-url",
            (lambda: PrometheusProbe(metrics, timeout_s)) if metrics else None,
        ),
        "stub": ("--stub-url", (lambda: StubProbe(stub, timeout_s)) if stub else None),
    }
    probes: list[Probe] = [MachineProbe()]
    missing = {}
    for name, (flag, make) in wanted.items():
        if make is None:
            missing[name] = f"{flag} not given"
            continue
        try:
            probes.append(make())
        except Exception as exc:
            missing[name] = f"{flag}: {_describe(exc)}"
    return probes, missing


def start_probes(
    options: ProbeOptions,
    directory: Path,
    run_id: str,
    start_epoch: float,
    interval_s: float = DEFAULT_INTERVAL_S,
) -> ProbeRun:
    """Open the configured probes and sample them every ``interval_s`` in a greenlet, their
    readings written to the ``probes`` table in ``directory`` (a new directory of parts)."""
    probes, missing = _open_probes(options, timeout_s=interval_s * 0.75)
    run = ProbeRun(ProbeParts(directory, run_id), probes, missing, start_epoch, interval_s)
    run._greenlet = gevent.spawn(run._loop)
    return run
