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
    DRAINED,
    PING,
    PLAN,
    PONG,
    PREPARE,
    READY,
    REPORT_KEY,
    STOP,
    Ping,
    PlanUpdate,
    Prepare,
    drained_from_wire,
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

_conductor: Conductor | None = None
_process: LoadProcess | None = None
_metrics: RunMetrics | None = None
_linger_s = 0.0


def install() -> None:
    """Register the listeners (the locustfile calls this once)."""
    events.init_command_line_parser.add_listener(add_options)
    events.init.add_listener(_on_init)
    events.test_start.add_listener(_on_test_start)
    events.test_stopping.add_listener(_on_test_stopping)
    events.test_stop.add_listener(_on_test_stop)
    events.report_to_master.add_listener(_on_report_to_master)
    events.worker_report.add_listener(_on_worker_report)
    events.quitting.add_listener(_on_quitting)
    events.quit.add_listener(_on_quit)


def _refuse_at_start(problems: str) -> None:
    """One line per problem (a scenario or fixture may have several), then exit 2."""
    sys.stderr.writelines(f"agent-loadkit: {line}\n" for line in problems.splitlines())
    sys.exit(BAD_INPUT_EXIT)


def _on_init(environment, runner, web_ui=None, **_) -> None:
    global _conductor, _process
    options = environment.parsed_options
    generates_load = not isinstance(runner, MasterRunner)
    try:
        # The credential is checked where the platform is known (the settings, and each load
        # process's sign-in at Prepare): a platform without sign-in asks for none.
        if isinstance(runner, WorkerRunner) and PROMETHEUS.given(options):
            # Locust's config files and the k8s operator give both roles the same options.
            log.info("--prometheus: the master serves the metrics (it holds every sample)")
        if not isinstance(runner, WorkerRunner):
            refuse_users_options(options)
            settings_from(options, environment.host)
            _serve_metrics(PROMETHEUS.value(options), PROMETHEUS_LINGER_S.value(options))
    except BAD_INPUT as exc:
        _refuse_at_start(str(exc))
    if generates_load:
        _process = LoadProcess(runner.client_id, runner.send_message, environment.stats)
        runner.register_message(PREPARE, lambda msg, **_: _process.on_prepare(Prepare(**msg.data)))
        runner.register_message(PING, lambda msg, **_: _process.on_ping(Ping(**msg.data)))
        runner.register_message(PLAN, lambda msg, **_: _process.on_plan(PlanUpdate(**msg.data)))
        runner.register_message(STOP, lambda msg, **_: _process.stop("interrupted"))
    if not isinstance(runner, WorkerRunner):
        quiet_locust_tables(options)
        quiet_user_ramp(lambda: mode_of(environment.shape_class) == OPEN_ARRIVAL)
        _handle_signals_before_load(runner)
        if isinstance(runner, MasterRunner) and options.headless:
            _bound_the_wait_for_workers(runner, options)
        _conductor = Conductor(environment, _process, _metrics)
        runner.register_message(READY, lambda msg, **_: _conductor.on_ready(msg.data))
        runner.register_message(PONG, lambda msg, **_: _conductor.on_pong(msg.data))
        runner.register_message(
            DRAINED, lambda msg, **_: _conductor.on_drained(drained_from_wire(msg.data))
        )
        environment.shape_class = choose_shape(environment, _conductor, USER_CLASSES)
        if web_ui is not None:
            add_rate_page(web_ui, lambda: environment.shape_class)
            add_start_form(web_ui, lambda: environment.shape_class, SHOWN_ONLY_FOR)
            add_verdict_tab(web_ui, _conductor.progress)
            chart_offered_rate(web_ui, _conductor.offered_rate)
            on_stop_button(web_ui, _conductor.stop_pressed)


def _serve_metrics(address: tuple[str, int] | None, linger_s: float) -> None:
    """Start the metrics server the master's runs count into (--prometheus), or nothing."""
    global _metrics, _linger_s
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
    _metrics, _linger_s = metrics, linger_s


def _handle_signals_before_load(runner) -> None:
    """SIGTERM, SIGINT and SIGHUP: once a run exists they end it at once, interrupted and
    recorded in run.json, without building its report (which may take longer than a CI
    timeout's grace; ``loadkit report`` builds it), exit 2 (Ctrl-C's path; a headless shape
    run blocks Locust's main before it installs its own SIGTERM handler); before that, while
    anything is still waited for, one line and exit 2."""
    main = greenlet.getcurrent()

    def on_signal(signum, frame):
        name = signal.Signals(signum).name
        if _conductor is not None and _conductor.has_run():
            _conductor.signalled(name)
            raise KeyboardInterrupt
        gevent.spawn(_exit_before_load, runner, main, f"{name} before load started; no run made")

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)


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


def _on_test_start(environment, **_) -> None:
    if _conductor is not None:
        _conductor.begin()


def _on_test_stopping(environment, **_) -> None:
    if _conductor is not None:
        _conductor.interrupt()
    elif _process is not None:
        _process.stop("interrupted")


def _on_test_stop(environment, **_) -> None:
    if _conductor is not None:
        _conductor.close()


def _on_report_to_master(client_id, data, **_) -> None:
    batch = _process.take_batch() if _process is not None else None
    if batch is not None:
        data[REPORT_KEY] = batch


def _on_worker_report(client_id, data, **_) -> None:
    if REPORT_KEY in data and _conductor is not None:
        _conductor.on_batch(data[REPORT_KEY])


def _on_quitting(environment, **_) -> None:
    """Locust is exiting (the end, Ctrl-C, SIGTERM): end any run first, then give its verdict."""
    if _conductor is not None:
        _conductor.interrupt()
        _conductor.close()
        if _conductor.exit_code is not None and environment.parsed_options.headless:
            environment.process_exit_code = _conductor.exit_code
    elif _process is not None:
        _process.stop("interrupted")


def _on_quit(exit_code, **_) -> None:
    """The very end: a headless run's figures and verdict are the last thing it prints, after
    Locust's own exit lines; then the final metrics are served one scrape more (once: a
    signal that cuts the wait short runs Locust's shutdown, and so this, again)."""
    global _metrics
    if _conductor is not None and _conductor.closing_text:
        print(_conductor.closing_text, flush=True)
        _conductor.closing_text = ""
    metrics, _metrics = _metrics, None
    if metrics is not None and metrics.has_runs:
        live_metrics.linger(_linger_s)
