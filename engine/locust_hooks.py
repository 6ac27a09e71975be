"""Where the generator meets Locust: options, messages, and the test's start and end.

Locust calls these listeners; they only route to the Conductor (the master, or
a local run) and to the LoadProcess (each process that generates load). Bad input
stops the process here with one line, before any load.
"""

from __future__ import annotations

import signal
import sys

from locust import events
from locust.runners import MasterRunner, WorkerRunner

from engine.conductor import Conductor
from engine.load_process import LoadProcess
from engine.messages import (
    DRAINED,
    PLAN,
    PREPARE,
    READY,
    REPORT_KEY,
    STOP,
    PlanUpdate,
    Prepare,
    drained_from_wire,
)
from engine.settings import BAD_INPUT, add_options, check_new_run_dir, settings_from
from shapes.choose import choose_shape
from shapes.sweep import add_sweep_options
from webui.rate_page import add_rate_page
from webui.verdict_tab import add_verdict_tab
from workloads.fixture import password_from_env

# Exit code when the options are refused at start-up.
BAD_INPUT_EXIT = 2

_conductor: Conductor | None = None
_process: LoadProcess | None = None


def install() -> None:
    """Register the listeners (the locustfile calls this once)."""
    events.init_command_line_parser.add_listener(lambda parser: add_options(parser))
    events.init_command_line_parser.add_listener(add_sweep_options)
    events.init.add_listener(_on_init)
    events.test_start.add_listener(_on_test_start)
    events.test_stopping.add_listener(_on_test_stopping)
    events.test_stop.add_listener(_on_test_stop)
    events.report_to_master.add_listener(_on_report_to_master)
    events.worker_report.add_listener(_on_worker_report)
    events.quitting.add_listener(_on_quitting)


def _refuse_at_start(line: str) -> None:
    sys.stderr.write(f"agent-loadkit: {line}\n")
    sys.exit(BAD_INPUT_EXIT)


def _on_init(environment, runner, web_ui=None, **_) -> None:
    global _conductor, _process
    options = environment.parsed_options
    generates_load = not isinstance(runner, MasterRunner)
    try:
        if generates_load:
            password_from_env()
        if not isinstance(runner, WorkerRunner):
            settings = settings_from(options, environment.host)
            if settings.run_dir is not None:
                check_new_run_dir(settings.run_dir)
    except BAD_INPUT as exc:
        _refuse_at_start(str(exc))
    if generates_load:
        _process = LoadProcess(runner.client_id, runner.send_message, events.request.fire)
        runner.register_message(PREPARE, lambda msg, **_: _process.on_prepare(Prepare(**msg.data)))
        runner.register_message(PLAN, lambda msg, **_: _process.on_plan(PlanUpdate(**msg.data)))
        runner.register_message(STOP, lambda msg, **_: _process.stop("interrupted"))
    if not isinstance(runner, WorkerRunner):
        # A headless shape run blocks Locust's main before it installs its SIGTERM handler;
        # until then SIGTERM acts as Ctrl-C, so the run still ends interrupted and reported.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        _conductor = Conductor(environment, _process)
        runner.register_message(READY, lambda msg, **_: _conductor.on_ready(msg.data))
        runner.register_message(
            DRAINED, lambda msg, **_: _conductor.on_drained(drained_from_wire(msg.data))
        )
        environment.shape_class = choose_shape(environment, _conductor)
        if web_ui is not None:
            add_rate_page(web_ui, lambda: environment.shape_class)
            add_verdict_tab(web_ui, _conductor.progress)


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
