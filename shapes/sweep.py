"""Sweeps: load raised step by step, each step held long enough to read, to find the knee.

A concurrency sweep holds 1, 2, 4, ... N closed-loop users (users mode), like
the Agent OS seed's 1..1000 bench; a rate sweep offers a list of arrival rates
(open arrival). Each step is a segment of the run's plan named by its load
(``c=8``, ``rate=16/s``), so every sample is filed under its step and
``python -m reports.sweep RUN`` reads the steps back. Both run headless and
from the web UI (class picker); ``--rest-s`` adds a last step with no load, to
see whether the platform gives memory back.
"""

from __future__ import annotations

from engine.schedule import Plan, Segment
from engine.settings import RunSettings, SettingsError
from shapes.kit_shape import KitShape
from shapes.users import SteppedUsersShape, UsersShape

# Seconds each step is held unless --step-s says otherwise: enough for a few turns at 2 s each.
DEFAULT_STEP_S = 15.0
# The name of the no-load step that ends a sweep with --rest-s.
REST = "rest"


def add_sweep_options(parser) -> None:
    """The sweeps' options on Locust's parser (so they also show in the web UI)."""
    parser.add_argument(
        "--sweep-users",
        default=None,
        help="concurrency sweep (users mode): N for 1, 2, 4, ... N, or a list like 1,4,16",
    )
    parser.add_argument(
        "--sweep-rates",
        default=None,
        help="arrival-rate sweep (open arrival): a list of rates per second, like 2,4,8,16",
    )
    parser.add_argument("--step-s", default=DEFAULT_STEP_S, help="seconds each sweep step is held")
    parser.add_argument(
        "--rest-s", default=0, help="seconds of no load after a sweep (is memory given back?)"
    )


def user_steps(value: object) -> list[int]:
    """``--sweep-users`` as user counts: N means 1, 2, 4, ... up to N (N itself included)."""
    parts = _list(value, "--sweep-users", int)
    if len(parts) > 1:
        return parts
    top, steps, n = parts[0], [], 1
    while n < top:
        steps.append(n)
        n *= 2
    return [*steps, top]


def rate_steps(value: object) -> list[float]:
    """``--sweep-rates`` as rates per second, in the order given."""
    return _list(value, "--sweep-rates", float)


def step_seconds(options) -> tuple[float, float]:
    """(``--step-s``, ``--rest-s``) checked: a step above 0, a rest of 0 or more."""
    try:
        step, rest = float(options.step_s), float(options.rest_s or 0)
    except (TypeError, ValueError):
        raise SettingsError(
            "--step-s/--rest-s: not a number; give seconds, e.g. --step-s 15 --rest-s 10"
        ) from None
    if step <= 0 or rest < 0:
        raise SettingsError("--step-s must be above 0 and --rest-s 0 or more; e.g. --step-s 15")
    return step, rest


def _list(value: object, option: str, cast: type) -> list:
    try:
        parts = [cast(p) for p in str(value).split(",") if p.strip()]
    except ValueError:
        raise SettingsError(f"{option}: {value!r} is not a list of numbers; e.g. 1,2,4") from None
    if not parts or any(p <= 0 for p in parts):
        raise SettingsError(f"{option}: {value!r} needs numbers above 0; e.g. 1,2,4")
    return parts


class ConcurrencySweepShape(SteppedUsersShape):
    """Users 1, 2, 4, ... N (``--sweep-users``), each held ``--step-s``; then ``--rest-s`` idle."""

    def initial_plan(self, settings: RunSettings) -> Plan:
        """One zero-rate segment per user count, named ``c=<users>``."""
        options = self.runner.environment.parsed_options
        if options.sweep_users in (None, ""):
            raise SettingsError("--sweep-users: not set; give the top user count, e.g. 64")
        step, rest = step_seconds(options)
        steps = [(f"c={users}", users, step) for users in user_steps(options.sweep_users)]
        if rest:
            steps.append((REST, 0, rest))
        return self._plan(settings, steps)


class RateSweepShape(KitShape):
    """Arrival rates from ``--sweep-rates``, each held ``--step-s``; then ``--rest-s`` idle."""

    def initial_plan(self, settings: RunSettings) -> Plan:
        """One open-arrival segment per rate, named ``rate=<r>/s``."""
        options = self.runner.environment.parsed_options
        if options.sweep_rates in (None, ""):
            raise SettingsError("--sweep-rates: not set; give the rates, e.g. 2,4,8,16")
        step, rest = step_seconds(options)
        segments, start, first = [], 0.0, 0
        for rate in rate_steps(options.sweep_rates):
            segment = Segment(f"rate={rate:g}/s", rate, start, start + step, first, "sweep step")
            segments.append(segment)
            first += segment.count()
            start += step
        if rest:
            segments.append(Segment(REST, 0.0, start, start + rest, first, "no load"))
        return Plan(tuple(segments))


def capacity_shape_class(options) -> type | None:
    """The shape a capacity option asks for, or None: a sweep, or users mode for ``-u``."""
    if getattr(options, "sweep_users", None):
        return ConcurrencySweepShape
    if getattr(options, "sweep_rates", None):
        return RateSweepShape
    if getattr(options, "num_users", None):
        return UsersShape
    return None
