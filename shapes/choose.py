"""Which shape a test runs: the constant rate when ``--rate`` is given, else the four phases."""

from __future__ import annotations

from shapes.constant_rate import ConstantRateShape
from shapes.four_phase import FourPhaseShape
from shapes.kit_shape import KitShape
from shapes.rate_page import add_rate_page
from workloads.conductor import Conductor


def choose_shape(environment, conductor: Conductor, web_ui) -> object:
    """Attach the conductor to this kit's shapes and return the one to run."""
    wanted = ConstantRateShape if environment.parsed_options.rate is not None else FourPhaseShape
    chosen = environment.shape_class
    for shape in (environment.available_shape_classes or {}).values():
        if isinstance(shape, KitShape):
            shape.conductor = conductor
            shape.runner = environment.runner
            if isinstance(shape, wanted):
                chosen = shape
    if web_ui is not None:
        add_rate_page(web_ui, lambda: environment.shape_class)
    return chosen
