"""A sweep's steps are named by their load, so its run directory says it was a sweep: the sweep
shapes name them (shapes/sweep.py) and the sweep report reads them back (reports/sweep/)."""

from __future__ import annotations

import re
from collections.abc import Iterable

# The no-load step a sweep may end with (``--rest-s``), to see whether memory is given back.
REST = "rest"
STEP = re.compile(r"c=\d+|rate=\d+(\.\d+)?(e[+-]?\d+)?/s")


def users_step(users: int) -> str:
    """A concurrency sweep's step: ``c=8``."""
    return f"c={users}"


def rate_step(rate: float) -> str:
    """A rate sweep's step: ``rate=16/s``."""
    return f"rate={rate:g}/s"


def is_sweep(phases: Iterable[str]) -> bool:
    """Whether a run's phases are a sweep's steps: at least one, each named by its load, and
    at most a rest step besides."""
    steps = [name for name in phases if name != REST]
    return bool(steps) and all(STEP.fullmatch(name) for name in steps)
