"""The kit's command-line options, each declared once: its name, how it is read (its type
and bound), its default, its help, and whether Locust's web UI shows it.

Locust's parser (``add_options``, on Locust's init_command_line_parser event), ``--help`` and
the typed settings (runner/settings.py) all read this one table, so an option's spelling,
bound and default cannot drift apart. Numbers are read here, not by argparse, so a bad one
is one line naming the option and the fix; every default is said in the help. Free of
Locust (which patches gevent when imported): the stack reads the settings beside it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from engine.content_coding import ACCEPTABLE, DEFAULT_ACCEPT, accept_problem
from engine.trust import CA_FILE_ABOUT, CA_FILE_DEFAULT, INSECURE_ABOUT
from inputs.bad_input import SettingsError, shown
from inputs.fixture import DEFAULT_EMAIL
from inputs.phases import MAX_RATE
from inputs.scenario import MAX_PHASE_S

T = TypeVar("T")
N = TypeVar("N", int, float)
# How an option's given value (argparse's text, the web form's, or its default) becomes its
# typed value: called with the option's name and the value, it returns the value or raises
# one line (SettingsError) naming the option and the fix.
Read = Callable[[str, Any], T]

# The headings the options appear under in ``--help`` (Locust prints a custom option only
# under a group of its own).
OPTIONS_TITLE = "agent-loadkit (open arrival; docs/operator-guide.md 'Generator')"
SWEEP_TITLE = "agent-loadkit sweeps (docs/capacity.md)"
# The probe's database URL comes from here (or --database-url-file), never from argv: it
# usually carries a password. The name is the platform's own, so one export serves both.
DATABASE_URL_ENV = "DATABASE_URL"
# How long a headless master waits for --expect-workers before it gives up (exit 2).
DEFAULT_WORKER_WAIT_S = 120.0
# Where --prometheus binds when it names only a port: this machine alone can scrape it.
LOOPBACK = "127.0.0.1"

# Bounds of the numeric options (the scenario's own numbers are bounded in inputs/scenario.py):
# --scale stretches a phase at most this much (the scaled phase is bounded again there),
MAX_SCALE = 1000.0
# --connections: each holds a socket, so more than this is more than any machine's files,
MAX_CONNECTIONS = 10_000_000
# --api-pid: Linux's largest possible PID (PID_MAX_LIMIT on 64-bit),
PID_MAX_LIMIT = 4_194_304
# --follow-up-grace: a day; a platform that has not done accepted work by then has lost it,
MAX_FOLLOW_UP_GRACE_S = 86_400.0
# --sweep-users: each user is a greenlet and a connection, far beyond one machine's files;
# and a sweep lists at most this many steps.
MAX_USERS = 1_000_000
MAX_SWEEP_STEPS = 1000


@dataclass(frozen=True)
class Option(Generic[T]):
    """One option of the kit, all there is to know about it in one place."""

    name: str
    read: Read[T]
    help: str
    # As argparse and the web form hold it before it is read (None: not given).
    default: str | float | bool | None = None
    # The default in words, for an option whose default is not a value (None, "").
    default_said: str = ""
    # Shown in the web UI's start form (never a secret, required or repeated there), and
    # there only for these shapes (by class name) when it means nothing to the others.
    web: bool = True
    only_for: tuple[str, ...] = ()
    # A switch (store_true): given or not.
    switch: bool = False
    metavar: str | None = None

    @property
    def dest(self) -> str:
        """The attribute argparse and Locust's web form keep the value under."""
        return self.name.removeprefix("--").replace("-", "_")

    @property
    def shown_default(self) -> str:
        """The default as ``--help`` says it: the value, else in words."""
        if self.switch:
            return "(default: off)"
        if self.default_said:
            return f"(default: {self.default_said})"
        value = self.default
        return f"(default {value:g})" if isinstance(value, float) else f"(default {value})"

    def given(self, options: object) -> Any:
        """This option as given in parsed ``options``, not yet read (its default if absent)."""
        return getattr(options, self.dest, self.default)

    def value(self, options: object) -> T:
        """This option's typed value in parsed ``options``."""
        return self.read(self.name, self.given(options))

    def add_to(self, group: Any) -> None:
        """Add this option to ``group`` of Locust's parser: argparse's add_argument, and the
        attributes Locust's web UI reads (argparse's groups take no keywords of Locust's)."""
        help_text = f"{self.help} {self.shown_default}"
        given: dict[str, Any] = {"default": self.default, "help": help_text}
        if self.switch:
            given["action"] = "store_true"
        if self.metavar:
            given["metavar"] = self.metavar
        action = group.add_argument(self.name, **given)
        action.include_in_web_ui, action.is_secret = self.web, False
        action.is_required, action.is_multiple = False, False


def text(name: str, value: object) -> str:
    """The text given (empty when none was)."""
    return "" if value is None else str(value)


def optional_text(name: str, value: object) -> str | None:
    """The text given, or None when none was (or it was empty)."""
    return None if value in (None, "") else str(value)


def optional_path(name: str, value: object) -> Path | None:
    """The path given, or None when none was."""
    return None if value in (None, "") else Path(str(value))


def platform_log_file(name: str, value: object) -> Path | None:
    """The path of a file this machine can read (the platform's log), or None when none was
    given."""
    path = optional_path(name, value)
    if path is not None and not path.is_file():
        raise SettingsError(
            f"{name}: {path} is not a file here; pass the log the platform writes "
            "(python -m platforms.reference --log-file), or leave it out"
        )
    return path


def switch(name: str, value: object) -> bool:
    """Whether the switch was given."""
    return bool(value)


def number(cast: Callable[[Any], N], most: float) -> Read[N]:
    """A reader of a number above 0 and at most ``most``."""
    return lambda name, value: _number(value, name, cast, most)


def optional_number(cast: Callable[[Any], N], most: float) -> Read[N | None]:
    """``number``, of an option that may be left out (None or empty: None)."""
    return lambda name, value: None if value in (None, "") else _number(value, name, cast, most)


def seconds_or_none(most: float) -> Read[float]:
    """A reader of seconds from 0 (none) to ``most``."""

    def read(name: str, value: object) -> float:
        return 0.0 if value in (None, "") else _number(value, name, float, most, zero=True)

    return read


def _number(value: object, option: str, cast: Callable[[Any], N], most: float, zero=False) -> N:
    """A finite number above 0 (or 0 too, with ``zero``) and at most ``most``, or one line
    naming the option."""
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
    if not (number >= 0 if zero else number > 0) or number > most:
        least = "of 0 or more" if zero else "above 0"
        raise SettingsError(
            f"{option}: {shown(value)} is outside its bound; give a number {least}, "
            f"at most {most:g}"
        )
    return number


def user_steps(name: str, value: object) -> tuple[int, ...] | None:
    """A concurrency sweep's user counts: N means 1, 2, 4, ... up to N (N itself included),
    a list is taken as given; None when no sweep was asked for."""
    if value in (None, ""):
        return None
    parts = _steps(value, name, int, MAX_USERS)
    if len(parts) > 1:
        return parts
    top, steps, n = parts[0], [], 1
    while n < top:
        steps.append(n)
        n *= 2
    return (*steps, top)


def rate_steps(name: str, value: object) -> tuple[float, ...] | None:
    """A rate sweep's rates per second, in the order given; None when no sweep was asked for."""
    return None if value in (None, "") else _steps(value, name, float, MAX_RATE)


def _steps(value: object, option: str, cast: Callable[[str], N], most: float) -> tuple[N, ...]:
    """A sweep's steps, a comma-separated list of numbers above 0 and at most ``most``."""
    try:
        parts = tuple(cast(p) for p in str(value).split(",") if p.strip())
    except (ValueError, OverflowError):
        raise SettingsError(
            f"{option}: {shown(value)} is not a list of numbers; e.g. 1,2,4"
        ) from None
    if len(parts) > MAX_SWEEP_STEPS:
        raise SettingsError(f"{option}: {len(parts)} steps; give at most {MAX_SWEEP_STEPS}")
    if not parts or not all(0 < p <= most for p in parts):
        raise SettingsError(
            f"{option}: {shown(value)} needs finite numbers above 0 and at most {most:g}; "
            "e.g. 1,2,4"
        )
    return parts


def accept_encoding(name: str, value: object) -> str:
    """An Accept-Encoding of only the codings the kit decodes."""
    given = DEFAULT_ACCEPT if value is None else str(value)
    if problem := accept_problem(given):
        raise SettingsError(f"{name}: {problem}")
    return given


def address(name: str, value: object) -> tuple[str, int] | None:
    """Where to serve (host, port), None when off; a bare port (or ``:PORT``) binds loopback,
    and ``[::1]:PORT`` is an IPv6 host."""
    if not value:
        return None
    host, colon, port = str(value).rpartition(":")
    host = host.removeprefix("[").removesuffix("]") if colon else ""
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise SettingsError(
            f"{name}: {value!r} is not HOST:PORT with a port from 1 to 65535; "
            f"give e.g. {name} {LOOPBACK}:9646"
        )
    return host or LOOPBACK, int(port)


def linger_seconds(name: str, value: object) -> float:
    """Seconds to keep serving (0: none)."""
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = -1.0
    if not (math.isfinite(seconds) and seconds >= 0):
        raise SettingsError(
            f"{name}: {value!r} is not a number of seconds; give e.g. 15 "
            "(your scrape interval), or 0"
        )
    return seconds


# The kit's options, in the order --help lists them. --rate and the machine's options (TLS,
# probes, outputs) stay out of the web UI's custom parameters: the start form asks for the
# rate on top (webui/start_form.py), and the rest are the machine's, not the test's.
RATE = Option(
    "--rate",
    optional_number(float, MAX_RATE),
    "arrivals per second at a constant rate instead of the scenario's phases (the web UI's "
    "shape; change it while running at /arrival-rate); --run-time ends it, drained",
    default_said="none, the scenario's phases",
    web=False,
)
SCENARIO = Option("--scenario", text, "the scenario's YAML file", default="scenario.yaml")
SCALE = Option(
    "--scale",
    number(float, MAX_SCALE),
    "multiply phase durations (never rates) by this",
    default=1.0,
    only_for=("FourPhaseShape",),
)
CONNECTIONS = Option(
    "--connections",
    optional_number(int, MAX_CONNECTIONS),
    "bound on concurrent requests, all processes together",
    default_said="at the peak rate, every offered workload's requests in flight for their "
    "own timeout",
)
RUN_DIR = Option("--run-dir", optional_path, "run directory", default_said="runs/<UTC timestamp>")
FIXTURE = Option("--fixture", text, "fixture written by the seed", default="fixture.json")
EMAIL = Option(
    "--email", text, "user to sign in as, LOAD_PASSWORD its password", default=DEFAULT_EMAIL
)
TOPOLOGY = Option("--topology", text, "free text: where each part ran", "", default_said="none")
CA_FILE = Option("--ca-file", optional_text, CA_FILE_ABOUT, default_said=CA_FILE_DEFAULT, web=False)
INSECURE = Option("--insecure", switch, INSECURE_ABOUT, default=False, web=False, switch=True)
ACCEPT_ENCODING = Option(
    "--accept-encoding",
    accept_encoding,
    f"the Accept-Encoding every request sends, a list of {', '.join(ACCEPTABLE)}: gzip as "
    "browsers, the SDKs and k6 ask; identity asks for answers as they are, uncompressed",
    default=DEFAULT_ACCEPT,
    web=False,
)
FOLLOW_UP_GRACE = Option(
    "--follow-up-grace",
    optional_number(float, MAX_FOLLOW_UP_GRACE_S),
    "seconds after the run to follow accepted work (202s) to its end; a platform whose "
    "background runner lags needs longer",
    default_said="the slowest timeout",
    web=False,
)
API_PID = Option(
    "--api-pid",
    optional_number(int, PID_MAX_LIMIT),
    "probe this API process",
    default_said="none, not probed",
    web=False,
)
DATABASE_URL = Option(
    "--database-url",
    optional_text,
    "probe Postgres connections; a URL with a password is refused here (ps shows argv): "
    f"export {DATABASE_URL_ENV} or use --database-url-file",
    default_said=f"${DATABASE_URL_ENV}, else not probed",
    web=False,
)
DATABASE_URL_FILE = Option(
    "--database-url-file",
    optional_text,
    "file holding the probe's database URL (password included), one line",
    default_said="none",
    web=False,
)
METRICS_URL = Option(
    "--metrics-url",
    optional_text,
    "probe a Prometheus endpoint",
    default_said="none, not probed",
    web=False,
)
STUB_URL = Option(
    "--stub-url",
    optional_text,
    "probe the stub's /stats",
    default_said="the fixture's stub",
    web=False,
)
LOCUST_TABLES = Option(
    "--locust-tables",
    switch,
    "print Locust's own request tables, every few seconds and at the end; the kit prints one "
    "progress line and, at the end, its own figures and verdict instead",
    default=False,
    web=False,
    switch=True,
)
PLATFORM_LOG = Option(
    "--platform-log",
    platform_log_file,
    "the platform's log file, when this machine can read it: the report counts the ERROR and "
    "CRITICAL lines written during the run",
    default_said="none",
    web=False,
)
PROMETHEUS = Option(
    "--prometheus",
    address,
    "serve the run's live metrics at http://HOST:PORT/metrics from the master, for "
    f"Prometheus (a PORT alone binds {LOOPBACK}); docs/outputs.md lists them",
    default_said="off",
    web=False,
    metavar="HOST:PORT",
)
PROMETHEUS_LINGER_S = Option(
    "--prometheus-linger-s",
    linger_seconds,
    "seconds the master keeps serving the final metrics after the last run, so the next "
    "scrape sees every sample; Prometheus scrapes every 15 s by default",
    default=15.0,
    web=False,
)
KIT_OPTIONS: tuple[Option, ...] = (
    RATE,
    SCENARIO,
    SCALE,
    CONNECTIONS,
    RUN_DIR,
    FIXTURE,
    EMAIL,
    TOPOLOGY,
    CA_FILE,
    INSECURE,
    ACCEPT_ENCODING,
    FOLLOW_UP_GRACE,
    API_PID,
    DATABASE_URL,
    DATABASE_URL_FILE,
    METRICS_URL,
    STUB_URL,
    LOCUST_TABLES,
    PLATFORM_LOG,
    PROMETHEUS,
    PROMETHEUS_LINGER_S,
)

# The sweeps' (shapes/sweep.py runs them): each step is a segment of the run's plan.
SWEEPS = ("ConcurrencySweepShape", "RateSweepShape")
SWEEP_USERS = Option(
    "--sweep-users",
    user_steps,
    "concurrency sweep (users mode): N for 1, 2, 4, ... N, or a list like 1,4,16",
    default_said="none, no sweep",
    only_for=("ConcurrencySweepShape",),
)
SWEEP_RATES = Option(
    "--sweep-rates",
    rate_steps,
    "arrival-rate sweep (open arrival): a list of rates per second, like 2,4,8,16",
    default_said="none, no sweep",
    only_for=("RateSweepShape",),
)
STEP_S = Option(
    "--step-s",
    number(float, MAX_PHASE_S),
    "seconds each sweep step is held, enough for a few turns at 2 s each",
    default=15.0,
    only_for=SWEEPS,
)
REST_S = Option(
    "--rest-s",
    seconds_or_none(MAX_PHASE_S),
    "seconds of no load after a sweep, to see whether memory is given back",
    default=0,
    only_for=SWEEPS,
)
SWEEP_STOP = Option(
    "--sweep-stop",
    switch,
    "end a sweep after the first step in which a threshold breaks (then --rest-s)",
    default=False,
    switch=True,
    only_for=SWEEPS,
)
SWEEP_OPTIONS: tuple[Option, ...] = (SWEEP_USERS, SWEEP_RATES, STEP_S, REST_S, SWEEP_STOP)
# The start form's fields that mean something to some shapes only, by Locust's name for the
# field: the shapes it is shown for (webui/start_form.py hides it under the others).
SHOWN_ONLY_FOR = {o.dest: o.only_for for o in (*KIT_OPTIONS, *SWEEP_OPTIONS) if o.only_for}


def add_options(parser: Any) -> None:
    """Register the kit's options and the sweeps' on Locust's parser, each group under its
    heading, and bound Locust's wait for workers."""
    for title, options in ((OPTIONS_TITLE, KIT_OPTIONS), (SWEEP_TITLE, SWEEP_OPTIONS)):
        group = parser.add_argument_group(title)
        for option in options:
            option.add_to(group)
    _explain_worker_wait(parser)


def _explain_worker_wait(parser: Any) -> None:
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
