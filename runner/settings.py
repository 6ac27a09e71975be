"""The validated settings a run is made from, read from its options (runner/options.py
declares them) and the scenario and fixture they name.

Every option is checked before any load is offered, and a bad one stops the run
with one line naming the option (or the scenario/fixture field) and the fix. The
web UI can change options between runs, so the same check runs again when a test
starts. The password is never an option: ``ps`` would show it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from engine.agent_plan import plan_problem
from engine.content_coding import DEFAULT_ACCEPT
from engine.dataset import SAMPLES
from engine.limits import process_connection_limit, two_socket_share
from engine.samples import SAMPLES_FILE
from engine.serve import CHAT
from engine.sign_in import secret_for
from engine.trust import Trust, TrustError, trust_from
from inputs.bad_input import BadInput, SettingsError, shown
from inputs.fixture import Fixture, FixtureError, load_fixture, url_problem
from inputs.scenario import Scenario, ScenarioError, load_scenario
from probes import ProbeOptions
from runner.options import (
    ACCEPT_ENCODING,
    API_PID,
    CA_FILE,
    CONNECTIONS,
    DATABASE_URL,
    DATABASE_URL_ENV,
    DATABASE_URL_FILE,
    EMAIL,
    FIXTURE,
    FOLLOW_UP_GRACE,
    INSECURE,
    METRICS_URL,
    PLATFORM_LOG,
    RATE,
    REST_S,
    RUN_DIR,
    SCALE,
    SCENARIO,
    STEP_S,
    STUB_URL,
    SWEEP_RATES,
    SWEEP_STOP,
    SWEEP_USERS,
    TOPOLOGY,
)
from workloads.check import contract_problems
from workloads.platforms import PlatformError, names, platform_of

RUNS_DIR = Path("runs")
# What an input read on its own returns (settings_from's _read).
T = TypeVar("T")
# The files a run creates in its directory (the samples are checked on their own: a finished
# run), and those of runs written before the dataset (engine/dataset.py).
RUN_FILE_NAMES = (
    "run.json",
    "run.json.partial",
    "probes",
    "faults",
    "followups.parquet",
    "stub_calls.parquet",
    "probes.csv",
    "followups.csv",
    "stub_calls.csv",
    "locust_stats.csv",
    "locust_failures.csv",
    "locust_exceptions.csv",
)


def run_stamp() -> str:
    """Now, in UTC, as run directories are named: sortable, and the same on every host."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


# Everything that means "bad input, refuse before load" with a one-line message.
BAD_INPUT = (SettingsError, ScenarioError, FixtureError)


@dataclass(frozen=True)
class Sweep:
    """A sweep's options, read (shapes/sweep.py runs the sweep; its protocol is
    shapes.kit_shape.SweepSettings)."""

    # The users of each step of a concurrency sweep, or None.
    users: tuple[int, ...] | None
    # The arrival rate of each step of a rate sweep, or None.
    rates: tuple[float, ...] | None
    step_s: float
    # Seconds of no load after the steps (0: none).
    rest_s: float
    # End the sweep after the first step in which a threshold breaks.
    stop: bool


@dataclass(frozen=True)
class RunSettings:
    """What a run is made from, after every option was checked."""

    scenario: Scenario
    scale: float
    connections: int
    connections_needed: int
    run_dir: Path | None
    fixture: Fixture
    host: str
    email: str
    topology: str
    rate: float | None
    probes: ProbeOptions
    sweep: Sweep
    connections_note: str = ""
    # Seconds the follow-up of accepted work may take after the run (the slowest timeout
    # unless --follow-up-grace says otherwise).
    follow_up_grace_s: float = 0.0
    # The scenario before --scale, which the fix for a plan too small to judge is scaled from.
    unscaled: Scenario | None = None
    # Whether --connections was given; if not, it follows the scenario the run offers.
    connections_given: bool = False
    # The platform's log, when the kit started the platform and can read what it writes.
    platform_log: Path | None = None
    # The Accept-Encoding every request of the load sends (the codings the kit decodes).
    accept_encoding: str = DEFAULT_ACCEPT
    # The TLS certificates every connection of the run trusts (--ca-file, --insecure).
    trust: Trust = field(default_factory=Trust)


def settings_from(
    options, host: str | None, used_run_dirs: frozenset[Path] = frozenset()
) -> RunSettings:
    """Validated settings from parsed options (and the host Locust or the web UI holds).

    A ``--run-dir`` in ``used_run_dirs`` (an earlier test of this web-UI session wrote it) is
    not checked: the next test gets a directory of its own beside it (Conductor._run_dir).

    The options' numbers, the fixture and the scenario are read first, each on its own, and
    every problem any of them has is raised at once; what depends on them comes after."""
    found: list[BadInput] = []
    scale = _read(found, lambda: SCALE.value(options))
    rate = _read(found, lambda: RATE.value(options))
    connections_given = _read(found, lambda: CONNECTIONS.value(options))
    api_pid = _read(found, lambda: API_PID.value(options))
    grace_given = _read(found, lambda: FOLLOW_UP_GRACE.value(options))
    sweep = _read(found, lambda: sweep_from(options))
    fixture = _read(found, lambda: load_fixture(FIXTURE.value(options)))
    written = _read(found, lambda: load_scenario(SCENARIO.value(options)))
    if found:
        raise found[0] if len(found) == 1 else SettingsError([p for e in found for p in e.problems])
    assert scale is not None and sweep is not None and fixture is not None and written is not None
    try:
        record = platform_of(fixture)
    except PlatformError as exc:
        raise SettingsError(f"fixture.platform: {exc} (or seed again)") from None
    if broken := contract_problems(record):
        raise SettingsError(
            f"platform {record.name}: {broken[0]}; loadkit check-platform {record.name} says all"
        )
    if unknown := sorted(written.platforms_named - set(names())):
        raise SettingsError(
            f"scenario: per_platform names {', '.join(map(shown, unknown))}, not a platform this "
            f"kit found; use one of {', '.join(names())}"
        )
    unscaled = written.for_platform(fixture.platform, record.not_offered)
    if not set(unscaled.offered) & set(record.offers):
        raise SettingsError(
            f"scenario: offers none of what {fixture.platform} offers "
            f"({', '.join(record.offers)}); give one of them a share"
        )
    if problem := plan_problem(unscaled, fixture.platform, record.tool):
        raise SettingsError(problem)
    scenario = unscaled.scaled(scale)
    needed = scenario.connections_needed(rate)
    if host and (problem := url_problem(host)):
        raise SettingsError(f"--host: {problem}")
    secret_for(record.credential(record.seeded_from(fixture)))
    run_dir = RUN_DIR.value(options)
    if run_dir not in used_run_dirs:
        check_new_run_dir(run_dir or RUNS_DIR)
    accept_encoding = ACCEPT_ENCODING.value(options)
    try:
        trust = trust_from(CA_FILE.value(options), INSECURE.value(options))
    except TrustError as exc:
        raise SettingsError(str(exc)) from None
    platform_log = PLATFORM_LOG.value(options)
    return RunSettings(
        scenario=scenario,
        scale=scale,
        connections=needed if connections_given is None else connections_given,
        connections_needed=needed,
        run_dir=run_dir,
        fixture=fixture,
        host=(host or fixture.api_url).rstrip("/"),
        email=EMAIL.value(options),
        topology=TOPOLOGY.value(options),
        rate=rate,
        follow_up_grace_s=scenario.timeouts.slowest_s if grace_given is None else grace_given,
        probes=ProbeOptions(
            api_pid=api_pid,
            database_url=probe_database_url(options),
            metrics_url=METRICS_URL.value(options),
            stub_url=STUB_URL.value(options) or fixture.stub_url or None,
        ),
        unscaled=unscaled,
        connections_given=connections_given is not None,
        platform_log=platform_log,
        accept_encoding=accept_encoding,
        trust=trust,
        sweep=sweep,
    )


def sweep_from(options) -> Sweep:
    """The sweep's options, read (every one, so a bad one is refused before any load)."""
    return Sweep(
        users=SWEEP_USERS.value(options),
        rates=SWEEP_RATES.value(options),
        step_s=STEP_S.value(options),
        rest_s=REST_S.value(options),
        stop=SWEEP_STOP.value(options),
    )


def offering(settings: RunSettings, scenario: Scenario) -> RunSettings:
    """The settings for the scenario the run offers after preflight (a workload it skipped
    is at share 0): the connection bound re-sized to it unless --connections was given."""
    needed = scenario.connections_needed(settings.rate)
    connections = settings.connections if settings.connections_given else needed
    return replace(settings, scenario=scenario, connections=connections, connections_needed=needed)


def bound_connections(settings: RunSettings, processes: int) -> RunSettings:
    """The settings with ``connections`` capped at what ``processes`` like this one can hold.

    A cap turns the excess into late arrivals (the dispatcher waits for a slot), never
    into the generator's own OSErrors; ``connections_note`` says so in one line when it binds.
    """
    scenario = settings.scenario
    two = two_socket_share(scenario.mix.get(CHAT, 0.0), scenario.chat_cancel_share)
    hold = process_connection_limit(-(-settings.connections // processes), two)
    most = hold.arrivals * processes
    if settings.connections <= most:
        return settings
    note = (
        f"--connections: {settings.connections} concurrent requests (the schedule needs "
        f"{settings.connections_needed}) are more than {processes} load process(es) like "
        f"this one can hold ({hold.short_because}); capped at {most}, so arrivals beyond "
        "that wait and show as lateness"
    )
    return replace(settings, connections=most, connections_note=note)


def check_new_run_dir(run_dir: Path) -> Path:
    """The directory, if a new run can be written there: not a file, not a finished run, none
    of the run's files (or a symlink in their place) there yet, and creatable (its nearest
    existing parent is a writable directory). Checked before preflight, so a bad path costs one
    line, not a sign-in and a traceback."""
    if run_dir.exists() and not run_dir.is_dir():
        raise SettingsError(f"--run-dir: {run_dir} is a file; pass a directory (new or empty)")
    names = (SAMPLES.name, SAMPLES_FILE, *RUN_FILE_NAMES)
    for link in (run_dir / name for name in names if (run_dir / name).is_symlink()):
        raise SettingsError(
            f"--run-dir: {link} is a symlink; a run creates its files new and never writes "
            "through a link: pass a new or empty directory"
        )
    if (run_dir / SAMPLES.name).exists() or (run_dir / SAMPLES_FILE).exists():
        raise SettingsError(f"--run-dir: {run_dir} already holds a run; pass a new directory")
    for there in (run_dir / name for name in RUN_FILE_NAMES if (run_dir / name).exists()):
        raise SettingsError(f"--run-dir: {there} is already there; pass a new or empty directory")
    parent = next(p for p in (run_dir.absolute(), *run_dir.absolute().parents) if p.exists())
    if not parent.is_dir():
        raise SettingsError(
            f"--run-dir: {parent} is a file, so {run_dir} cannot be made; pass another path"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SettingsError(f"--run-dir: cannot write in {parent}; pass a writable path")
    return run_dir


def probe_database_url(options) -> str | None:
    """The database URL the Postgres probe reads: --database-url-file, else $DATABASE_URL, else
    --database-url, which is refused if it carries a password (argv is public: ``ps``)."""
    path = DATABASE_URL_FILE.value(options)
    if path:
        try:
            url = Path(path).read_text().strip()
        except OSError as exc:
            raise SettingsError(
                f"{DATABASE_URL_FILE.name}: cannot read {path} ({exc.strerror}); give a "
                "readable file"
            ) from None
        if not url:
            raise SettingsError(
                f"{DATABASE_URL_FILE.name}: {path} is empty; put the URL on one line"
            )
        return url
    if os.environ.get(DATABASE_URL_ENV):
        return os.environ[DATABASE_URL_ENV]
    given = DATABASE_URL.value(options)
    if given and urlsplit(given).password:
        raise SettingsError(
            f"{DATABASE_URL.name}: carries a password, which ps would show; export "
            f"{DATABASE_URL_ENV}=... or pass {DATABASE_URL_FILE.name} (or set PGPASSWORD)"
        )
    return given


def refuse_users_options(options) -> None:
    """-u/--users starts users mode (runner/users.py); without it, -r/--spawn-rate means
    nothing, nor --run-time to the four phases: refuse them with the reason instead of
    ignoring them."""
    users = getattr(options, "num_users", None) is not None
    if getattr(options, "spawn_rate", None) is not None and not users:
        raise SettingsError(
            "-r/--spawn-rate: only users mode (-u N) spawns users; give -u too, or give --rate "
            "(arrivals per second) or let the scenario's phases run"
        )
    if getattr(options, "run_time", None) and not users and RATE.value(options) is None:
        raise SettingsError(
            "--run-time: the scenario's phases end the run themselves; shorten them with "
            "--scale, or give --rate (or -u) for a load that --run-time ends"
        )


def with_host(fixture: Fixture, host: str) -> Fixture:
    """The fixture as the run sees it: the deployment at ``host``."""
    return replace(fixture, api_url=host)


def _read(found: list[BadInput], read: Callable[[], T]) -> T | None:
    """``read()``, or None with its bad input added to ``found``."""
    try:
        return read()
    except BadInput as exc:
        found.append(exc)
        return None
