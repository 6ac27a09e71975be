"""What every platform's local stack is made of: the options it starts from, the stack it
yields, and the environment and seeding its children get.

A newcomer's demo and the web-UI session need a platform to measure; each platform's
module here (``stack/agenticos.py``, ``stack/agno.py``, found by name in
``stack/platforms.py``) starts the same processes an operator would (``python -m stub``,
the platform, ``python -m workloads.seed --platform NAME``), each on a port nobody else holds,
and stops them by PID however the block ends. They share these parts; this module
imports none of them.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from inputs.fixture import PASSWORD_ENV
from runner.options import DATABASE_URL_ENV
from stack.processes import Server, free_port, run_captured, running

# The reference target's documented default admin password (platforms/reference/README.md);
# used only when the operator has not exported LOAD_PASSWORD.
DEFAULT_PASSWORD = "loadkit-admin"

# Locust with this kit's locustfile, as this interpreter runs it.
LOCUST = (sys.executable, "-m", "locust", "-f", "locustfile.py")

# Seeding ingests and waits for the index; a cold start on a busy machine is slow.
SEED_TIMEOUT_S = 300
# A platform environment's first install downloads its web stack and more (agno: LanceDB and
# pyarrow; LangGraph: LangChain and OpenTelemetry); bounded so a dead index is an error.
INSTALL_TIMEOUT_S = 900


@dataclass(frozen=True)
class StackOptions:
    workdir: Path
    database_url: str | None = None
    documents: int = 40
    stub_args: tuple[str, ...] = ()
    target_env: dict[str, str] = field(default_factory=dict)
    # Which platform to start, by its name in the registry (workloads/platforms.py).
    platform: str = "agenticos"
    # How the load is generated, for the topology line (bench/soak.py runs master + workers).
    generator: str = "Locust in one local process"


@dataclass(frozen=True)
class LocalStack:
    stub: Server
    target: Server
    fixture: Path
    email: str
    topology: str
    database_url: str | None
    # Whether the platform serves Prometheus /metrics (agno's AgentOS does not).
    metrics: bool = True
    # A scenario of the stack's own, where the shipped one cannot run on its platform (an
    # OpenAI endpoint is a model, not an agent: its agent runs take one step); None: the
    # shipped scenario. A run's own --scenario, given after these options, wins.
    scenario: Path | None = None

    @property
    def metrics_url(self) -> str:
        return self.target.url + "/metrics"

    def locust_options(self) -> list[str]:
        """The Locust options that point a run at this stack and take every probe it can, the
        platform's log included (the report counts what it logged at ERROR and above)."""
        return [
            "--host",
            self.target.url,
            "--fixture",
            str(self.fixture),
            "--email",
            self.email,
            "--api-pid",
            str(self.target.pid),
            *(["--metrics-url", self.metrics_url] if self.metrics else []),
            "--stub-url",
            self.stub.url,
            "--platform-log",
            str(self.target.log),
            *(["--scenario", str(self.scenario)] if self.scenario else []),
        ]

    def locust_env(self) -> dict[str, str]:
        """The environment Locust runs with: the passwords, and the probe's database URL
        (it carries one too), never in argv."""
        return {
            **child_env(),
            **({DATABASE_URL_ENV: self.database_url} if self.database_url else {}),
        }


def headless_command(stack: LocalStack, scenario: Path, run_dir: Path) -> list[str]:
    """A headless run of ``scenario`` against the stack into ``run_dir``, with every probe
    the stack offers and only the summary on the console."""
    return [
        *LOCUST,
        "--headless",
        *stack.locust_options(),
        "--scenario",
        str(scenario),
        "--run-dir",
        str(run_dir),
        "--only-summary",
    ]


def password() -> str:
    """The admin password the target is started with and the run signs in with."""
    return os.environ.get(PASSWORD_ENV) or DEFAULT_PASSWORD


def child_env() -> dict[str, str]:
    """The environment every child gets: the password travels here, never in argv."""
    return {**os.environ, PASSWORD_ENV: password(), "TARGET_ADMIN_PASSWORD": password()}


@contextlib.contextmanager
def running_stub(options: StackOptions, env: dict[str, str]) -> Iterator[Server]:
    """The stub every platform's stack starts first: the options' arguments, a free loopback
    port, its log in the stack's directory (made here), stopped when the block ends."""
    options.workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    args = ["-m", "stub", "--port", str(port), *options.stub_args]
    with running(args, "/health", port, options.workdir / "stub.log", env) as stub:
        yield stub


def topology(options: StackOptions, platform: str, stub: Server) -> str:
    """The line a report puts on top: the ``platform`` as its stack describes it, the stub with
    every knob moved from its default (its arguments, its STUB_ variables), and the generator."""
    stub_knobs = [
        *options.stub_args,
        *(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("STUB_")),
    ]
    return (
        f"one host: {platform} and stub ({stub.url}, {' '.join(stub_knobs) or 'default delays'}) "
        f"on 127.0.0.1, {options.generator}"
    )


def seed(
    api_url: str,
    stub_url: str,
    documents: int,
    fixture: Path,
    env: dict[str, str],
    platform: str = "agenticos",
    extra: tuple[str, ...] = (),
) -> None:
    """Build the fixture through the API, as ``make seed`` does (``extra``: the platform's own
    seed options); raise with its message."""
    command = [
        sys.executable,
        "-m",
        "workloads.seed",
        "--platform",
        platform,
        "--api-url",
        api_url,
        "--stub-url",
        stub_url,
        "--documents",
        str(documents),
        "--fixture",
        str(fixture),
        *extra,
    ]
    done = run_captured(command, env, SEED_TIMEOUT_S)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise RuntimeError(f"seeding failed: {lines[-1] if lines else done.returncode}")


class PlatformUnavailable(RuntimeError):
    """A platform's own environment could not be built here; one line saying why."""


def build_once(target: str, what: str, expected: str) -> subprocess.CompletedProcess:
    """``make TARGET``, saying first in one line, when make has something to build
    (``make -q``), what is built and about how long it takes: a first demo against a platform
    in its own environment otherwise sat silent through the install."""
    env = dict(os.environ)
    if run_captured(["make", "-q", "--no-print-directory", target], env, 60).returncode != 0:
        print(f"{what}: built on first use ({expected}); later runs reuse it", flush=True)
    return run_captured(["make", "--no-print-directory", target], env, INSTALL_TIMEOUT_S)
