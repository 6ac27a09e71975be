"""Users-mode shapes: a number of closed-loop users, held; or users 1, 2, 4, ... each held a step.

Both hand the conductor a plan of zero-rate segments (one per step, named by
its user count), so every request is filed under the step it was sent in and
the reports read a users run like any other; and both ask Locust for the
step's users, spread over the workload classes by weight (engine/users.py).
Users mode never offers open arrivals: the plan's rate is 0 by construction.
"""

from __future__ import annotations

from engine.schedule import Plan, Segment
from engine.settings import RunSettings, SettingsError
from engine.users import USERS, weighted_classes
from shapes.kit_shape import KitShape

# Locust ticks a shape about once a second; a step's users are counted after this long.
SETTLE_S = 1.5


class UsersShape(KitShape):
    """``-u`` closed-loop users at ``-r`` per second, for ``--run-time`` or until stopped.

    The web UI's Users and spawn-rate fields drive it (``use_common_options``),
    and a change there takes effect at the next tick.
    """

    mode = USERS
    use_common_options = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._classes: list | None = None
        self._steps: list[dict] = []

    def initial_plan(self, settings: RunSettings) -> Plan:
        """One open (or ``--run-time``-long) step at ``-u`` users."""
        users = self._option_users()
        if settings.rate is not None:
            raise SettingsError(
                "-u/--users and --rate: a run is in one mode; drop --rate for users mode "
                "or -u for open arrival"
            )
        run_time = self.runner.environment.parsed_options.run_time
        steps = [(f"users={users}", users, float(run_time) if run_time else None)]
        return self._plan(settings, steps)

    def _option_users(self) -> int:
        users = getattr(self.runner.environment.parsed_options, "num_users", None)
        if not isinstance(users, int) or users < 1:
            raise SettingsError(
                f"-u/--users: {users!r}; users mode needs at least one user, e.g. -u 20 -r 5"
            )
        return users

    def _plan(self, settings: RunSettings, steps: list[tuple[str, int, float | None]]) -> Plan:
        """Zero-rate segments for (name, users, seconds) steps; the classes weighted by the mix.

        Users being stopped finish their request first (Locust's stop timeout set to the
        slowest workload timeout), so a step's end never cuts a request short.
        """
        self._classes = weighted_classes(settings.scenario)
        self.runner.environment.stop_timeout = settings.scenario.timeouts.slowest_s
        segments, start = [], 0.0
        self._steps = []
        for name, users, seconds in steps:
            end = None if seconds is None else start + seconds
            reason = f"closed loop: {users} users"
            segments.append(Segment(name, 0.0, start, end, 0, reason))
            self._steps.append({"name": name, "users": users, "start_s": start, "classes": {}})
            start = end if end is not None else start
        return Plan(tuple(segments))

    def users_at(self, now: float) -> int:
        """Users wanted at run time ``now``: the step's count (the last step's after the end)."""
        step = self._step_at(now)
        if step is None:
            return 0
        if len(self._steps) == 1 and not isinstance(self, SteppedUsersShape):
            wanted = getattr(self.runner.environment.parsed_options, "num_users", None)
            if isinstance(wanted, int) and wanted >= 0 and wanted != step["users"]:
                step["users"] = wanted
        return step["users"]

    def _step_at(self, now: float) -> dict | None:
        return next((s for s in reversed(self._steps) if s["start_s"] <= now), None)

    def spawn_rate(self, users: int) -> float:
        """The operator's ``-r`` (Locust's default 1 if not given)."""
        rate = getattr(self.runner.environment.parsed_options, "spawn_rate", None)
        return float(rate) if rate else 1.0

    def tick(self) -> tuple | None:
        """The conductor's answer, with this step's users once the run has started."""
        state = super().tick()
        if state is None or self.conductor is None:
            return state
        now = self.conductor.now()
        if now is None or self._classes is None or now < 0:
            return state
        users = self.users_at(now)
        self._note_classes(now)
        return users, self.spawn_rate(users), self._classes

    def _note_classes(self, now: float) -> None:
        """Keep the users of each class last seen in the step, from its second second on
        (a tick reads the counts before Locust has applied the step's change)."""
        step = self._step_at(now)
        if step is None or now - step["start_s"] < SETTLE_S:
            return
        runner = self.runner
        # A master counts what its workers report; a local runner counts its own users.
        counts = getattr(runner, "reported_user_classes_count", None) or runner.user_classes_count
        step["classes"] = {name: count for name, count in counts.items() if count}

    def users_record(self) -> list[dict]:
        """Per step: its name, users asked for, start, and the users of each class seen."""
        return [dict(s, classes=dict(s["classes"])) for s in self._steps]


class SteppedUsersShape(UsersShape):
    """Base of the concurrency sweep: fixed steps, ramped within a second each."""

    abstract = True

    def spawn_rate(self, users: int) -> float:
        """Fast enough to reach any step's users, or to stop them all, within about a second."""
        most = max((s["users"] for s in self._steps), default=1)
        return max(super().spawn_rate(users), float(most), 1.0)
