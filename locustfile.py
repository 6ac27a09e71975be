"""agent-loadkit's entry point for Locust: the user class and the shapes, nothing else.

Load is offered by open-arrival dispatchers (engine/) by default, or in users
mode by the six workload User classes (runner/users.py); the shapes (shapes/)
say when a test starts and ends. See docs/operator-guide.md "Generator" and docs/capacity.md.
"""

from runner.hooks import install
from runner.open_arrival_user import OpenArrival
from runner.users import USER_CLASSES
from shapes.constant_rate import ConstantRateShape
from shapes.four_phase import FourPhaseShape
from shapes.sweep import ConcurrencySweepShape, RateSweepShape
from shapes.users import UsersShape

install()

# Users mode's six workload classes (runner/users.py), as Locust finds User classes: by name.
globals().update({cls.__name__: cls for cls in USER_CLASSES.values()})

__all__ = [
    "ConcurrencySweepShape",
    "ConstantRateShape",
    "FourPhaseShape",
    "OpenArrival",
    "RateSweepShape",
    "UsersShape",
    *(cls.__name__ for cls in USER_CLASSES.values()),
]
