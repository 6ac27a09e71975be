"""Which shape a test runs: a constant rate, the four phases, users, or a sweep.

The web UI is for exploring, so it offers the constant rate (set in the start
form, changed at /arrival-rate); a headless run is a capacity run, so it runs the
four phases unless ``--rate`` is given. A sweep option or ``-u`` asks for a capacity
shape instead (shapes/sweep.py). ``--class-picker`` lets the UI pick any of them.
"""

from __future__ import annotations

from collections.abc import Mapping

from locust import User

from shapes.constant_rate import ConstantRateShape
from shapes.four_phase import FourPhaseShape
from shapes.kit_shape import KitShape, Pacer
from shapes.sweep import capacity_shape_class
from shapes.users import UsersShape


def choose_shape(environment, conductor: Pacer, user_classes: Mapping[str, type[User]]) -> object:
    """Attach the run's conductor (and users mode's User class per workload) to this kit's
    shapes, and return the one to run."""
    options = environment.parsed_options
    exploring = options.rate is not None or not options.headless
    wanted = capacity_shape_class(options) or (ConstantRateShape if exploring else FourPhaseShape)
    chosen = environment.shape_class
    for shape in (environment.available_shape_classes or {}).values():
        if isinstance(shape, KitShape):
            shape.conductor = conductor
            shape.runner = environment.runner
            if isinstance(shape, UsersShape):
                shape.user_classes = user_classes
            # The web form's Users fields mean something only to users mode; open-arrival
            # shapes keep them disabled there, so the form cannot pretend users are load.
            type(shape).use_common_options = environment.web_ui is None or isinstance(
                shape, UsersShape
            )
            if isinstance(shape, wanted):
                chosen = shape
    return chosen
