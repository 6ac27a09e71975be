"""What every shape of this kit is to Locust: the run's phase clock and stop signal.

Locust ticks a shape about once a second on the master, and a tick can stall
for seconds in distributed mode, so the shape is never the arrival timer: it
hands the run a plan of absolute due times when the test starts, and ends the
test when the run says every process has drained. It asks Locust for no users at
all; the open-arrival dispatchers are not users and the UI should not pretend
they are concurrent people. Shapes sit beneath the runner and see the run only
through ``Pacer`` and ``Settings``, the protocols declared here.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from locust import LoadTestShape
from locust.runners import Runner
from msgspec import UNSET, UnsetType

from engine.run_record import OPEN_ARRIVAL, UsersStep
from engine.schedule import Plan
from inputs.scenario import Scenario


class Pacer(Protocol):
    """What a shape asks of the run it paces (runner.conductor.Conductor is one)."""

    def tick(self) -> tuple[int, float] | None:
        """Keep the test running, or None when it is over."""

    def now(self) -> float | None:
        """Seconds since the current run started (None before one starts)."""

    def progress(self) -> tuple[Path, int] | None:
        """The run's directory and the arrivals due by now (None before a run starts)."""

    def change_plan(self, plan_for: Callable[[Plan, float], Plan]) -> None:
        """Apply a change computed from (the current plan, when the change takes effect)."""


class SweepSettings(Protocol):
    """What a sweep reads of the run's checked sweep options (runner.settings.Sweep is one)."""

    @property
    def users(self) -> tuple[int, ...] | None: ...
    @property
    def rates(self) -> tuple[float, ...] | None: ...
    @property
    def step_s(self) -> float: ...
    @property
    def rest_s(self) -> float: ...
    @property
    def stop(self) -> bool: ...


class Settings(Protocol):
    """What a shape reads of the run's checked settings (runner.settings.RunSettings is one)."""

    @property
    def scenario(self) -> Scenario: ...
    @property
    def rate(self) -> float | None: ...
    @property
    def sweep(self) -> SweepSettings: ...


class KitShape(LoadTestShape):
    """Base of the four-phase and constant-rate shapes."""

    abstract = True
    conductor: Pacer | None = None
    # How this shape offers load; users shapes say USERS.
    mode = OPEN_ARRIVAL
    # Locust says a shape ignores --run-time, -u and -r unless this is true; the kit reads
    # --run-time (constant rate) and refuses the rest. choose_shape sets it false in the web
    # UI, where true would show Locust's users fields.
    use_common_options = True

    @property
    def locust(self) -> Runner:
        """Locust's runner (Locust gives a shape its runner before it asks for a plan or ticks)."""
        if self.runner is None:
            raise RuntimeError("a shape was used before Locust gave it its runner")
        return self.runner

    @property
    def options(self) -> Namespace:
        """The run's parsed options, as Locust holds them (the web UI's form changes them)."""
        options = self.locust.environment.parsed_options
        if options is None:
            raise RuntimeError("a shape was used before Locust parsed the options")
        return options

    def tick(self) -> tuple[int, float] | None:
        """Keep the test running until the run says it is over."""
        return None if self.conductor is None else self.conductor.tick()

    def initial_plan(self, settings: Settings) -> Plan:
        """The schedule a new test starts with."""
        raise NotImplementedError

    def after_preflight(self, scenario: Scenario) -> None:
        """Hear which workloads preflight kept (the scenario after it), before load starts."""


def mode_of(shape: object) -> str:
    """The mode a shape runs in: users shapes say so, every other shape is open arrival."""
    return getattr(shape, "mode", OPEN_ARRIVAL)


def users_of(shape: object) -> list[UsersStep] | UnsetType:
    """run.json's ``users``: for users mode, the users each step held; else none."""
    record = getattr(shape, "users_record", None)
    return record() if callable(record) else UNSET
