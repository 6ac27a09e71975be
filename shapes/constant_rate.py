"""The exploratory run: one arrival rate, set by the operator and changeable while it runs.

The rate comes from ``--rate`` (also a field of the web UI's start form) and can
be changed at ``/arrival-rate`` on the web UI while the test runs. A change takes
effect a moment ahead, at the same arrival index in every process. With
``--run-time`` the run ends (and drains) by itself; without, it runs until stopped.
"""

from __future__ import annotations

from engine.schedule import Plan
from inputs.bad_input import SettingsError
from shapes.kit_shape import KitShape, Settings


class ConstantRateShape(KitShape):
    """A constant arrival rate per second, for as long as the operator wants."""

    rate: float | None = None

    def initial_plan(self, settings: Settings) -> Plan:
        """``--rate`` from t = 0, until ``--run-time`` or a stop; SettingsError without a rate."""
        if settings.rate is None:
            raise SettingsError(
                "--rate: not set; give the arrival rate per second, e.g. --rate 10 "
                "(a field of the web UI's start form too)"
            )
        self.rate = settings.rate
        return self._bounded(Plan.constant(settings.rate))

    def tick(self) -> tuple[int, float] | None:
        """Also picks up a rate the start form changed while the test runs."""
        wanted = positive_rate(getattr(self.options, "rate", None))
        if self.rate is not None and wanted is not None and wanted != self.rate:
            self.set_rate(wanted)
        return super().tick()

    def set_rate(self, rate: float) -> None:
        """Offer ``rate`` arrivals per second from a moment from now on."""
        self.rate = rate
        self.options.rate = rate
        if self.conductor is not None:
            self.conductor.change_plan(lambda plan, at_s: self._bounded(plan.with_rate(rate, at_s)))

    def _bounded(self, plan: Plan) -> Plan:
        run_time = self.options.run_time
        return plan.closed_at(float(run_time)) if run_time else plan


def positive_rate(value: object) -> float | None:
    """The value as a rate, or None if it is not a positive number."""
    if not isinstance(value, str | int | float):
        return None
    try:
        rate = float(value)
    except (TypeError, ValueError):
        return None
    return rate if rate > 0 else None
