"""What every shape of this kit is to Locust: the run's phase clock and stop signal.

Locust ticks a shape about once a second on the master, and a tick can stall
for seconds in distributed mode, so the shape is never the arrival timer: it
hands the conductor a plan of absolute due times when the test starts, and ends
the test when the conductor says every process has drained. It asks Locust for no
users at all; the open-arrival dispatchers are not users and the UI should not
pretend they are concurrent people.
"""

from __future__ import annotations

from locust import LoadTestShape

from engine.schedule import Plan
from inputs.scenario import Scenario
from runner.conductor import Conductor
from runner.settings import RunSettings


class KitShape(LoadTestShape):
    """Base of the four-phase and constant-rate shapes."""

    abstract = True
    conductor: Conductor | None = None
    # Locust says a shape ignores --run-time, -u and -r unless this is true; the kit reads
    # --run-time (constant rate) and refuses the rest. choose_shape sets it false in the web
    # UI, where true would show Locust's users fields.
    use_common_options = True

    def tick(self) -> tuple[int, float] | None:
        """Keep the test running until the conductor says it is over."""
        return None if self.conductor is None else self.conductor.tick()

    def initial_plan(self, settings: RunSettings) -> Plan:
        """The schedule a new test starts with."""
        raise NotImplementedError

    def after_preflight(self, scenario: Scenario) -> None:
        """Hear which workloads preflight kept (the scenario after it), before load starts."""
