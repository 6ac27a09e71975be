"""The capacity run: the scenario's phases back to back (ramp, sustain, burst, recover).

``--scale`` shortens every phase (never below two seconds) and changes nothing
else; shortening a run by lowering its rate would be a different experiment
wearing the same name.
"""

from __future__ import annotations

from engine.schedule import Plan
from shapes.kit_shape import KitShape, Settings


class FourPhaseShape(KitShape):
    """The scenario's phases, each at its rate, from the moment load starts."""

    def initial_plan(self, settings: Settings) -> Plan:
        """Every phase of the (scaled) scenario, back to back from t = 0."""
        return Plan.from_scenario(settings.scenario)
