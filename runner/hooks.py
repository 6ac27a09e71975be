"""Where the generator meets Locust: options, messages, and the test's start and end.

Locust calls these listeners; they only route to the Conductor (the master, or
a local run) and to the LoadProcess (each process that generates load). Bad input
stops the process here with one line, before any load.
"""

from __future__ import annotations

import logging
import signal
import sys
import time
from functools import partial

import gevent
import greenlet
from locust import events
from locust.runners import MasterRunner, WorkerRunner

from inputs.bad_input import SettingsError
from runner import live_metrics
from runner.conductor import Conductor
from runner.live_metrics import RunMetrics
from runner.load_process import LoadProcess
from runner.messages import (
    REPORT_KEY,
    Batch,
    Drained,
    Header,
    MessageError,
    Ping,
    PlanUpdate,
    Pong,
    Prepare,
    Ready,
    Stop,
    decode,
    encode,
    listen,
    prepare_from,
    send,
)
from runner.options import PROMETHEUS, PROMETHEUS_LINGER_S, SHOWN_ONLY_FOR, add_options
from runner.progress import quiet_locust_tables, quiet_user_ramp
from runner.settings import BAD_INPUT, refuse_users_options, settings_from
from runner.users import USER_CLASSES
from shapes.choose import choose_shape
from shapes.kit_shape import OPEN_ARRIVAL, mode_of
from webui.locust_charts import chart_offered_rate
from webui.rate_page import add_rate_page
from webui.start_form import add_start_form
from webui.stop_button import on_stop_button
from webui.verdict_tab import add_verdict_tab

log = logging.getLogger(__name__)

# Exit code when the options are refused at start-up, or the run never started.
BAD_INPUT_EXIT = 2
# How often the headless master looks whether its expected workers have connected.
WORKER_POLL_S = 0.5


class KitHooks:
    """This process's part of the kit as Locust's listeners see it: the conductor (the master,
    or a local run), the load process (a worker, or a local run), the live metrics and how
    long they outlast the run.

    One object made by ``install``, whose methods are the listeners, rather than state held
    on Locust's Environment: Locust fires ``report_to_master``, ``worker_report`` and
    ``quit`` without the Environment, and the signal handler has none either, so only an
    object the listeners are bound to reaches every one of them; it lives as long as the
    process, which is as long as Locust's Environment does (one per process).
    """

    def __init__(self) -> None:
        self.conductor: Conductor | None = None
        self.process: LoadProcess | None = None
        self.metrics: RunMetrics | None = None
        self.linger_s = 0.0

    def on_init(self, environment, runner, web_ui=None, **_) -> None:
        options = environment.parsed_options
        generates_load = not isinstance(runner, MasterRunner)
        try:
            # The credential is checked where the platform is known (the settings, and each
            # load process's sign-in at Prepare): a platform without sign-in asks for none.
            if isinstance(runner, WorkerRunner) and PROMETHEUS.given(options):
                # Locust's config files and the k8s operator give both roles the same options.
                log.info("--prometheus: the master serves the metrics (it holds every sample)")
            if not isinstance(runner, WorkerRunner):
                refuse_users_options(options)
                settings_from(options, environment.host)
                self._serve_metrics(PROMETHEUS.value(options), PROMETHEUS_LINGER_S.value(options))
        except BAD_INPUT as exc:
            _refuse_at_start(str(exc))
        if generates_load:
            self.process = process = LoadProcess(
                runner.client_id, partial(send, runner.send_message), environment.stats
            )
            runner.register_message(Prepare.kind, partial(_on_prepare, process))
            listen(runner.register_message, Ping, process.on_ping)
            listen(runner.register_message, PlanUpdate, process.on_plan)
            listen(runner.register_message, Stop, process.on_stop)
        if not isinstance(runner, WorkerRunner):
            quiet_locust_tables(options)
            quiet_user_ramp(lambda: mode_of(environment.shape_class) == OPEN_ARRIVAL)
            self._handle_signals_before_load(runner)
            if isinstance(runner, MasterRunner) and options.headless:
                _bound_the_wait_for_workers(runner, options)
            self.conductor = conductor = Conductor(environment, self.process, self.metrics)
            listen(runner.register_message, Ready, conductor.on_ready)
            listen(runner.register_message, Pong, conductor.on_pong)
            listen(runner.register_message, Drained, conductor.on_drained)
            environment.shape_class = choose_shape(environment, conductor, USER_CLASSES)
            if web_ui is not None:
                add_rate_page(web_ui, lambda: environment.shape_class)
                add_start_form(web_ui, lambda: environment.shape_class, SHOWN_ONLY_FOR)
                add_verdict_tab(web_ui, conductor.progress)
                chart_offered_rate(web_ui, conductor.offered_rate)
                on_stop_button(web_ui, conductor.stop_pressed)

    def _serve_metrics(self, address: tuple[str, int] | None, linger_s: float) -> None:
        """Start the metrics server the master's runs count into (--prometheus), or nothing."""
        if address is None:
            return
        metrics = RunMetrics()
        try:
            live_metrics.serve(address, metrics)
        except OSError as exc:
            host, port = address
            raise SettingsError(
                f"--prometheus: cannot serve on {host}:{port} ({exc.strerror or exc}); "
                "give a free port, or an address of this host"
            ) from None
        self.metrics, self.linger_s = metrics, linger_s

    def _handle_signals_before_load(self, runner) -> None:
        """SIGTERM, SIGINT and SIGHUP: once a run exists they end it at once, interrupted and
        recorded in run.json, without building its report (which may take longer than a CI
        timeout's grace; ``loadkit report`` builds it), exit 2 (Ctrl-C's path; a headless
        shape run blocks Locust's main before it installs its own SIGTERM handler); before
        that, while anything is still waited for, one line and exit 2."""
        main = greenlet.getcurrent()

        def on_signal(signum, frame):
            name = signal.Signals(signum).name
            if self.conductor is not None and self.conductor.has_run():
                self.conductor.signalled(name)
                raise KeyboardInterrupt
            gevent.spawn(
                _exit_before_load, runner, main, f"{name} before load started; no run made"
            )

        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, on_signal)

    def on_test_start(self, environment, **_) -> None:
        if self.conductor is not None:
            self.conductor.begin()

    def on_test_stopping(self, environment, **_) -> None:
        if self.conductor is not None:
            self.conductor.interrupt()
        elif self.process is not None:
            self.process.stop("interrupted")

    def on_test_stop(self, environment, **_) -> None:
        if self.conductor is not None:
            self.conductor.close()

    def on_report_to_master(self, client_id, data, **_) -> None:
        batch = self.process.take_batch() if self.process is not None else None
        if batch is not None:
            data[REPORT_KEY] = encode(batch)

    def on_worker_report(self, client_id, data, **_) -> None:
        if REPORT_KEY not in data or self.conductor is None:
            return
        try:
            batch = decode(Batch, data[REPORT_KEY])
        except MessageError as exc:
            log.error("a report from %s refused: %s", client_id, exc)
            return
        self.conductor.on_batch(batch)

    def on_quitting(self, environment, **_) -> None:
        """Locust is exiting (the end, Ctrl-C, SIGTERM): end any run first, then give its
        verdict."""
        conductor = self.conductor
        if conductor is not None:
            conductor.interrupt()
            conductor.close()
            if conductor.exit_code is not None and environment.parsed_options.headless:
                environment.process_exit_code = conductor.exit_code
        elif self.process is not None:
            self.process.stop("interrupted")

    def on_quit(self, exit_code, **_) -> None:
        """The very end: a headless run's figures and verdict are the last thing it prints,
        after Locust's own exit lines; then the final metrics are served one scrape more
        (once: a signal that cuts the wait short runs Locust's shutdown, and so this, again)."""
        if self.conductor is not None and self.conductor.closing_text:
            print(self.conductor.closing_text, flush=True)
            self.conductor.closing_text = ""
        metrics, self.metrics = self.metrics, None
        if metrics is not None and metrics.has_runs:
            live_metrics.linger(self.linger_s)


def install() -> None:
    """Register the listeners (the locustfile calls this once), bound to this process's one
    KitHooks."""
    hooks = KitHooks()
    events.init_command_line_parser.add_listener(add_options)
    events.init.add_listener(hooks.on_init)
    events.test_start.add_listener(hooks.on_test_start)
    events.test_stopping.add_listener(hooks.on_test_stopping)
    events.test_stop.add_listener(hooks.on_test_stop)
    events.report_to_master.add_listener(hooks.on_report_to_master)
    events.worker_report.add_listener(hooks.on_worker_report)
    events.quitting.add_listener(hooks.on_quitting)
    events.quit.add_listener(hooks.on_quit)


def _refuse_at_start(problems: str) -> None:
    """One line per problem (a scenario or fixture may have several), then exit 2."""
    sys.stderr.writelines(f"agent-loadkit: {line}\n" for line in problems.splitlines())
    sys.exit(BAD_INPUT_EXIT)


def _on_prepare(process: LoadProcess, msg, **_) -> None:
    """A Prepare: its header first, so that a master of another version, or a malformed
    field, is answered with the one line the master refuses the run with."""
    try:
        header = decode(Header, msg.data)
    except MessageError as exc:
        log.error("%s from %s refused: %s", Prepare.kind, msg.node_id, exc)
        return
    try:
        prepare = prepare_from(header, msg.data)
    except MessageError as exc:
        log.error("%s refused: %s", Prepare.kind, exc)
        process.refuse(header, str(exc))
        return
    process.on_prepare(prepare)


def _exit_before_load(runner, main, line: str) -> None:
    """One line, workers told to quit, and exit 2 from Locust's main greenlet (no traceback)."""
    sys.stderr.write(f"agent-loadkit: {line}\n")
    sys.stderr.flush()
    runner.quit()
    main.throw(SystemExit(BAD_INPUT_EXIT))


def _bound_the_wait_for_workers(runner, options) -> None:
    """--expect-workers-max-wait (a default of this kit's) with exit 2 and one line; Locust's
    own check waits forever by default and exits 1, the code of a failed threshold."""
    wait_s = float(options.expect_workers_max_wait or 0)
    options.expect_workers_max_wait = 0
    if wait_s <= 0:
        return
    main = greenlet.getcurrent()
    log.info(
        "waiting up to %g s for %d workers (--expect-workers-max-wait)",
        wait_s,
        options.expect_workers,
    )

    def watch() -> None:
        deadline = time.monotonic() + wait_s
        while len(runner.clients.ready) < options.expect_workers:
            if time.monotonic() > deadline:
                _exit_before_load(
                    runner,
                    main,
                    f"--expect-workers: {len(runner.clients.ready)} of {options.expect_workers} "
                    f"workers connected within {wait_s:g} s; start the rest, or lower "
                    "--expect-workers (--expect-workers-max-wait sets the wait)",
                )
                return
            gevent.sleep(WORKER_POLL_S)

    gevent.spawn(watch)
