"""agent-loadkit's entry point for Locust: the user class and the shapes, nothing else.

Load is offered by open-arrival dispatchers (workloads/), not by Locust users;
the shapes (shapes/) say when a test starts and ends. See README "Generator".
"""

from shapes.constant_rate import ConstantRateShape
from shapes.four_phase import FourPhaseShape
from workloads.locust_hooks import install
from workloads.open_arrival_user import OpenArrival

install()

__all__ = ["ConstantRateShape", "FourPhaseShape", "OpenArrival"]
