"""The console while a run lasts: one progress line, and Locust's tables only when asked for.

On a terminal the line is rewritten in place and erased before any log line, so
nothing prints over it; in a log it is a log line per phase and every 10 s.
"""

import argparse
import io
import logging
import sys

import pytest

from runner.progress import (
    CLEAR,
    EVERY_S,
    LOCUST_TABLES_LOGGER,
    Progress,
    ProgressLine,
    quiet_locust_tables,
    quiet_user_ramp,
)


def _at(now_s: float, phase: str = "sustain", recorded: int = 990) -> Progress:
    return Progress(phase, 12.0, now_s, 345.0, 1000, recorded, late=3)


def test_the_line_says_phase_time_offered_recorded_in_flight_and_late():
    assert _at(84.4).text() == (
        "sustain 12/s  t 84/345 s  offered 1,000  recorded 990  in flight 10  late 3 (0.30%)"
    )
    closed = Progress("users=8", None, 3.0, None, None, 40, 0)
    assert closed.text() == "users=8 (closed loop)  t 3 s  recorded 40"
    # Draining past the plan's end says so, not "t 346/345 s".
    draining = Progress("draining", None, 346.0, 345.0, 1000, 1000, 0)
    assert draining.text().startswith(
        "draining  t 346 s (the plan ended at 345 s)  offered 1,000  recorded 1,000  in"
    )


@pytest.fixture
def handlers():
    """Root-logger handlers a test adds, removed after it."""
    added: list[logging.Handler] = []
    yield added
    for handler in added:
        logging.getLogger().removeHandler(handler)


def test_on_a_terminal_the_line_is_redrawn_and_cleared_before_a_log_line(monkeypatch, handlers):
    # stderr as a buffer (set here: pytest sets its own before each test body), with a console
    # handler on the root logger as Locust sets one up.
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("COLUMNS", "200")
    handlers.append(logging.StreamHandler(terminal))
    logging.getLogger().addHandler(handlers[-1])
    line = ProgressLine(live=True)
    line.show(_at(1.0))
    line.show(_at(2.0))
    logging.getLogger("x").warning("something to say")
    line.show(_at(3.0))
    line.done()
    out = terminal.getvalue()
    assert out == (
        f"{CLEAR}{_at(1.0).text()}{CLEAR}{_at(2.0).text()}{CLEAR}something to say\n"
        f"{CLEAR}{_at(3.0).text()}\n"
    )
    # Once done, a log line is left alone.
    logging.getLogger("x").warning("after")
    assert terminal.getvalue() == out + "after\n"


def test_in_a_log_the_line_is_logged_per_phase_and_every_ten_seconds(caplog):
    caplog.set_level(logging.INFO, logger="runner.progress")
    line = ProgressLine(live=False)
    for t in (0.0, 1.0, 2.0, EVERY_S + 0.5, EVERY_S + 1.0):
        line.show(_at(t, phase="ramp"))
    line.show(_at(EVERY_S + 2.0))
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "phase " + _at(0.0, phase="ramp").text(),
        _at(EVERY_S + 0.5, phase="ramp").text(),
        "phase " + _at(EVERY_S + 2.0).text(),
    ]


def test_locust_tables_are_off_unless_asked_for():
    logger = logging.getLogger(LOCUST_TABLES_LOGGER)
    before = logger.level
    try:
        asked = argparse.Namespace(locust_tables=True, print_stats=False, only_summary=False)
        quiet_locust_tables(asked)
        assert not asked.only_summary and logger.level == before
        quiet = argparse.Namespace(locust_tables=False, print_stats=False, only_summary=False)
        quiet_locust_tables(quiet)
        assert quiet.only_summary and logger.level == logging.WARNING
    finally:
        logger.setLevel(before)


def test_locusts_user_ramp_lines_are_left_out_in_open_arrival_only(caplog):
    mode = {"open": True}
    quiet_user_ramp(lambda: mode["open"])
    runners = logging.getLogger("locust.runners")
    try:
        with caplog.at_level(logging.INFO, logger="locust.runners"):
            runners.info("Ramping to %d users at a rate of %.2f per second", 0, 1.0)
            runners.info('All users spawned: {"OpenArrival": 0} (0 total users)')
            runners.info("Shape test updating to 0 users at 1.00 spawn rate")
            runners.info("Shape test starting.")
            mode["open"] = False
            runners.info("Ramping to %d users at a rate of %.2f per second", 8, 8.0)
        said = [r.getMessage() for r in caplog.records if r.name == "locust.runners"]
        assert said == ["Shape test starting.", "Ramping to 8 users at a rate of 8.00 per second"]
    finally:
        runners.filters.clear()
