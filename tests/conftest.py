"""Session hygiene: a SIGTERM to pytest stops it as Ctrl-C does.

Servers a test starts are stopped by its fixtures' finalizers, by PID; pytest's
default SIGTERM ends the process without running them, and the stubs, platforms
and load processes it started were measured still running afterwards. Raising
KeyboardInterrupt instead makes pytest unwind and run every finalizer.
"""

from __future__ import annotations

import signal


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config) -> None:
    """Install the handler in the process that runs the tests."""
    signal.signal(signal.SIGTERM, _interrupt)
