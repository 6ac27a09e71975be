"""Users-mode shapes: a number of closed-loop users, held; or users 1, 2, 4, ... each held a step.

Both hand the conductor a plan of zero-rate segments (one per step, named by
its user count), so every request is filed under the step it was sent in and
the reports read a users run like any other; and both ask Locust for the
step's users, spread over the workload classes by weight: the runner's User class
per workload (runner/users.py), which ``choose_shape`` hands them.
Users mode never offers open arrivals: the plan's rate is 0 by construction.

A small share can get no user at all (Locust gives whole users by weight: at
the default mix trigger_fire's 3% gets its first at 16). That warns, in one
line before load naming the workloads and the count that fixes it, and the run
goes on: run.json records them per step and the report shows them as not
offered. It does not refuse, because too few users is what exploring looks
like (10 users in the web UI to see how the platform feels) and what a
concurrency sweep's first steps are by design (1, 2, 4 users); a headless run
gets the same warning on the console and the same "not offered" in its report,
and its verdict calls their checks inconclusive (exit 2 unless something else
failed): not a pass, and not a failure of the platform.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from locust import User

# Locust's own order of handing out weighted users (pinned locust==2.47.0): the only way to
# know which workload gets its first user at which count is to ask the same generator.
from locust.dispatch import _kl_generator

from engine.run_record import USERS, UsersStep
from engine.schedule import Plan, Segment
from inputs.bad_input import SettingsError
from inputs.scenario import Scenario
from shapes.kit_shape import KitShape, Settings

# Locust ticks a shape about once a second; a step's users are counted after this long.
SETTLE_S = 1.5

log = logging.getLogger(__name__)


class UsersShape(KitShape):
    """``-u`` closed-loop users at ``-r`` per second, for ``--run-time`` or until stopped.

    The web UI's Users and spawn-rate fields drive it (``use_common_options``),
    and a change there takes effect at the next tick.
    """

    mode = USERS
    use_common_options = True
    # The runner's User class per workload (runner.users.USER_CLASSES), set by choose_shape.
    user_classes: Mapping[str, type[User]] = {}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._classes: dict[str, type[User]] | None = None
        self._mix: dict[str, float] = {}
        self._steps: list[dict] = []

    def initial_plan(self, settings: Settings) -> Plan:
        """One open (or ``--run-time``-long) step at ``-u`` users."""
        users = self._option_users()
        if settings.rate is not None:
            raise SettingsError(
                "-u/--users and --rate: a run is in one mode; drop --rate for users mode "
                "or -u for open arrival"
            )
        run_time = self.options.run_time
        steps = [(f"users={users}", users, float(run_time) if run_time else None)]
        return self._plan(settings, steps)

    def _option_users(self) -> int:
        users = getattr(self.options, "num_users", None)
        if not isinstance(users, int) or users < 1:
            raise SettingsError(
                f"-u/--users: {users!r}; users mode needs at least one user, e.g. -u 20 -r 5"
            )
        return users

    def _plan(self, settings: Settings, steps: Sequence[tuple[str, int, float | None]]) -> Plan:
        """Zero-rate segments for (name, users, seconds) steps; the classes weighted by the mix.

        Users being stopped finish their request first (Locust's stop timeout set to the
        slowest workload timeout), so a step's end never cuts a request short.
        """
        self._classes = weighted_classes(self.user_classes, settings.scenario)
        self._mix = settings.scenario.mix
        self.locust.environment.stop_timeout = settings.scenario.timeouts.slowest_s
        segments, start = [], 0.0
        self._steps = []
        for name, users, seconds in steps:
            end = None if seconds is None else start + seconds
            reason = f"closed loop: {users} user{'' if users == 1 else 's'}"
            segments.append(Segment(name, 0.0, start, end, 0, reason))
            self._steps.append(
                {
                    "name": name,
                    "users": users,
                    "start_s": start,
                    "classes": {},
                    "unserved": unserved(self._classes, users),
                }
            )
            start = end if end is not None else start
        return Plan(tuple(segments))

    def after_preflight(self, scenario: Scenario) -> None:
        """Weight only the workloads preflight kept (a skipped one's users would only idle),
        and warn in one line if a step's users leave a workload without any."""
        self._classes = weighted_classes(self.user_classes, scenario)
        self._mix = scenario.mix
        for step in self._steps:
            step["unserved"] = unserved(self._classes, step["users"])
        self._warn_unserved()

    def _warn_unserved(self) -> None:
        """The one line: which workloads get no user at ``-u``, and the count that fixes it."""
        step = self._steps[0] if self._steps else None
        if step is not None and step["unserved"]:
            where = f"users mode, -u {step['users']}"
            fix = "-u {users} or more offers every workload"
            log.warning(unserved_line(where, step["unserved"], self._mix, fix))

    def users_at(self, now: float) -> int:
        """Users wanted at run time ``now``: the step's count (the last step's after the end)."""
        step = self._step_at(now)
        if step is None:
            return 0
        if len(self._steps) == 1 and not isinstance(self, SteppedUsersShape):
            wanted = getattr(self.options, "num_users", None)
            changed_to = wanted if isinstance(wanted, int) and wanted >= 0 else step["users"]
            if changed_to != step["users"] and self._classes is not None:
                missing = unserved(self._classes, changed_to)
                step["users"], changed = changed_to, missing != step["unserved"]
                step["unserved"] = missing
                if changed:
                    self._warn_unserved()
        return step["users"]

    def _step_at(self, now: float) -> dict | None:
        return next((s for s in reversed(self._steps) if s["start_s"] <= now), None)

    def spawn_rate(self, users: int) -> float:
        """The operator's ``-r`` (Locust's default 1 if not given)."""
        rate = getattr(self.options, "spawn_rate", None)
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
        return users, self.spawn_rate(users), list(self._classes.values())

    def _note_classes(self, now: float) -> None:
        """Keep the users of each class last seen in the step, from its second second on
        (a tick reads the counts before Locust has applied the step's change)."""
        step = self._step_at(now)
        if step is None or now - step["start_s"] < SETTLE_S:
            return
        runner = self.locust
        # A master counts what its workers report; a local runner counts its own users.
        counts = getattr(runner, "reported_user_classes_count", None) or runner.user_classes_count
        step["classes"] = {name: count for name, count in counts.items() if count}

    def users_record(self) -> list[UsersStep]:
        """Per step: its name, users asked for, start, the users of each class seen, and the
        workloads its users left without one (each with the count that gives it one)."""
        return [
            UsersStep(s["name"], s["users"], s["start_s"], dict(s["classes"]), dict(s["unserved"]))
            for s in self._steps
        ]


class SteppedUsersShape(UsersShape):
    """Base of the concurrency sweep: fixed steps, ramped within a second each."""

    abstract = True

    def _warn_unserved(self) -> None:
        """One line for the whole sweep: the steps that leave workloads without a user."""
        short = [s for s in self._steps if s["unserved"]]
        if not short:
            return
        missing: dict[str, int] = {}
        for step in short:
            missing.update(step["unserved"])
        where = "concurrency sweep, steps " + ", ".join(s["name"] for s in short)
        fix = "steps of {users} users or more offer every workload"
        log.warning(unserved_line(where, missing, self._mix, fix))

    def spawn_rate(self, users: int) -> float:
        """Fast enough to reach any step's users, or to stop them all, within about a second."""
        most = max((s["users"] for s in self._steps), default=1)
        return max(super().spawn_rate(users), float(most), 1.0)


# Locust weights are integers in spirit: shares become weights with this resolution.
WEIGHT_SCALE = 1000


def weighted_classes(
    classes: Mapping[str, type[User]], scenario: Scenario
) -> dict[str, type[User]]:
    """Set each workload's class's weight to its share; the classes with a positive share."""
    chosen = {}
    for name, cls in classes.items():
        cls.weight = max(0, round(scenario.mix.get(name, 0.0) * WEIGHT_SCALE))
        if cls.weight > 0:
            chosen[name] = cls
    return chosen


def first_user_counts(classes: Mapping[str, type[User]]) -> dict[str, int]:
    """Per workload of ``classes``: the user count at which Locust gives it its first user.

    Locust hands out whole users in one fixed order over the weights (the same for
    one process or many workers), so a small share gets none below this count.
    """
    weights = sorted((cls.__name__, cls.weight) for cls in classes.values() if cls.weight > 0)
    workload = {cls.__name__: name for name, cls in classes.items()}
    order = _kl_generator(weights)
    first: dict[str, int] = {}
    count = 0
    while len(first) < len(weights):
        count += 1
        name = next(order)
        if name is not None:
            first.setdefault(workload[name], count)
    return first


def unserved(classes: Mapping[str, type[User]], users: int) -> dict[str, int]:
    """Workloads that get no user among ``users``, each with the smallest count giving it one."""
    if users < 1:
        return {}
    return {name: n for name, n in first_user_counts(classes).items() if n > users}


def unserved_line(where: str, missing: dict[str, int], mix: dict[str, float], fix: str) -> str:
    """One line, before load: which workloads get no user ``where``, and the count that fixes it."""
    names = sorted(missing, key=lambda name: (missing[name], name))
    listed = ", ".join(f"{name} ({mix.get(name, 0.0):.1%})" for name in names)
    needs = ", ".join(f"{name} needs {missing[name]}" for name in names)
    return (
        f"{where}: {listed} get no user, so they are not offered and their checks will be "
        f"inconclusive (Locust gives whole users by weight); {needs} users; the fix: "
        f"{fix.format(users=max(missing.values()))}"
    )
