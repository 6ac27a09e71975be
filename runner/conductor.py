"""The master's side of a run: check, prepare, start on one clock, collect, end, record.

When a test starts it checks the options, runs preflight, meets the load processes
(runner/rendezvous.py) and only then starts the run (runner/active_run.py) far enough ahead
for the slowest; it tells the shape when the run is over, and at the end follows up accepted
work, writes run.json (runner/recording.py) and the report. Shapes decide the plan; this
module decides nothing about timing beyond when to start.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

import gevent
import gevent.event
from locust.runners import STATE_MISSING, WORKER_REPORT_INTERVAL, MasterRunner

from engine.samples import INTERRUPTED, OPERATOR_STOP
from engine.schedule import Plan
from engine.seam import PreflightError
from engine.trust import TrustError
from runner.active_run import CHANGE_LEAD_S, DRAINING, ActiveRun
from runner.before_load import prepare_message, settle
from runner.ending import wrap_up
from runner.live_metrics import RunMetrics
from runner.load_process import LoadProcess
from runner.messages import Batch, Drained, PlanUpdate, Pong, Ready, Stop, send
from runner.recording import write_record
from runner.rendezvous import Rendezvous
from runner.run_end import NO_VERDICT, finish, summary_of
from runner.settings import BAD_INPUT

log = logging.getLogger(__name__)

# Shape answer while a run lasts: no Locust users (the dispatchers are not users).
KEEP_RUNNING = (0, 1)
# An interrupted run waits this long for each process's last samples.
STOP_WAIT_S = 10.0
# After the drain deadline, how long a silent process is waited for before it is called lost.
DRAIN_GRACE_S = 10.0
# Locust's last worker statistics arrive within one report interval after the last samples.
REPORT_WAIT_S = WORKER_REPORT_INTERVAL + 0.5
# How often a local run moves its samples from the dispatcher to disk: often enough that
# formatting them never stalls the dispatch loop sharing the process (docs/internals.md).
LOCAL_FLUSH_S = 0.25
# Exit code for a run refused before any load (bad input, preflight, sign-in).
REFUSED_EXIT = 2
# A plan change a shape computes from (the current plan, when the change takes effect).
PlanChange = Callable[[Plan, float], Plan]


class Conductor:
    """Runs each test on the master (or in a local run) and says when it is over."""

    def __init__(self, environment, local: LoadProcess | None, metrics: RunMetrics | None = None):
        self.environment = environment
        self.exit_code: int | None = None
        # What a headless run prints last, once Locust has said everything it says on exit.
        self.closing_text = ""
        self.rendezvous = Rendezvous(environment)
        self._local = local
        self._metrics = metrics
        self._run: ActiveRun | None = None
        self._refused = False
        self._used_run_dirs: set[Path] = set()
        self._starting = False
        self._early_change: PlanChange | None = None
        self._signal: str | None = None
        self._stop_pressed = False
        # Set while a run is being wrapped up: a second close (a second SIGTERM's shutdown, which
        # exits the process once it returns) waits for the first to have recorded the run.
        self._closed = gevent.event.Event()
        self._closed.set()

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
        """Settle the options, the plan and preflight, meet the processes, then start."""
        settled = settle(self.environment, self.rendezvous.slots(), self._used_run_dirs)
        self.rendezvous.prepare(prepare_message(settled), settled.settings.host)
        if settled.settings.run_dir is not None:
            self._used_run_dirs.add(settled.settings.run_dir)
        lead = self.rendezvous.pick_lead(settled.run_id, len(settled.slots))
        self._run = run = ActiveRun.started(self.environment, settled, lead, self._metrics)
        if self._early_change is not None:
            # A change made before the run existed (the operator was quicker than the warm-up)
            # takes effect from t = 0.
            run.plan, self._early_change = self._early_change(run.plan, 0.0), None
        write_record(run, self.environment.shape_class)
        self._send_plan(run)
        if self._local is not None:
            run.flusher = gevent.spawn(self._flush_local, self._local)
        log.info(
            "run %s: %s load process(es), %d connections, samples in %s",
            run.run_id,
            run.workers,
            run.settings.connections,
            run.files.dir,
        )

    def _send_plan(self, run: ActiveRun) -> None:
        send(
            self.environment.runner.send_message,
            PlanUpdate(run.run_id, run.clock.start_epoch, run.plan),
        )

    # -- while it runs ----------------------------------------------------------------------

    def on_ready(self, ready: Ready) -> None:
        """A process signed in (or could not)."""
        self.rendezvous.on_ready(ready)

    def on_pong(self, pong: Pong) -> None:
        """A process answered a ping."""
        self.rendezvous.on_pong(pong)

    def on_batch(self, batch: Batch) -> None:
        """A batch of samples: the run's, or discarded (said) when its run has ended."""
        run = self._run
        if run is None or batch.run_id != run.run_id:
            late = len(batch.samples)
            log.warning("discarded %d samples that arrived after their run ended", late)
            return
        run.take(batch)

    def on_drained(self, drained: Drained) -> None:
        """A process's last batch: written, and the process marked done."""
        run = self._run
        if run is not None and drained.batch.run_id == run.run_id:
            run.take_drained(drained)

    def _flush_local(self, local: LoadProcess) -> None:
        while True:
            gevent.sleep(LOCAL_FLUSH_S)
            batch = local.take_batch()
            if batch is not None:
                self.on_batch(batch)

    def progress(self) -> tuple[Path, int] | None:
        """The current run's directory and how many arrivals were due by now (None before
        a run starts): what the web UI's verdict tab sets beside the samples recorded."""
        return None if self._run is None else self._run.progress_so_far()

    def offered_rate(self) -> float | None:
        """Arrivals offered per second over Locust's RPS window (None before a run, after it,
        and in users mode): what Locust's Users chart shows in open arrival, beside its RPS."""
        return None if self._run is None else self._run.offered_rate()

    def now(self) -> float | None:
        """Seconds since the current run started (None before one starts): a shape's clock."""
        return None if self._run is None else self._run.clock.now()

    def change_plan(self, plan_for: PlanChange) -> None:
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
        write_record(run, self.environment.shape_class)

    def tick(self) -> tuple[int, float] | None:
        """The shape's answer: keep the test running, or None when it is over."""
        if self._refused:
            return None
        run = self._run
        if run is None:
            return KEEP_RUNNING
        now = run.clock.now()
        if run.plan.end_s is None or now < run.plan.end_s:
            run.announce(now)
            return KEEP_RUNNING
        deadline = run.plan.end_s + run.scenario.timeouts.slowest_s + DRAIN_GRACE_S
        if set(run.silent()) - self._lost(run) and now < deadline:
            run.announce(now, DRAINING)
            return KEEP_RUNNING
        run.progress.done()
        if run.distributed and time.monotonic() - run.last_drained < REPORT_WAIT_S:
            return KEEP_RUNNING
        if run.stopped is None:
            run.completed(now)
        return None

    def _lost(self, run: ActiveRun) -> set[int]:
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
        run.end(run.clock.now(), OPERATOR_STOP if self._stop_pressed else INTERRUPTED)
        send(self.environment.runner.send_message, Stop(run.run_id))
        run.all_drained.wait(STOP_WAIT_S)

    def close(self) -> None:
        """test_stop: write how the run ended, Locust's tables beside ours, then the report."""
        self._refused = False
        run = self._run
        if run is None:
            self._closed.wait()
            return
        self.interrupt()
        if self._run is None:  # another close took the run while this one waited
            self._closed.wait()
            return
        self._run = None
        self._closed.clear()
        try:
            self._close(run)
        finally:
            self._closed.set()

    def _close(self, run: ActiveRun) -> None:
        record = wrap_up(run, self.environment)
        if self._metrics is not None:
            self._metrics.end(run.run_id, record.phases)
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
        if self._metrics is not None:
            self._metrics.faults(run.run_id, summary_of(run.files.dir))
        if self.environment.parsed_options.headless:
            self.closing_text = text
        elif text:
            print(text, flush=True)
