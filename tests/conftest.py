"""Session hygiene, and the platform the generator tests share.

A SIGTERM to pytest stops it as Ctrl-C does. Servers a test starts are stopped
by its fixtures' finalizers, by PID; pytest's default SIGTERM ends the process
without running them, and the stubs, platforms and load processes it started were
measured still running afterwards. Raising KeyboardInterrupt instead makes pytest
unwind and run every finalizer.

``plat`` is the default local platform (stub, reference target, seeded fixture),
started once per test module that asks for it; a module that needs another
(a slow stub) defines its own ``plat``, which pytest prefers.
"""

from __future__ import annotations

import signal
from collections import Counter

import pytest

from stack.generator_runs import platform
from stack.postgres import PostgresMissing


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config) -> None:
    """Install the handler in the process that runs the tests."""
    signal.signal(signal.SIGTERM, _interrupt)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A test that needs PostgreSQL where the machine has none is skipped, saying how to get
    it (stack/postgres.py raises, as a bench needs it to)."""
    try:
        return (yield)
    except PostgresMissing as missing:
        pytest.skip(str(missing))


def pytest_terminal_summary(terminalreporter) -> None:
    """Say what was skipped, by reason, and how to get the rest: a suite that passed with
    tests skipped is not the whole suite (``.ci/run`` installs what they need first)."""
    reasons = Counter(
        str(report.longrepr[2]).removeprefix("Skipped: ")
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple)
    )
    if not reasons:
        return
    total = sum(reasons.values())
    terminalreporter.write_sep(
        "-", f"{total} test{'' if total == 1 else 's'} skipped: what each needs and how to get it"
    )
    for reason, count in reasons.most_common():
        terminalreporter.write_line(f"{count:4}  {reason}")
    terminalreporter.write_line(
        "      .ci/run installs all of them, then runs make test (as CI does)"
    )


@pytest.fixture(scope="module")
def plat(tmp_path_factory):
    """The default platform, one per module: its tests' runs share it, never another's."""
    with platform(tmp_path_factory.mktemp("platform")) as p:
        yield p
