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

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from engine.schedule import Plan, Segment
from engine.sweep_steps import REST, rate_step, users_step
from inputs.bad_input import SettingsError, shown
from inputs.phases import MAX_PHASE_S, MAX_RATE
from shapes.kit_shape import KitShape, Pacer, Settings
from shapes.users import SteppedUsersShape, UsersShape

# Seconds each step is held unless --step-s says otherwise: enough for a few turns at 2 s each.
DEFAULT_STEP_S = 15.0
# Users mode: a step is judged this long after it ended (its last requests are in, and one
# worker report interval has brought them to the master).
JUDGE_AFTER_S = 4.0
# The most users a step may hold (each is a greenlet and a connection: far beyond one machine's
# files), and the most steps a sweep may list.
MAX_USERS = 1_000_000
MAX_STEPS = 1000
# The heading the sweeps' options appear under in ``--help``.
SWEEP_TITLE = "agent-loadkit sweeps (docs/capacity.md)"

log = logging.getLogger(__name__)


def add_sweep_options(option: Callable[..., None]) -> None:
    """The sweeps' options, each added by ``option`` (the runner's: to Locust's parser under
    SWEEP_TITLE, Locust's --help printing a custom option only under a group, and to the web
    UI's start form)."""
    option(
        "--sweep-users",
        default=None,
        help="concurrency sweep (users mode): N for 1, 2, 4, ... N, or a list like 1,4,16",
    )
    option(
        "--sweep-rates",
        default=None,
        help="arrival-rate sweep (open arrival): a list of rates per second, like 2,4,8,16",
    )
    option("--step-s", default=DEFAULT_STEP_S, help="seconds each sweep step is held")
    option("--rest-s", default=0, help="seconds of no load after a sweep (is memory given back?)")
    option(
        "--sweep-stop",
        action="store_true",
        default=False,
        help="end a sweep after the first step in which a threshold breaks (then --rest-s)",
    )


def user_steps(value: object) -> list[int]:
    """``--sweep-users`` as user counts: N means 1, 2, 4, ... up to N (N itself included)."""
    parts = _list(value, "--sweep-users", int, MAX_USERS)
    if len(parts) > 1:
        return parts
    top, steps, n = parts[0], [], 1
    while n < top:
        steps.append(n)
        n *= 2
    return [*steps, top]


def rate_steps(value: object) -> list[float]:
    """``--sweep-rates`` as rates per second, in the order given."""
    return _list(value, "--sweep-rates", float, MAX_RATE)


def step_seconds(options) -> tuple[float, float]:
    """(``--step-s``, ``--rest-s``) checked: a step above 0, a rest of 0 or more."""
    try:
        step, rest = float(options.step_s), float(options.rest_s or 0)
    except (TypeError, ValueError):
        raise SettingsError(
            "--step-s/--rest-s: not a number; give seconds, e.g. --step-s 15 --rest-s 10"
        ) from None
    if not (0 < step <= MAX_PHASE_S and 0 <= rest <= MAX_PHASE_S):
        raise SettingsError(
            f"--step-s must be above 0 and --rest-s 0 or more, both finite and at most "
            f"{MAX_PHASE_S:g} s; e.g. --step-s 15"
        )
    return step, rest


def _list(value: object, option: str, cast: type, most: float) -> list:
    try:
        parts = [cast(p) for p in str(value).split(",") if p.strip()]
    except (ValueError, OverflowError):
        raise SettingsError(
            f"{option}: {shown(value)} is not a list of numbers; e.g. 1,2,4"
        ) from None
    if len(parts) > MAX_STEPS:
        raise SettingsError(f"{option}: {len(parts)} steps; give at most {MAX_STEPS}")
    if not parts or not all(0 < p <= most for p in parts):
        raise SettingsError(
            f"{option}: {shown(value)} needs finite numbers above 0 and at most {most:g}; "
            "e.g. 1,2,4"
        )
    return parts


class BreakWatch:
    """With ``--sweep-stop``: judge each step once its requests are in, and end the sweep
    (keeping its rest step) after the first step in which a threshold breaks.

    A step is judged when every arrival it offered is recorded (open arrival), or
    JUDGE_AFTER_S after it ended (users mode, where the count is not known ahead).
    """

    def __init__(
        self, plan: Plan, users_mode: bool, on_cut: Callable[[Plan], None] | None = None
    ) -> None:
        self.plan = plan
        self._users_mode = users_mode
        self._on_cut = on_cut
        self._next = 0
        self.broke: str | None = None

    def check(self, conductor: Pacer, now: float) -> None:
        """Judge the earliest step not yet judged if it is ready; cut the plan if it broke."""
        steps = [s for s in self.plan.segments if s.name != REST]
        if self.broke is not None or self._next >= len(steps):
            return
        step = steps[self._next]
        end_s = step.closed_end_s()
        if now < end_s:
            return
        progress = conductor.progress()
        if progress is None:
            return
        # Imported here: the report's libraries load only when a sweep is judged.
        from reports.sweep import broken_thresholds

        recorded, broken = broken_thresholds(progress[0], step.name)
        waited = now >= end_s + JUDGE_AFTER_S
        if not (waited if self._users_mode else recorded >= step.closed_count() or waited):
            return
        self._next += 1
        if broken:
            self.broke = step.name
            log.info("sweep: %s broke (%s); ending the sweep", step.name, "; ".join(broken))
            conductor.change_plan(self._cut)

    def _cut(self, plan: Plan, at_s: float) -> Plan:
        self.plan = cut(plan, at_s)
        if self._on_cut is not None:
            self._on_cut(self.plan)
        return self.plan


def cut(plan: Plan, at_s: float) -> Plan:
    """The plan ending its load at ``at_s``: the step then running ends there, later steps
    go, and a rest step (if any) follows at once."""
    kept, rest = [], None
    for segment in plan.segments:
        if segment.name == REST:
            rest = segment
        elif segment.start_s < at_s:
            kept.append(replace(segment, end_s=min(segment.closed_end_s(), at_s)))
    end = kept[-1].closed_end_s()
    if rest is not None:
        first = kept[-1].first_index + kept[-1].closed_count()
        length = rest.span_s()
        kept.append(replace(rest, start_s=end, end_s=end + length, first_index=first))
    return Plan(tuple(kept))


class ConcurrencySweepShape(SteppedUsersShape):
    """Users 1, 2, 4, ... N (``--sweep-users``), each held ``--step-s``; then ``--rest-s`` idle."""

    _watch: BreakWatch | None = None

    def initial_plan(self, settings: Settings) -> Plan:
        """One zero-rate segment per user count, named ``c=<users>``."""
        options = self.options
        if options.sweep_users in (None, ""):
            raise SettingsError("--sweep-users: not set; give the top user count, e.g. 64")
        step, rest = step_seconds(options)
        steps = [(users_step(users), users, step) for users in user_steps(options.sweep_users)]
        if rest:
            steps.append((REST, 0, rest))
        plan = self._plan(settings, steps)
        self._watch = BreakWatch(plan, True, self._follow) if options.sweep_stop else None
        return plan

    def _follow(self, plan: Plan) -> None:
        """Move the steps to a cut plan's times (the rest step comes earlier)."""
        starts = {segment.name: segment.start_s for segment in plan.segments}
        self._steps = [
            dict(s, start_s=starts[s["name"]]) for s in self._steps if s["name"] in starts
        ]

    def tick(self) -> tuple | None:
        """The step's users; with --sweep-stop, each finished step judged first."""
        return _watched(super().tick(), self.conductor, self._watch)


class RateSweepShape(KitShape):
    """Arrival rates from ``--sweep-rates``, each held ``--step-s``; then ``--rest-s`` idle."""

    _watch: BreakWatch | None = None

    def initial_plan(self, settings: Settings) -> Plan:
        """One open-arrival segment per rate, named ``rate=<r>/s``."""
        options = self.options
        if options.sweep_rates in (None, ""):
            raise SettingsError("--sweep-rates: not set; give the rates, e.g. 2,4,8,16")
        step, rest = step_seconds(options)
        segments, start, first = [], 0.0, 0
        for rate in rate_steps(options.sweep_rates):
            segment = Segment(rate_step(rate), rate, start, start + step, first, "sweep step")
            segments.append(segment)
            first += segment.closed_count()
            start += step
        if rest:
            segments.append(Segment(REST, 0.0, start, start + rest, first, "no load"))
        plan = Plan(tuple(segments))
        self._watch = BreakWatch(plan, False) if options.sweep_stop else None
        return plan

    def tick(self) -> tuple[int, float] | None:
        """Keep running until the conductor says; with --sweep-stop, judge each finished step."""
        return _watched(super().tick(), self.conductor, self._watch)


Answer = TypeVar("Answer")


def _watched(answer: Answer, conductor: Pacer | None, watch: BreakWatch | None) -> Answer:
    """A sweep's tick answer, each finished step judged first (--sweep-stop) while it runs."""
    now = conductor.now() if conductor is not None else None
    if answer is not None and now is not None and conductor is not None and watch is not None:
        watch.check(conductor, now)
    return answer


def capacity_shape_class(options) -> type | None:
    """The shape a capacity option asks for, or None: a sweep, or users mode for ``-u``."""
    if getattr(options, "sweep_users", None):
        return ConcurrencySweepShape
    if getattr(options, "sweep_rates", None):
        return RateSweepShape
    if getattr(options, "num_users", None):
        return UsersShape
    return None
