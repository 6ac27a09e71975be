"""The generator's command-line options, and the validated settings a run is made from.

Every option is checked before any load is offered, and a bad one stops the run
with one line naming the option (or the scenario/fixture field) and the fix. The
web UI can change options between runs, so the same check runs again when a test
starts. The password is never an option: ``ps`` would show it.
"""

from __future__ import annotations

import contextlib
import math
import resource
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import psutil

from engine.samples import SAMPLES_FILE
from probes import ProbeOptions
from scenario import Scenario, ScenarioError, load_scenario
from workloads.fixture import (
    DEFAULT_EMAIL,
    Fixture,
    FixtureError,
    load_fixture,
    password_from_env,
)

RUNS_DIR = Path("runs")

# File descriptors a load process keeps for everything but its connections (Python,
# Locust's own sockets, logs, the run's files, /proc reads of its probes).
FD_RESERVE = 128
# Memory one concurrent arrival may cost, generously: two sockets' kernel buffers and a greenlet.
ARRIVAL_BYTES = 256 * 1024


def run_stamp() -> str:
    """Now, in UTC, as run directories are named: sortable, and the same on every host."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


class SettingsError(ValueError):
    """An option is wrong; the message names it and the fix."""


# Everything that means "bad input, refuse before load" with a one-line message.
BAD_INPUT = (SettingsError, ScenarioError, FixtureError)


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
    connections_note: str = ""


def add_options(parser) -> None:
    """Register the generator's options on Locust's parser (they also show in the web UI).

    On the parser itself, not a group: only Locust's own ``add_argument`` knows ``is_secret``.
    Numbers are checked by ``settings_from``, not argparse, so a bad one is our one line.
    """
    group = parser
    group.add_argument("--scenario", default="scenario.yaml", help="scenario file (YAML)")
    group.add_argument(
        "--scale", default=1.0, help="multiply phase durations (never rates) by this"
    )
    group.add_argument(
        "--connections",
        default=None,
        help="bound on concurrent requests, all processes together "
        "(default: peak rate x slowest timeout)",
    )
    group.add_argument(
        "--run-dir", default=None, help="run directory (default: runs/<UTC timestamp>)"
    )
    group.add_argument("--fixture", default="fixture.json", help="fixture written by the seed")
    group.add_argument(
        "--email", default=DEFAULT_EMAIL, help="user to sign in as (password: LOAD_PASSWORD)"
    )
    group.add_argument("--topology", default="", help="free text: where each part ran")
    group.add_argument(
        "--rate",
        default=None,
        help="arrivals per second at a constant rate instead of the scenario's phases "
        "(the web UI's shape; change it while running at /arrival-rate)",
    )
    group.add_argument("--api-pid", default=None, help="probe this API process")
    group.add_argument(
        "--database-url", default=None, is_secret=True, help="probe Postgres connections"
    )
    group.add_argument("--metrics-url", default=None, help="probe a Prometheus endpoint")
    group.add_argument(
        "--stub-url", default=None, help="probe the stub's /stats (default: the fixture's stub)"
    )


def settings_from(options, host: str | None) -> RunSettings:
    """Validated settings from parsed options (and the host Locust or the web UI holds)."""
    scale = _number(options.scale, "--scale", float)
    scenario = load_scenario(options.scenario).scaled(scale)
    rate = None if options.rate in (None, "") else _number(options.rate, "--rate", float)
    peak = max(scenario.peak_rate, rate or 0.0)
    needed = math.ceil(peak * scenario.timeouts.slowest_s)
    if options.connections in (None, ""):
        connections = needed
    else:
        connections = int(_number(options.connections, "--connections", int))
    fixture = load_fixture(options.fixture)
    password_from_env()
    run_dir = Path(options.run_dir) if options.run_dir else None
    api_pid = options.api_pid
    if api_pid not in (None, ""):
        api_pid = int(_number(api_pid, "--api-pid", int))
    return RunSettings(
        scenario=scenario,
        scale=scale,
        connections=connections,
        connections_needed=needed,
        run_dir=run_dir,
        fixture=fixture,
        host=(host or fixture.api_url).rstrip("/"),
        email=options.email,
        topology=options.topology or "",
        rate=rate,
        probes=ProbeOptions(
            api_pid=api_pid or None,
            database_url=options.database_url or None,
            metrics_url=options.metrics_url or None,
            stub_url=options.stub_url or fixture.stub_url or None,
        ),
    )


def raise_open_files_limit() -> int:
    """Raise this process's open-files limit to its hard maximum; the limit now in force.

    Every concurrent arrival holds a socket, and the soft limit (often 1024) is a
    default, not a decision: running into it turns a lagging server into the
    generator's own ``OSError: Too many open files``.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def process_connection_limit() -> int:
    """The most concurrent arrivals this process can hold without running out of files or memory.

    An arrival in flight holds at most one socket and the transport keeps at most as
    many idle keep-alive ones, so half the descriptors left after FD_RESERVE; and no
    more than the available memory pays for at ARRIVAL_BYTES each.
    """
    by_files = (raise_open_files_limit() - FD_RESERVE) // 2
    by_memory = psutil.virtual_memory().available // ARRIVAL_BYTES
    return max(1, min(by_files, by_memory))


def bound_connections(settings: RunSettings, processes: int) -> RunSettings:
    """The settings with ``connections`` capped at what ``processes`` like this one can hold.

    A cap turns the excess into late arrivals (the dispatcher waits for a slot), never
    into the generator's own OSErrors; ``connections_note`` says so in one line when it binds.
    """
    most = process_connection_limit() * processes
    if settings.connections <= most:
        return settings
    note = (
        f"--connections: {settings.connections} concurrent requests (the schedule needs "
        f"{settings.connections_needed}) are more than {processes} load process(es) can hold "
        f"with {raise_open_files_limit()} open files each; capped at {most}, so arrivals "
        "beyond that wait and show as lateness"
    )
    return replace(settings, connections=most, connections_note=note)


def check_new_run_dir(run_dir: Path) -> Path:
    """The directory, unless it already holds a run's samples (never append to a finished run)."""
    if (run_dir / SAMPLES_FILE).exists():
        raise SettingsError(f"--run-dir: {run_dir} already holds a run; pass a new directory")
    return run_dir


def with_host(fixture: Fixture, host: str) -> Fixture:
    """The fixture as the run sees it: the deployment at ``host``."""
    return replace(fixture, api_url=host)


def _number(value: object, option: str, cast: type) -> float:
    try:
        number = cast(value)
    except (TypeError, ValueError):
        raise SettingsError(f"{option}: {value!r} is not a number; give e.g. {option} 2") from None
    if not (math.isfinite(number) and number > 0):
        raise SettingsError(f"{option}: {value!r} must be above 0")
    return number
