"""The master's side of a run: check, prepare, start on one clock, collect, end, record.

When a test starts it validates the options (the run directory before preflight),
runs preflight, gives every load process its slot and has it sign in and warm up,
times a round trip to each, and only then picks the start time far enough ahead
for the slowest, so setup never counts as lateness. It streams every batch of
samples to disk as it arrives, tells the shape when the run is over (every process
drained, plus one Locust report interval so its own statistics are complete too),
and writes run.json with how the run ended, how the start went, which processes
were lost with the arrivals they never returned, and what was offered. Shapes
decide the plan; this module decides nothing about timing beyond when to start.
"""

from __future__ import annotations

import csv
import logging
import math
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import gevent
import gevent.event
import msgspec
from locust.runners import STATE_MISSING, WORKER_REPORT_INTERVAL, MasterRunner
from msgspec import UNSET

from engine.agent_plan import calls_key
from engine.clock import RunClock
from engine.followups import NOT_VERIFIABLE, FollowUp, write_followups
from engine.mix import Mix
from engine.run_record import (
    NOT_ENDED,
    NOT_SUMMARISED,
    USERS,
    VERSION,
    LogCount,
    LostProcess,
    PhaseRecord,
    PlatformLogStretch,
    PlatformRecord,
    ProbesSummary,
    RunRecord,
    StartRecord,
)
from engine.samples import INTERRUPTED, OPERATOR_STOP, SAMPLES_FILE
from engine.schedule import Plan
from engine.seam import PreflightError
from engine.shortfall import longer_phase_fixes, run_time_fixes, scale_fixes, shortfalls
from engine.trust import INSECURE_WARNING, TrustError, refuse_untrusted, use
from inputs.bad_input import SettingsError
from inputs.fixture import password_from_env
from inputs.scenario import Scenario
from probes import ProbeRun, Reading, start_probes
from reports.platform_log import read_stretch
from runner.live_metrics import RunMetrics
from runner.load_process import LoadProcess
from runner.messages import (
    PING,
    PLAN,
    PREPARE,
    STOP,
    Drained,
    Ping,
    PlanUpdate,
    Prepare,
    Ready,
    to_wire,
)
from runner.progress import Progress, ProgressLine
from runner.run_end import NO_VERDICT, finish
from runner.run_files import RunFiles, machine
from runner.settings import (
    BAD_INPUT,
    RUNS_DIR,
    RunSettings,
    bound_connections,
    check_new_run_dir,
    offering,
    run_stamp,
    settings_from,
    with_host,
)
from runner.stub_calls import fetch_stub_calls
from shapes.kit_shape import mode_of, users_of
from workloads.platforms import platform

log = logging.getLogger(__name__)

# Shape answer while a run lasts: no Locust users (the dispatchers are not users).
KEEP_RUNNING = (0, 1)
# From choosing the start time to t = 0, at least: every process has the plan and has woken
# for t = 0 before its first due time, on a busy machine. Measured round trips add to it.
START_LEAD_S = 1.0
# Round trips the plan's way may take (one to arrive, spare ones for a loaded link or loop).
START_ROUND_TRIPS = 4
# No start is picked further ahead than this, whatever the round trips said.
MAX_START_LEAD_S = 10.0
# Pings per process before a start is picked; the worst round trip counts.
PINGS = 3
# A ping unanswered this long counts as a round trip of this long.
PING_TIMEOUT_S = 2.0
# Connections each process opens before the start: its share of the first this-many seconds.
WARM_WINDOW_S = 1.0
# At most this many connections are opened ahead per process, whatever the rate.
WARM_MAX = 256
# A rate change takes effect this far ahead, so every process switches at the same index.
CHANGE_LEAD_S = 1.0
# Sign-in on every process, on a busy machine.
READY_TIMEOUT_S = 30.0
# An interrupted run waits this long for each process's last samples.
STOP_WAIT_S = 10.0
# After the drain deadline, how long a silent process is waited for before it is called lost.
DRAIN_GRACE_S = 10.0
# Locust's last worker statistics arrive within one report interval after the last samples.
REPORT_WAIT_S = WORKER_REPORT_INTERVAL + 0.5
# How often a local run moves its samples from the dispatcher to disk. Formatting a row
# costs ~2.4 us and blocks the dispatch loop sharing the process: a second's worth at
# 5000/s stalled it 12 ms (late arrivals); a quarter second's stays near 3 ms.
LOCAL_FLUSH_S = 0.25
# Locust averages its current RPS over whole seconds from 12 to 2 before its last request
# (locust.stats current_rps): the offered rate shown beside it is taken over the same.
LOCUST_RPS_WINDOW_S = (12.0, 2.0)
# What the progress line says once the plan has ended and in-flight work is awaited.
DRAINING = "draining"
# Exit code for a run refused before any load (bad input, preflight, sign-in).
REFUSED_EXIT = 2


@dataclass
class _ActiveRun:
    run_id: str
    settings: RunSettings
    scenario: Scenario
    plan: Plan
    files: RunFiles
    slots: dict[str, int]
    distributed: bool
    skipped: dict[str, str]
    # The platform spoken to, as run.json records it: its name and each workload's request.
    platform: PlatformRecord | None = None
    clock: RunClock | None = None
    started_at: str = ""
    probes: ProbeRun | None = None
    drained: dict[int, Drained] = field(default_factory=dict)
    last_drained: float = 0.0
    progress: ProgressLine | None = None
    # Recorded samples sent late (or never sent), for the progress line.
    late: int = 0
    end_s: float | None = None
    stopped: str | None = None
    discarded: int = 0
    flusher: gevent.Greenlet | None = None
    all_drained: gevent.event.Event = field(default_factory=gevent.event.Event)
    accepted: list = field(default_factory=list)
    # The start's lead and round trips, and each process's own start as it drained.
    lead: StartRecord | None = None
    process_starts: dict[str, dict[str, float]] = field(default_factory=dict)
    lost: list[LostProcess] = field(default_factory=list)
    # When the follow-up of accepted work ended: followups.csv's states are as of then.
    followed_until: str | None = None
    # Bytes in the platform's log when the test started (preflight included), if one is named.
    platform_log_from: int = 0

    @property
    def workers(self) -> int:
        """Load processes in this run."""
        return len(self.slots)


class Conductor:
    """Runs each test on the master (or in a local run) and says when it is over."""

    def __init__(self, environment, local: LoadProcess | None, metrics: RunMetrics | None = None):
        self.environment = environment
        self.exit_code: int | None = None
        # What a headless run prints last, once Locust has said everything it says on exit.
        self.closing_text = ""
        self._local = local
        self._metrics = metrics
        self._run: _ActiveRun | None = None
        self._preparing: str | None = None
        self._ready: dict[int, Ready] = {}
        self._expected = 0
        self._all_ready = gevent.event.Event()
        self._refused = False
        self._used_run_dirs: set[Path] = set()
        self._pongs: dict[int, float] = {}
        self._ping: tuple[str, int] = ("", -1)
        self._all_ponged = gevent.event.Event()
        self._starting = False
        self._early_change = None
        self._signal: str | None = None
        self._stop_pressed = False

    # -- starting ---------------------------------------------------------------------------

    def begin(self) -> None:
        """test_start: everything before load; on a refusal the shape ends the test."""
        self._refused = False
        self.exit_code = None
        self._stop_pressed = False
        self._starting, self._early_change = True, None
        try:
            self._begin()
        except (*BAD_INPUT, PreflightError, TrustError) as exc:
            self.refuse(str(exc))
        except OSError as exc:
            self.refuse(f"--run-dir: cannot write the run directory ({exc}); pass another path")
        except Exception as exc:
            # Never a test with no run and no end: the shape would keep it running forever.
            log.exception("the run could not start")
            self.refuse(f"the run could not start ({type(exc).__name__}: {exc})")
        finally:
            self._starting = False

    def has_run(self) -> bool:
        """Whether a run exists (load was started, or is about to be)."""
        return self._run is not None

    def stop_pressed(self) -> None:
        """The operator pressed the web UI's Stop: the run ends as their choice, not a failure."""
        self._stop_pressed = True

    def signalled(self, name: str) -> None:
        """A stop signal (``name``) ends this process: the run ends interrupted and recorded,
        and its report is left to ``loadkit report`` so the process is gone in moments."""
        self._signal = name

    def refuse(self, problems: str) -> None:
        """Refuse the test with one line per problem (stderr, or the web UI's log); the next
        tick ends it."""
        for line in problems.splitlines():
            if self.environment.web_ui is not None:
                log.error("refused: %s", line)
            else:
                sys.stderr.write(f"agent-loadkit: {line}\n")
        sys.stderr.flush()
        self._refused = True
        self.exit_code = REFUSED_EXIT

    def _begin(self) -> None:
        environment = self.environment
        used = frozenset(self._used_run_dirs)
        settings = settings_from(environment.parsed_options, environment.host, used)
        log_from = _size(settings.platform_log)
        shape = environment.shape_class
        if not hasattr(shape, "initial_plan"):
            raise SettingsError(
                "shape: none of this kit's shapes is active; pick FourPhaseShape or "
                "ConstantRateShape (or leave the class picker off)"
            )
        plan = shape.initial_plan(settings)
        run_dir = self._run_dir(settings)
        # Every connection the run makes trusts the same certificates, checked before any.
        use(settings.trust)
        if settings.trust.insecure:
            log.warning(INSECURE_WARNING)
        probed = (settings.probes.metrics_url, settings.probes.stub_url)
        refuse_untrusted(settings.trust, settings.host, *probed)
        fixture = with_host(settings.fixture, settings.host)
        password = password_from_env()
        # Only what the scenario offers is checked: a workload with share 0 is never preflighted.
        offered = frozenset(settings.scenario.offered)
        spoken = platform(fixture.platform)
        preflight = spoken.run_preflight(fixture, settings.email, password, offered)
        scenario, skipped = settings.scenario, dict(preflight.skipped)
        for name, reason in skipped.items():
            scenario = _without(scenario, name)
            log.warning("%s skipped: %s", name, reason)
        shape.after_preflight(scenario)
        settings = offering(settings, scenario)
        for line in _too_few(settings, plan, shape, skipped):
            log.warning(line)
        slots = self._slots()
        if settings.connections < len(slots):
            raise SettingsError(
                f"--connections: {settings.connections} is fewer than the {len(slots)} load "
                f"processes; give at least {len(slots)}"
            )
        settings = bound_connections(settings, len(slots))
        if settings.connections_note:
            log.warning(settings.connections_note)
        self._ready, self._preparing, self._expected = {}, run_dir.name, len(slots)
        self._all_ready.clear()
        prepare = Prepare(
            run_id=run_dir.name,
            slots=slots,
            connections=_split(settings.connections, len(slots)),
            scenario=scenario.to_dict(),
            fixture=vars(fixture),
            host=settings.host,
            email=settings.email,
            mode=mode_of(shape),
            warm=_warm_counts(plan, _split(settings.connections, len(slots))),
            accept_encoding=settings.accept_encoding,
            tls=settings.trust.to_wire(),
        )
        environment.runner.send_message(PREPARE, to_wire(prepare))
        self._all_ready.wait(READY_TIMEOUT_S)
        self._preparing = None
        errors = [r.error for r in self._ready.values() if r.error]
        if errors or len(self._ready) < len(slots):
            raise SettingsError(
                errors[0]
                if errors
                else f"{len(slots) - len(self._ready)} load process(es) did "
                f"not sign in within {READY_TIMEOUT_S:.0f} s; check they can reach {settings.host}"
            )
        run = _ActiveRun(
            run_id=run_dir.name,
            settings=settings,
            scenario=scenario,
            plan=plan,
            files=RunFiles(run_dir, run_dir.name),
            slots=slots,
            distributed=isinstance(environment.runner, MasterRunner),
            skipped=skipped,
            platform=PlatformRecord(spoken.name, dict(spoken.requests)),
            platform_log_from=log_from,
        )
        if settings.run_dir is not None:
            self._used_run_dirs.add(settings.run_dir)
        run.lead = self._pick_lead(run_dir.name, len(slots))
        start_epoch = time.time() + run.lead.lead_s
        run.clock = RunClock(start_epoch)
        run.started_at = _iso(start_epoch)
        run.probes = start_probes(settings.probes, run.files.dir / "probes.csv", start_epoch)
        run.progress = ProgressLine(
            live=bool(environment.parsed_options.headless) and sys.stderr.isatty()
        )
        if self._metrics is not None:
            self._metrics.begin(run.run_id, scenario, _phase_names(plan))
        self._run = run
        self._apply_early_change(run)
        self._write_record(run)
        self._send_plan(run)
        if self._local is not None:
            run.flusher = gevent.spawn(self._flush_local, run)
        log.info(
            "run %s: %s load process(es), %d connections, samples in %s",
            run.run_id,
            run.workers,
            settings.connections,
            run.files.dir,
        )

    def _pick_lead(self, run_id: str, workers: int) -> StartRecord:
        """How far ahead to start: START_LEAD_S plus START_ROUND_TRIPS of the worst round trip
        measured to any process (PINGS pings each), so the plan reaches every one in time."""
        worst: dict[int, float] = dict.fromkeys(range(workers), 0.0)
        for seq in range(PINGS):
            self._pongs, self._ping = {}, (run_id, seq)
            self._all_ponged.clear()
            sent = time.monotonic()
            self.environment.runner.send_message(PING, to_wire(Ping(run_id, seq)))
            self._all_ponged.wait(PING_TIMEOUT_S)
            for slot in worst:
                worst[slot] = max(worst[slot], self._pongs.get(slot, sent + PING_TIMEOUT_S) - sent)
        self._ping = ("", -1)
        lead = min(MAX_START_LEAD_S, START_LEAD_S + START_ROUND_TRIPS * max(worst.values()))
        return StartRecord(
            round(lead, 3), {str(slot): round(rtt * 1000, 1) for slot, rtt in worst.items()}
        )

    def on_pong(self, data: dict) -> None:
        """A process answered the current ping; the last one releases ``_pick_lead``."""
        if (data["run_id"], data["seq"]) == self._ping:
            self._pongs.setdefault(data["slot"], time.monotonic())
            if len(self._pongs) == self._expected:
                self._all_ponged.set()

    def _apply_early_change(self, run: _ActiveRun) -> None:
        """A change made before the run existed (the operator was quicker than the warm-up)
        takes effect from t = 0."""
        if self._early_change is not None:
            run.plan = self._early_change(run.plan, 0.0)
            self._early_change = None

    def _slots(self) -> dict[str, int]:
        runner = self.environment.runner
        if isinstance(runner, MasterRunner):
            clients = runner.clients.ready + runner.clients.spawning + runner.clients.running
            ordered = sorted(clients, key=lambda c: runner.get_worker_index(c.id))
            return {c.id: slot for slot, c in enumerate(ordered)}
        return {runner.client_id: 0}

    def _run_dir(self, settings: RunSettings) -> Path:
        """--run-dir for the first test, else runs/<UTC timestamp>; later tests get a suffix."""
        if settings.run_dir is not None and settings.run_dir not in self._used_run_dirs:
            return check_new_run_dir(settings.run_dir)
        base = settings.run_dir or RUNS_DIR / run_stamp()
        chosen, n = base, 1
        while chosen.exists():
            n += 1
            chosen = base.with_name(f"{base.name}-{n}")
        return chosen

    def _send_plan(self, run: _ActiveRun) -> None:
        update = PlanUpdate(run.run_id, run.clock.start_epoch, run.plan.to_wire())
        self.environment.runner.send_message(PLAN, to_wire(update))

    # -- while it runs ----------------------------------------------------------------------

    def on_ready(self, data: dict) -> None:
        """A process signed in (or could not); the last one releases ``_begin``."""
        if data["run_id"] == self._preparing:
            self._ready[data["slot"]] = Ready(**data)
            if len(self._ready) == self._expected:
                self._all_ready.set()

    def on_batch(self, data: dict) -> None:
        """Append a batch of samples to disk, and the generator's readings to probes.csv."""
        run = self._run
        if run is None or data["run_id"] != run.run_id:
            late = len(data["samples"])
            log.warning("discarded %d samples that arrived after their run ended", late)
            return
        phases = _phase_names(run.plan)
        run.files.append_samples(data["slot"], data["samples"], phases)
        run.late += _late(data["samples"], run.scenario.lateness.late_after_ms)
        if self._metrics is not None:
            self._metrics.take(
                run.run_id, data["slot"], data["samples"], phases, data.get("offered", ())
            )
        run.accepted += data.get("accepted", ())
        if data["readings"] and run.probes is not None:
            run.probes.record(Reading(*r) for r in data["readings"])

    def on_drained(self, drained: Drained) -> None:
        """A process's last batch: write it and mark the process done."""
        run = self._run
        if run is None or drained.batch.run_id != run.run_id:
            return
        self.on_batch(vars(drained.batch))
        run.drained[drained.batch.slot] = drained
        run.process_starts[str(drained.batch.slot)] = drained.start
        run.last_drained = time.monotonic()
        if len(run.drained) == run.workers:
            run.all_drained.set()

    def _flush_local(self, run: _ActiveRun) -> None:
        while True:
            gevent.sleep(LOCAL_FLUSH_S)
            batch = self._local.take_batch()
            if batch is not None:
                self.on_batch(batch)

    def progress(self) -> tuple[Path, int] | None:
        """The current run's directory and how many arrivals were due by now (None before
        a run starts): what the web UI's verdict tab sets beside the samples recorded.

        Users mode has no schedule: a request exists for the master once it is recorded,
        so recorded is what it can say was offered (run.json has the workers' own count).
        """
        run = self._run
        if run is None or run.clock is None:
            return None
        if mode_of(self.environment.shape_class) == USERS:
            return run.files.dir, run.files.recorded
        return run.files.dir, run.plan.due_before(run.clock.now())

    def offered_rate(self) -> float | None:
        """Arrivals offered per second over the seconds Locust's RPS is averaged over (None
        before a run, after it, and in users mode, whose users Locust counts itself): what
        Locust's Users chart shows in open arrival, beside its RPS, the completed rate."""
        run = self._run
        if run is None or run.clock is None or run.stopped is not None:
            return None
        if mode_of(self.environment.shape_class) == USERS:
            return None
        end = run.clock.now() - LOCUST_RPS_WINDOW_S[1]
        start = max(run.clock.now() - LOCUST_RPS_WINDOW_S[0], 0.0)
        if end <= start:
            return 0.0
        return (run.plan.due_before(end) - run.plan.due_before(start)) / (end - start)

    def now(self) -> float | None:
        """Seconds since the current run started (None before one starts): a shape's clock."""
        run = self._run
        return None if run is None or run.clock is None else run.clock.now()

    def change_plan(self, plan_for) -> None:
        """Apply a plan change the shape computes from (current plan, when it takes effect)."""
        run = self._run
        if run is None and self._starting:
            # Set while the processes warm up: it holds from t = 0 (applied when the run exists).
            self._early_change = plan_for
            return
        if run is None or run.stopped is not None:
            return
        at_s = run.clock.now() + CHANGE_LEAD_S
        if run.plan.end_s is not None and at_s >= run.plan.end_s:
            return
        run.plan = plan_for(run.plan, at_s)
        self._send_plan(run)
        self._write_record(run)

    def tick(self) -> tuple[int, float] | None:
        """The shape's answer: keep the test running, or None when it is over."""
        if self._refused:
            return None
        run = self._run
        if run is None:
            return KEEP_RUNNING
        now = run.clock.now()
        if run.plan.end_s is None or now < run.plan.end_s:
            self._announce(run, now)
            return KEEP_RUNNING
        deadline = run.plan.end_s + run.scenario.timeouts.slowest_s + DRAIN_GRACE_S
        if set(range(run.workers)) - set(run.drained) - self._lost(run) and now < deadline:
            self._announce(run, now, DRAINING)
            return KEEP_RUNNING
        run.progress.done()
        if run.distributed and time.monotonic() - run.last_drained < REPORT_WAIT_S:
            return KEEP_RUNNING
        if run.stopped is None:
            run.end_s = now
            lost = sorted(set(range(run.workers)) - set(run.drained))
            run.stopped = "completed" if not lost else f"incomplete: {_lost_line(run, lost)}"
        return None

    def _announce(self, run: _ActiveRun, now: float, phase: str | None = None) -> None:
        """The progress line: the phase (or ``phase``, e.g. draining), offered so far (due by
        now) against recorded, in flight and late, so an operator watching a headless run
        sees it fall behind; in users mode what was recorded, since a closed loop has
        nothing due."""
        current = next((s for s in reversed(run.plan.segments) if s.start_s <= now), None)
        if current is None:
            return
        closed = mode_of(self.environment.shape_class) == USERS
        run.progress.show(
            Progress(
                phase=phase or current.name,
                rate=None if closed or phase else current.rate,
                now_s=now,
                end_s=run.plan.end_s,
                offered=None if closed else run.plan.due_before(now),
                recorded=run.files.recorded,
                late=run.late,
            )
        )

    def _lost(self, run: _ActiveRun) -> set[int]:
        """Slots whose worker Locust has declared missing or removed: not worth waiting for."""
        runner = self.environment.runner
        if not isinstance(runner, MasterRunner):
            return set()
        return {
            slot
            for client, slot in run.slots.items()
            if client not in runner.clients or runner.clients[client].state == STATE_MISSING
        }

    # -- ending -----------------------------------------------------------------------------

    def interrupt(self) -> None:
        """test_stopping before the plan ended: stop every process now and collect what it has.
        After the web UI's Stop it is the operator's choice (run.json says so)."""
        run = self._run
        if run is None or run.stopped is not None:
            return
        run.end_s = run.clock.now()
        run.stopped = OPERATOR_STOP if self._stop_pressed else INTERRUPTED
        run.progress.done()
        self.environment.runner.send_message(STOP, {"run_id": run.run_id})
        run.all_drained.wait(STOP_WAIT_S)

    def close(self) -> None:
        """test_stop: write how the run ended, Locust's tables beside ours, then the report."""
        self._refused = False
        run = self._run
        if run is None:
            return
        self.interrupt()
        self._run = None
        if run.flusher is not None:
            run.flusher.kill(block=True)
        probes = run.probes.stop() if run.probes is not None else NOT_SUMMARISED
        self._follow_up(run)
        fetch_stub_calls(
            run.settings.probes.stub_url,
            calls_key(run.run_id, run.clock.start_epoch),
            run.files.dir,
        )
        run.files.write_locust_tables(self.environment)
        run.files.close()
        run.lost = _lost_processes(run)
        record = self._write_record(run, probes)
        if self._metrics is not None:
            self._metrics.end(run.run_id, record.phases)
        shortfall = record.offered - run.files.recorded
        log.info(
            "run %s %s: offered %d, recorded %d%s",
            run.run_id,
            run.stopped,
            record.offered,
            run.files.recorded,
            f" -- {shortfall} missing, the run is unusable" if shortfall else "",
        )
        if run.stopped == INTERRUPTED:
            # The process is being ended (a signal, a quit): it must be gone in moments, and a
            # report can take longer than a CI timeout's grace on a busy machine.
            sys.stderr.write(
                f"agent-loadkit: {self._signal or 'quit'}: run {run.run_id} interrupted and "
                f"recorded (run.json); no report built, `loadkit report {run.files.dir}` "
                "builds it\n"
            )
            self.exit_code = NO_VERDICT
            return
        self.exit_code, text = finish(run.files.dir)
        if self.environment.parsed_options.headless:
            self.closing_text = text
        elif text:
            print(text, flush=True)

    def _follow_up(self, run: _ActiveRun) -> None:
        """After the drain, ask the platform what became of the work it accepted (202), within
        the follow-up grace (the slowest timeout unless --follow-up-grace says otherwise), and
        write followups.csv beside the samples, noting when (the states are as of then). An
        interrupted run is not followed, and its accepted work is written "not verifiable" (a
        platform may accept with a 200, which the report alone could not tell from a pass)."""
        if not run.accepted:
            return
        accepted = [(int(k), str(w), str(ref)) for k, w, ref in run.accepted]
        if run.stopped != "completed":
            why = "not followed: the run did not complete"
            unfollowed = [FollowUp(k, w, ref, NOT_VERIFIABLE, why) for k, w, ref in accepted]
            write_followups(run.files.dir, unfollowed)
            return
        fixture = with_host(run.settings.fixture, run.settings.host)
        follow = platform(fixture.platform).follow_up
        grace_s = run.settings.follow_up_grace_s
        log.info("following %d accepted arrivals for up to %g s", len(accepted), grace_s)
        try:
            if follow is None:
                raise NotImplementedError(f"{fixture.platform} shows no follow-up")
            followups = follow(
                fixture,
                run.settings.email,
                password_from_env(),
                run_id=run.run_id,
                start_epoch=run.clock.start_epoch,
                accepted=accepted,
                grace_s=grace_s,
            )
        except Exception as exc:
            # The report must still be written; what could not be followed says so.
            log.error("follow-up failed: %s: %s", type(exc).__name__, exc)
            why = f"follow-up failed: {type(exc).__name__}"
            followups = [FollowUp(k, w, ref, NOT_VERIFIABLE, why) for k, w, ref in accepted]
        write_followups(run.files.dir, followups)
        run.followed_until = _iso_ms(time.time())
        states = Counter(f.state for f in followups)
        log.info("follow-up: %s", ", ".join(f"{n} {s}" for s, n in sorted(states.items())))

    def _write_record(self, run: _ActiveRun, probes: ProbesSummary = NOT_SUMMARISED) -> RunRecord:
        """run.json as of now: planned counts until the run ends, then what was offered."""
        ended = run.stopped is not None
        if ended:
            end_s = run.end_s
        elif run.plan.closed:
            end_s = run.plan.end_s
        else:
            end_s = max(run.clock.now(), 0.0) + CHANGE_LEAD_S
        plan = run.plan if run.plan.closed else run.plan.as_run(end_s)
        offered = self._offered(run, plan) if ended else _planned(run.scenario, plan)
        phases = []
        for number, segment in enumerate(plan.segments):
            counts = {name: offered.get((number, name), 0) for name in run.scenario.mix}
            phases.append(
                PhaseRecord(
                    name=segment.name,
                    rate=segment.rate,
                    start_s=segment.start_s,
                    end_s=segment.end_s,
                    reason=segment.reason,
                    arrivals=segment.arrivals_record(),
                    offered=counts,
                    offered_total=sum(counts.values()),
                )
            )
        settings = run.settings
        shape = self.environment.shape_class
        record = RunRecord(
            version=VERSION,
            run_id=run.run_id,
            started_at=run.started_at,
            start_epoch=run.clock.start_epoch,
            ended_at=_iso(run.clock.start_epoch + end_s) if ended else None,
            duration_s=round(end_s, 3),
            scenario=plan.scenario_as_run(run.scenario).to_dict(),
            scale=settings.scale,
            phases=phases,
            offered=sum(p.offered_total for p in phases),
            workers=run.workers,
            start=(
                None
                if run.lead is None
                else msgspec.structs.replace(run.lead, processes=run.process_starts)
            ),
            lost=run.lost,
            connections=settings.connections,
            connections_needed=settings.connections_needed,
            connections_note=settings.connections_note,
            host=settings.host,
            accept_encoding=settings.accept_encoding,
            tls_trust=settings.trust.words(),
            tls_verified=not settings.trust.insecure,
            topology=settings.topology,
            machine=machine(),
            probes=probes,
            follow_up_grace_s=settings.follow_up_grace_s,
            follow_up_ended_at=run.followed_until,
            skipped=run.skipped,
            platform=run.platform,
            stopped=run.stopped or NOT_ENDED,
            mode=mode_of(shape),
            users=users_of(shape),
            platform_log=(
                UNSET if settings.platform_log is None else _log_stretch(settings.platform_log, run)
            ),
        )
        run.files.write_run_json(record)
        return record

    def _offered(self, run: _ActiveRun, plan: Plan) -> Counter:
        """Per (segment, workload): what each process says it offered; the plan's share for a
        process that never said (lost), up to when the run ended."""
        offered: Counter = Counter()
        for drained in run.drained.values():
            for segment, name, count in drained.batch.offered:
                offered[segment, name] += count
        silent = set(range(run.workers)) - set(run.drained)
        if silent:
            mix = Mix.from_scenario(run.scenario)
            for segment, k in plan.indexes_before(run.end_s):
                if k % run.workers in silent:
                    offered[segment, mix.pick_in(plan.segments[segment], k)] += 1
        return offered


def _phase_names(plan: Plan) -> list[str]:
    """Each segment's name by its number: the phase a sample of that segment is written with."""
    return [s.name for s in plan.segments]


def _too_few(settings: RunSettings, plan: Plan, shape, skipped: dict[str, str]) -> list[str]:
    """Before load: one line per check the plan offers too few arrivals to judge, with what
    reaches it (--scale for the scenario's phases, --run-time for one rate). None in users
    mode: a closed loop has no plan to count (the users shape says which workloads get no
    user)."""
    if mode_of(shape) == USERS:
        return []
    scenario = settings.scenario
    found = shortfalls(scenario, plan)
    if not found:
        return []
    if settings.rate is not None:
        return run_time_fixes(scenario, found, settings.rate)
    if settings.unscaled is not None and [s.name for s in plan.segments] == [
        p.name for p in scenario.phases
    ]:
        base = settings.unscaled
        for name in skipped:
            base = _without(base, name)
        return scale_fixes(base, found, settings.scale)
    return longer_phase_fixes(found, plan)


def _late(rows: list, late_after_ms: float) -> int:
    """Samples (engine.samples.Sample tuples) sent more than ``late_after_ms`` after due, or
    never sent: the report's rule, counted as batches arrive."""
    late = 0
    for row in rows:
        due, sent = row[3], row[4]
        late += sent is None or (sent - due) * 1000.0 > late_after_ms
    return late


def _warm_counts(plan: Plan, shares: list[int]) -> list[int]:
    """Connections each process opens ahead: its share of the first WARM_WINDOW_S of arrivals,
    within its connection share and WARM_MAX."""
    first = plan.due_before(WARM_WINDOW_S)
    each = math.ceil(first / len(shares))
    return [min(each, share, WARM_MAX) for share in shares]


def _lost_line(run: _ActiveRun, slots: list[int]) -> str:
    """'load process 1 (worker id) lost': which processes never sent their last samples."""
    names = {slot: client for client, slot in run.slots.items()}
    return ", ".join(f"load process {slot} ({names.get(slot, '?')}) lost" for slot in slots)


def _lost_processes(run: _ActiveRun) -> list[dict]:
    """Each process that never drained, named, with the global arrival indexes it was due to
    offer before the run ended and that samples.csv does not hold, as [first, last] ranges of
    its own indexes (slot, slot + W, ...)."""
    silent = sorted(set(range(run.workers)) - set(run.drained))
    if not silent or run.end_s is None:
        return []
    returned: dict[int, set[int]] = {slot: set() for slot in silent}
    with (run.files.dir / SAMPLES_FILE).open(newline="") as f:
        for row in csv.DictReader(f):
            slot = int(row["worker"])
            if slot in returned:
                returned[slot].add(int(row["index"]))
    names = {slot: client for client, slot in run.slots.items()}
    lost = []
    for slot in silent:
        due = [k for _, k in run.plan.indexes_before(run.end_s) if k % run.workers == slot]
        missing = [k for k in due if k not in returned[slot]]
        lost.append(
            LostProcess(
                slot,
                names.get(slot, ""),
                len(returned[slot]),
                len(missing),
                _ranges(missing, run.workers),
            )
        )
    return lost


def _ranges(indexes: list[int], step: int) -> list[list[int]]:
    """Sorted indexes of one process as [first, last] runs where each follows the last by
    ``step``."""
    runs: list[list[int]] = []
    for k in sorted(indexes):
        if runs and k == runs[-1][1] + step:
            runs[-1][1] = k
        else:
            runs.append([k, k])
    return runs


def _planned(scenario: Scenario, plan: Plan) -> Counter:
    """What a closed plan offers in full, per (segment, workload)."""
    mix = Mix.from_scenario(scenario)
    return Counter(
        (segment, mix.pick_in(plan.segments[segment], k)) for segment, k in plan.indexes_before()
    )


def _without(scenario: Scenario, workload: str) -> Scenario:
    """The scenario with one workload's share set to 0 (the others renormalise)."""
    workloads = tuple(
        replace(w, share=0.0) if w.name == workload else w for w in scenario.workloads
    )
    return replace(scenario, workloads=workloads)


def _split(total: int, parts: int) -> list[int]:
    """``total`` connections over ``parts`` processes, differing by at most one."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _size(log: Path | None) -> int:
    """Bytes in the log now (0 when there is none, or it cannot be read)."""
    try:
        return log.stat().st_size if log is not None else 0
    except OSError:
        return 0


def _log_stretch(log: Path, run: _ActiveRun) -> PlatformLogStretch:
    """run.json's ``platform_log``: the log relative to the run directory (so the report finds
    it wherever the two are mounted together), the bytes written since the test started,
    and their ERROR and CRITICAL lines counted now, while the log is at hand."""
    path = os.path.relpath(log.resolve(), run.files.dir.resolve())
    end = max(_size(log), run.platform_log_from)
    counted = read_stretch(log, run.platform_log_from, end, path)
    stretch = PlatformLogStretch(path, run.platform_log_from, end)
    if counted.missing is not None:
        return stretch
    count = LogCount(
        counted.bytes_read,
        dict(counted.by_level),
        counted.most_frequent,
        counted.most_frequent_count,
        None,
    )
    return msgspec.structs.replace(stretch, counted=count)


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _iso_ms(epoch: float) -> str:
    """To the millisecond: the follow-up's end is compared with the platform's own times,
    and a delivery finished at .109 read as unfinished against a whole second."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"
