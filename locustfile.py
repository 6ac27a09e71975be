"""agent-loadkit's entry point for Locust: the user class and the shapes, nothing else.

Load is offered by open-arrival dispatchers (workloads/), not by Locust users;
the shapes (shapes/) say when a test starts and ends. See README "Generator".
"""

from engine.locust_hooks import install
from engine.open_arrival_user import OpenArrival
from shapes.constant_rate import ConstantRateShape
from shapes.four_phase import FourPhaseShape

install()

__all__ = ["ConstantRateShape", "FourPhaseShape", "OpenArrival"]
