"""A run on the master while it goes: every batch of samples to disk as it arrives, what the
operator and the web UI are shown of it, and when every load process has drained.

Everything a going run needs is set when it starts (its clock, its probes, its progress
line, its lead), so nothing here waits to be filled in; what a run only has once it ends
(its end, how it stopped, the processes lost) is said when it ends.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import gevent
import gevent.event
from locust.runners import MasterRunner

from engine.agent_plan import calls_key
from engine.clock import RunClock
from engine.dataset import PROBES
from engine.run_record import LostProcess, PlatformRecord, ProcessStart, StartRecord
from engine.samples import Sample
from engine.schedule import Plan
from engine.seam import Accepted
from inputs.scenario import Scenario
from probes import ProbeRun, start_probes
from runner.before_load import Settled
from runner.faults import RunFaults, start_faults
from runner.live_metrics import RunMetrics
from runner.messages import Batch, Drained
from runner.progress import Progress, ProgressLine
from runner.run_files import RunFiles
from runner.settings import RunSettings

# Locust averages its current RPS over whole seconds from 12 to 2 before its last request
# (locust.stats current_rps): the offered rate shown beside it is taken over the same.
LOCUST_RPS_WINDOW_S = (12.0, 2.0)
# A plan change takes effect this far ahead, so every process switches at the same index.
CHANGE_LEAD_S = 1.0
# What the progress line says once the plan has ended and in-flight work is awaited.
DRAINING = "draining"
# run.json's ``stopped`` for a run every load process drained.
COMPLETED = "completed"


@dataclass
class ActiveRun:
    """One run, from the moment its start time is picked to the moment it is recorded."""

    run_id: str
    settings: RunSettings
    # The scenario the run offers (a workload preflight skipped at share 0).
    scenario: Scenario
    plan: Plan
    files: RunFiles
    # Each load process's Locust client id -> its slot.
    slots: dict[str, int]
    distributed: bool
    closed_loop: bool
    skipped: dict[str, str]
    platform: PlatformRecord
    clock: RunClock
    started_at: str
    lead: StartRecord
    probes: ProbeRun
    progress: ProgressLine
    # Bytes in the platform's log when the test started (preflight included), if one is named.
    platform_log_from: int
    metrics: RunMetrics | None = None
    drained: dict[int, Drained] = field(default_factory=dict)
    # Each process's own start (sign-in, warm-up, waking for t = 0), as it drained.
    process_starts: dict[str, ProcessStart] = field(default_factory=dict)
    last_drained: float = 0.0
    all_drained: gevent.event.Event = field(default_factory=gevent.event.Event)
    # Recorded samples sent late (or never sent), for the progress line.
    late: int = 0
    # Work the platform accepted for later: (arrival index, workload, its reference).
    accepted: list[Accepted] = field(default_factory=list)
    # A local run's greenlet moving samples from its dispatcher to disk.
    flusher: gevent.Greenlet | None = None
    # Set when the run ends: when (seconds from its start), and how.
    end_s: float | None = None
    stopped: str | None = None
    lost: list[LostProcess] = field(default_factory=list)
    # When the follow-up of accepted work ended: followups.csv's states are as of then.
    followed_until: str | None = None
    # The fault windows handed out (runner/faults.py), None when the scenario has none.
    faults: RunFaults | None = None

    @classmethod
    def started(
        cls, environment, settled: Settled, lead: StartRecord, metrics: RunMetrics | None
    ) -> ActiveRun:
        """The run, its start ``lead`` ahead (the slowest process's round trips, measured), its
        probes and progress line going and its live metrics begun."""
        start_epoch = time.time() + lead.lead_s
        files = RunFiles(settled.run_dir, settled.run_id)
        settings = settled.settings
        headless = bool(environment.parsed_options.headless)
        run = cls(
            run_id=settled.run_id,
            settings=settings,
            scenario=settings.scenario,
            plan=settled.plan,
            files=files,
            slots=settled.slots,
            distributed=isinstance(environment.runner, MasterRunner),
            closed_loop=settled.closed_loop,
            skipped=settled.skipped,
            platform=settled.platform,
            clock=RunClock(start_epoch),
            started_at=iso(start_epoch),
            lead=lead,
            probes=start_probes(
                settings.probes, files.dir / PROBES.name, settled.run_id, start_epoch
            ),
            progress=ProgressLine(live=headless and sys.stderr.isatty()),
            platform_log_from=settled.platform_log_from,
            metrics=metrics,
        )
        if metrics is not None:
            metrics.begin(run.run_id, run.scenario, run.phases)
        key = calls_key(run.run_id, start_epoch)
        run.faults = start_faults(settings, run.plan, files.dir, key, start_epoch)
        return run

    @property
    def workers(self) -> int:
        """Load processes in this run."""
        return len(self.slots)

    @property
    def phases(self) -> list[str]:
        """Each segment's name by its number: the phase a sample of that segment is written
        with."""
        return [s.name for s in self.plan.segments]

    def take(self, batch: Batch) -> None:
        """Append a batch of samples to disk (and to the live metrics), the generator's readings
        to the probes table, and the work the platform accepted to what is followed up."""
        phases = self.phases
        self.files.append_samples(batch.slot, batch.samples, phases)
        self.late += _late(batch.samples, self.scenario.lateness.late_after_ms)
        if self.metrics is not None:
            self.metrics.take(self.run_id, batch.slot, batch.samples, phases, batch.offered)
        self.accepted += batch.accepted
        if batch.readings:
            self.probes.record(batch.readings)

    def take_drained(self, drained: Drained) -> None:
        """A process's last batch: write it and mark the process done."""
        self.take(drained.batch)
        self.drained[drained.batch.slot] = drained
        self.process_starts[str(drained.batch.slot)] = drained.start
        self.last_drained = time.monotonic()
        if len(self.drained) == self.workers:
            self.all_drained.set()

    def silent(self) -> list[int]:
        """Slots that have not drained, in order."""
        return sorted(set(range(self.workers)) - set(self.drained))

    def progress_so_far(self) -> tuple[Path, int]:
        """The run's directory and how many arrivals were due by now (users mode, which has no
        schedule: how many requests were recorded, all the master can say was offered)."""
        if self.closed_loop:
            return self.files.dir, self.files.recorded
        return self.files.dir, self.plan.due_before(self.clock.now())

    def offered_rate(self) -> float | None:
        """Arrivals offered per second over Locust's RPS window (None once the run stopped, and
        in users mode, whose users Locust counts itself)."""
        if self.stopped is not None or self.closed_loop:
            return None
        now = self.clock.now()
        end, start = now - LOCUST_RPS_WINDOW_S[1], max(now - LOCUST_RPS_WINDOW_S[0], 0.0)
        if end <= start:
            return 0.0
        return (self.plan.due_before(end) - self.plan.due_before(start)) / (end - start)

    def announce(self, now: float, phase: str | None = None) -> None:
        """The progress line: the phase (or ``phase``, e.g. draining), offered so far (due by
        now) against recorded, in flight and late, so an operator watching a headless run
        sees it fall behind; in users mode what was recorded, since a closed loop has
        nothing due."""
        current = next((s for s in reversed(self.plan.segments) if s.start_s <= now), None)
        if current is None:
            return
        closed = self.closed_loop
        self.progress.show(
            Progress(
                phase=phase or current.name,
                rate=None if closed or phase else current.rate,
                now_s=now,
                end_s=self.plan.end_s,
                offered=None if closed else self.plan.due_before(now),
                recorded=self.files.recorded,
                late=self.late,
            )
        )

    def end(self, now: float, stopped: str) -> None:
        """The run ended at ``now`` (seconds from its start), as ``stopped`` says."""
        self.end_s, self.stopped = now, stopped
        self.progress.done()

    def completed(self, now: float) -> None:
        """Every process drained (or the drain's deadline passed): ended ``completed``, or
        ``incomplete`` naming the processes that never sent their last samples."""
        silent = self.silent()
        if not silent:
            self.end(now, COMPLETED)
            return
        names = {slot: client for client, slot in self.slots.items()}
        lost = ", ".join(f"load process {s} ({names.get(s, '?')}) lost" for s in silent)
        self.end(now, f"incomplete: {lost}")


def _late(samples: list[Sample], late_after_ms: float) -> int:
    """Samples sent more than ``late_after_ms`` after due, or never sent: the report's rule,
    counted as batches arrive."""
    late = 0
    for sample in samples:
        sent = sample.sent_s
        late += sent is None or (sent - sample.due_s) * 1000.0 > late_after_ms
    return late


def iso(epoch: float) -> str:
    """An epoch as run.json says a time: UTC, to the second."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
