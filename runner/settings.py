"""The generator's command-line options, and the validated settings a run is made from.

Every option is checked before any load is offered, and a bad one stops the run
with one line naming the option (or the scenario/fixture field) and the fix. The
web UI can change options between runs, so the same check runs again when a test
starts. The password is never an option: ``ps`` would show it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from engine.agent_plan import plan_problem
from engine.content_coding import ACCEPTABLE, DEFAULT_ACCEPT, accept_problem
from engine.dataset import SAMPLES
from engine.limits import process_connection_limit, two_socket_share
from engine.samples import SAMPLES_FILE
from engine.serve import CHAT
from engine.sign_in import secret_for
from engine.trust import CA_FILE_HELP, INSECURE_HELP, Trust, TrustError, trust_from
from inputs.bad_input import BadInput, SettingsError, shown
from inputs.fixture import (
    DEFAULT_EMAIL,
    Fixture,
    FixtureError,
    load_fixture,
    url_problem,
)
from inputs.phases import MAX_RATE
from inputs.scenario import Scenario, ScenarioError, load_scenario
from probes import ProbeOptions
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
# The probe's database URL comes from here (or --database-url-file), never from argv: it
# usually carries a password. The name is the platform's own, so one export serves both.
DATABASE_URL_ENV = "DATABASE_URL"
# How long a headless master waits for --expect-workers before it gives up (exit 2).
DEFAULT_WORKER_WAIT_S = 120.0
# How long the master keeps serving a run's final metrics before it exits: Prometheus's
# default scrape interval, so the next scrape after the end sees every sample.
DEFAULT_PROMETHEUS_LINGER_S = 15.0
# Where --prometheus binds when it names only a port: this machine alone can scrape it.
LOOPBACK = "127.0.0.1"
# The heading the kit's options appear under in ``locust --help``.
OPTIONS_TITLE = "agent-loadkit (open arrival; docs/operator-guide.md 'Generator')"

# Bounds of the numeric options (the scenario's own numbers are bounded in inputs/scenario.py):
# --scale stretches a phase at most this much (the scaled phase is bounded again there),
MAX_SCALE = 1000.0
# --connections: each holds a socket, so more than this is more than any machine's files,
MAX_CONNECTIONS = 10_000_000
# --api-pid: Linux's largest possible PID (PID_MAX_LIMIT on 64-bit).
PID_MAX_LIMIT = 4_194_304
# --follow-up-grace: a day; a platform that has not done accepted work by then has lost it.
MAX_FOLLOW_UP_GRACE_S = 86_400.0


def run_stamp() -> str:
    """Now, in UTC, as run directories are named: sortable, and the same on every host."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


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


def locust_option(group, *names: str, web: bool = True, **kwargs) -> None:
    """Add one of the kit's options to ``group`` of Locust's parser: argparse's add_argument,
    and the attributes Locust's web UI reads (in its start form unless ``web`` is False;
    never a secret, required or repeated). A default that is a value is said in its help
    (``--help`` and the form's label show the help as written, so not as %(default)s)."""
    default = kwargs.get("default")
    if not (default is None or default is False or default == "") and "help" in kwargs:
        shown = f"{default:g}" if isinstance(default, float) else str(default)
        kwargs["help"] = f"{kwargs['help']} (default {shown})"
    action = group.add_argument(*names, **kwargs)
    action.include_in_web_ui, action.is_secret = web, False
    action.is_required, action.is_multiple = False, False


def add_options(parser) -> None:
    """Register the generator's options on Locust's parser, shown in ``locust --help``.

    Locust lists its own options by group and prints a custom option only under a
    group, so ours get one (``OPTIONS_TITLE``). ``--rate`` stays out of the web UI's
    custom parameters: the start form asks for it on top (webui/start_form.py); so do the
    probes' options (they are the machine's, not the test's). Numbers are checked by
    ``settings_from``, not argparse, so a bad one is our one line.
    """
    option = partial(locust_option, parser.add_argument_group(OPTIONS_TITLE))
    option(
        "--rate",
        default=None,
        web=False,
        help="arrivals per second at a constant rate instead of the scenario's phases "
        "(the web UI's shape; change it while running at /arrival-rate); "
        "--run-time ends it, drained",
    )
    option("--scenario", default="scenario.yaml", help="the scenario's YAML file")
    option("--scale", default=1.0, help="multiply phase durations (never rates) by this")
    option(
        "--connections",
        default=None,
        help="bound on concurrent requests, all processes together (default: at the peak "
        "rate, every offered workload's requests in flight for their own timeout)",
    )
    option("--run-dir", default=None, help="run directory (default: runs/<UTC timestamp>)")
    option("--fixture", default="fixture.json", help="fixture written by the seed")
    option("--email", default=DEFAULT_EMAIL, help="user to sign in as, LOAD_PASSWORD its password")
    option("--topology", default="", help="free text: where each part ran")
    option(
        "--ca-file",
        default=None,
        web=False,
        help=CA_FILE_HELP,
    )
    option(
        "--insecure",
        action="store_true",
        default=False,
        web=False,
        help=INSECURE_HELP,
    )
    option(
        "--accept-encoding",
        default=DEFAULT_ACCEPT,
        web=False,
        help=f"the Accept-Encoding every request sends, a list of {', '.join(ACCEPTABLE)} "
        f"(default: {DEFAULT_ACCEPT}, as browsers, the SDKs and k6 ask; identity asks for "
        "answers as they are, uncompressed)",
    )
    option(
        "--follow-up-grace",
        default=None,
        web=False,
        help="seconds after the run to follow accepted work (202s) to its end (default: the "
        "slowest timeout); a platform whose background runner lags needs longer",
    )
    option("--api-pid", default=None, web=False, help="probe this API process")
    option(
        "--database-url",
        default=None,
        web=False,
        help=f"probe Postgres connections; a URL with a password is refused here "
        f"(ps shows argv): export {DATABASE_URL_ENV} or use --database-url-file",
    )
    option(
        "--database-url-file",
        default=None,
        web=False,
        help="file holding the probe's database URL (password included), one line",
    )
    option("--metrics-url", default=None, web=False, help="probe a Prometheus endpoint")
    option(
        "--stub-url",
        default=None,
        web=False,
        help="probe the stub's /stats (default: the fixture's stub)",
    )
    option(
        "--locust-tables",
        action="store_true",
        default=False,
        web=False,
        help="print Locust's own request tables, every few seconds and at the end (the kit "
        "prints one progress line and, at the end, its own figures and verdict instead)",
    )
    option(
        "--platform-log",
        default=None,
        web=False,
        help="the platform's log file, when this machine can read it: the report counts "
        "the ERROR and CRITICAL lines written during the run",
    )
    option(
        "--prometheus",
        default=None,
        web=False,
        metavar="HOST:PORT",
        help="serve the run's live metrics at http://HOST:PORT/metrics from the master, for "
        f"Prometheus (a PORT alone binds {LOOPBACK}); docs/outputs.md lists them",
    )
    option(
        "--prometheus-linger-s",
        default=DEFAULT_PROMETHEUS_LINGER_S,
        web=False,
        help="seconds the master keeps serving the final metrics after the last run, so the "
        "next scrape sees every sample (Prometheus scrapes every 15 s by default)",
    )
    _explain_worker_wait(parser)


def _explain_worker_wait(parser) -> None:
    """Give Locust's --expect-workers-max-wait this kit's bounded default and say so in --help.

    Locust waits forever by default and exits 1 (a threshold's code) when it gives up;
    runner/hooks.py enforces this default itself and exits 2, the code for "no run".
    """
    parser.set_defaults(expect_workers_max_wait=DEFAULT_WORKER_WAIT_S)
    for action in parser._actions:
        if action.dest == "expect_workers_max_wait":
            action.help = (
                "seconds a headless master waits for --expect-workers to connect, then one line "
                f"and exit 2 (agent-loadkit's default: {DEFAULT_WORKER_WAIT_S:g}; 0 waits forever)"
            )


def settings_from(
    options, host: str | None, used_run_dirs: frozenset[Path] = frozenset()
) -> RunSettings:
    """Validated settings from parsed options (and the host Locust or the web UI holds).

    A ``--run-dir`` in ``used_run_dirs`` (an earlier test of this web-UI session wrote it) is
    not checked: the next test gets a directory of its own beside it (Conductor._run_dir).

    The options' numbers, the fixture and the scenario are read first, each on its own, and
    every problem any of them has is raised at once; what depends on them comes after."""
    found: list[BadInput] = []
    scale = _read(found, lambda: _number(options.scale, "--scale", float, MAX_SCALE))
    rate = _read(found, lambda: _optional(options.rate, "--rate", float, MAX_RATE))
    connections_given = _read(
        found, lambda: _optional(options.connections, "--connections", int, MAX_CONNECTIONS)
    )
    api_pid = _read(found, lambda: _optional(options.api_pid, "--api-pid", int, PID_MAX_LIMIT))
    grace_given = _read(
        found,
        lambda: _optional(
            options.follow_up_grace, "--follow-up-grace", float, MAX_FOLLOW_UP_GRACE_S
        ),
    )
    fixture = _read(found, lambda: load_fixture(options.fixture))
    written = _read(found, lambda: load_scenario(options.scenario))
    if found:
        raise found[0] if len(found) == 1 else SettingsError([p for e in found for p in e.problems])
    assert scale is not None and fixture is not None and written is not None
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
    given = connections_given is not None
    connections = int(connections_given) if connections_given is not None else needed
    if host and (problem := url_problem(host)):
        raise SettingsError(f"--host: {problem}")
    secret_for(record.credential(record.seeded_from(fixture)))
    run_dir = Path(options.run_dir) if options.run_dir else None
    if run_dir not in used_run_dirs:
        check_new_run_dir(run_dir or RUNS_DIR)
    grace_s = scenario.timeouts.slowest_s if grace_given is None else grace_given
    accept_encoding = getattr(options, "accept_encoding", DEFAULT_ACCEPT)
    if problem := accept_problem(accept_encoding):
        raise SettingsError(f"--accept-encoding: {problem}")
    try:
        trust = trust_from(getattr(options, "ca_file", None), getattr(options, "insecure", False))
    except TrustError as exc:
        raise SettingsError(str(exc)) from None
    platform_log = Path(options.platform_log) if options.platform_log else None
    if platform_log is not None and not platform_log.is_file():
        raise SettingsError(
            f"--platform-log: {platform_log} is not a file here; pass the log the platform "
            "writes (python -m platforms.reference --log-file), or leave it out"
        )
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
        follow_up_grace_s=grace_s,
        probes=ProbeOptions(
            api_pid=int(api_pid) if api_pid else None,
            database_url=probe_database_url(options),
            metrics_url=options.metrics_url or None,
            stub_url=options.stub_url or fixture.stub_url or None,
        ),
        unscaled=unscaled,
        connections_given=given,
        platform_log=platform_log,
        accept_encoding=accept_encoding,
        trust=trust,
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
    path = getattr(options, "database_url_file", None)
    if path:
        try:
            url = Path(path).read_text().strip()
        except OSError as exc:
            raise SettingsError(
                f"--database-url-file: cannot read {path} ({exc.strerror}); give a readable file"
            ) from None
        if not url:
            raise SettingsError(f"--database-url-file: {path} is empty; put the URL on one line")
        return url
    if os.environ.get(DATABASE_URL_ENV):
        return os.environ[DATABASE_URL_ENV]
    given: str | None = options.database_url or None
    if given and urlsplit(given).password:
        raise SettingsError(
            f"--database-url: carries a password, which ps would show; export "
            f"{DATABASE_URL_ENV}=... or pass --database-url-file (or set PGPASSWORD)"
        )
    return given


def prometheus_address(options) -> tuple[str, int] | None:
    """Where --prometheus serves (host, port), None when it is off; a bare port (or ``:PORT``)
    binds loopback, and ``[::1]:PORT`` is an IPv6 host."""
    text = getattr(options, "prometheus", None)
    if not text:
        return None
    host, colon, port = str(text).rpartition(":")
    host = host.removeprefix("[").removesuffix("]") if colon else ""
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise SettingsError(
            f"--prometheus: {text!r} is not HOST:PORT with a port from 1 to 65535; "
            f"give e.g. --prometheus {LOOPBACK}:9646"
        )
    return host or LOOPBACK, int(port)


def prometheus_linger_s(options) -> float:
    """--prometheus-linger-s as seconds (0: exit at once after the last run)."""
    value = getattr(options, "prometheus_linger_s", DEFAULT_PROMETHEUS_LINGER_S)
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if not (math.isfinite(seconds) and seconds >= 0):
        raise SettingsError(
            f"--prometheus-linger-s: {value!r} is not a number of seconds; give e.g. 15 "
            "(your scrape interval), or 0"
        )
    return seconds


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
    if (
        getattr(options, "run_time", None)
        and not users
        and getattr(options, "rate", None)
        in (
            None,
            "",
        )
    ):
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


def _optional(value: object, option: str, cast: type, most: float) -> float | None:
    """``_number`` of an option that may be left out (None or empty: None)."""
    return None if value in (None, "") else _number(value, option, cast, most)


def _number(value: object, option: str, cast: type, most: float) -> float:
    """A finite number above 0 and at most ``most``, or one line naming the option."""
    try:
        number = cast(value)
    except (TypeError, ValueError, OverflowError):
        raise SettingsError(
            f"{option}: {shown(value)} is not a number; give e.g. {option} 2"
        ) from None
    try:
        finite = math.isfinite(number)
    except OverflowError:
        finite = False
    if not finite:
        raise SettingsError(
            f"{option}: {shown(value)} is not a finite number; give e.g. {option} 2"
        )
    if not 0 < number <= most:
        raise SettingsError(
            f"{option}: {shown(value)} is outside its bound; give a number above 0, "
            f"at most {most:g}"
        )
    return number
