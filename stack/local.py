"""Stub + reference target on free loopback ports, seeded, as one context manager.

A newcomer's demo and the web-UI session need a platform to measure; this starts
the same processes an operator would (``python -m stub``, ``python -m reference_platform``,
``python -m workloads.agenticos.seed``), each on a port nobody else holds, and stops them
by PID however the block ends.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from engine.settings import DATABASE_URL_ENV
from stack.processes import Server, free_port, run_captured, running
from workloads.fixture import DEFAULT_EMAIL, PASSWORD_ENV

# The reference target's documented default admin password (reference_platform/README.md);
# used only when the operator has not exported LOAD_PASSWORD.
DEFAULT_PASSWORD = "loadkit-admin"

# One identity stands in for many callers: at the platform's default of 30 runs a
# minute the experiment would measure the limiter, not the platform (the seed).
RAISED_RUN_LIMIT = 100_000

# Locust with this kit's locustfile, as this interpreter runs it.
LOCUST = (sys.executable, "-m", "locust", "-f", "locustfile.py")

# Seeding ingests and waits for the index; a cold start on a busy machine is slow.
SEED_TIMEOUT_S = 300


@dataclass(frozen=True)
class StackOptions:
    workdir: Path
    database_url: str | None = None
    documents: int = 40
    stub_args: tuple[str, ...] = ()
    target_env: dict[str, str] = field(default_factory=dict)
    # Which platform to start: the reference target ("agenticos") or agno's AgentOS ("agno").
    platform: str = "agenticos"


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

    @property
    def metrics_url(self) -> str:
        return self.target.url + "/metrics"

    def locust_options(self) -> list[str]:
        """The Locust options that point a run at this stack and take every probe it can."""
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
        ]

    def locust_env(self) -> dict[str, str]:
        """The environment Locust runs with: the passwords, and the probe's database URL
        (it carries one too), never in argv."""
        return {
            **child_env(),
            **({DATABASE_URL_ENV: self.database_url} if self.database_url else {}),
        }


def password() -> str:
    """The admin password the target is started with and the run signs in with."""
    return os.environ.get(PASSWORD_ENV) or DEFAULT_PASSWORD


def child_env() -> dict[str, str]:
    """The environment every child gets: the password travels here, never in argv."""
    return {**os.environ, PASSWORD_ENV: password(), "TARGET_ADMIN_PASSWORD": password()}


def _topology(options: StackOptions, stub: Server) -> str:
    """The line a report puts on top: what ran where, and every knob moved from its default."""
    database = "Postgres" if options.database_url else "SQLite"
    knobs = [f"{k}={v}" for k, v in sorted(options.target_env.items())]
    knobs.append(f"RATE_LIMIT_RUN_PER_MINUTE={RAISED_RUN_LIMIT} raised from 30")
    stub_knobs = [
        *options.stub_args,
        *(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("STUB_")),
    ]
    return (
        f"one host: reference target (1 uvicorn process, {database}, {', '.join(knobs)}) "
        f"and stub ({stub.url}, {' '.join(stub_knobs) or 'default delays'}) on 127.0.0.1, "
        "Locust in one local process"
    )


@contextlib.contextmanager
def local_stack(options: StackOptions) -> Iterator[LocalStack]:
    """Start stub and target, seed the fixture, yield; stop both when the block ends."""
    if options.platform == "agno":
        from stack.agno import agno_stack

        with agno_stack(options) as stack:
            yield stack
        return
    workdir = options.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    env = child_env()
    stub_port, target_port = free_port(), free_port()
    stub_args = ["-m", "stub", "--port", str(stub_port), *options.stub_args]
    with running(stub_args, "/health", stub_port, workdir / "stub.log", env) as stub:
        database_url = options.database_url or f"sqlite:///{workdir.resolve()}/target.sqlite3"
        target_env = {
            **env,
            "RATE_LIMIT_RUN_PER_MINUTE": str(RAISED_RUN_LIMIT),
            "DATABASE_URL": database_url,
            "EMBEDDING_URL": stub.url,
            **options.target_env,
        }
        target_args = ["-m", "reference_platform", "--port", str(target_port)]
        with running(
            target_args, "/api/v1/health", target_port, workdir / "target.log", target_env
        ) as target:
            fixture = workdir / "fixture.json"
            seed(target.url, stub.url, options.documents, fixture, env)
            yield LocalStack(
                stub, target, fixture, DEFAULT_EMAIL, _topology(options, stub), options.database_url
            )


def seed(
    api_url: str,
    stub_url: str,
    documents: int,
    fixture: Path,
    env: dict[str, str],
    platform: str = "agenticos",
) -> None:
    """Build the fixture through the API, as ``make seed`` does; raise with its message."""
    command = [
        sys.executable,
        "-m",
        f"workloads.{platform}.seed",
        "--api-url",
        api_url,
        "--stub-url",
        stub_url,
        "--documents",
        str(documents),
        "--fixture",
        str(fixture),
    ]
    done = run_captured(command, env, SEED_TIMEOUT_S)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise RuntimeError(f"seeding failed: {lines[-1] if lines else done.returncode}")
