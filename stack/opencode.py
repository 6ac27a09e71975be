"""Stub + opencode serve on free loopback ports, for ``make demo PLATFORM=opencode`` and tests.

opencode is the npm package ``opencode-ai`` installed into platforms/opencode/ by
``make opencode-install`` (on first use), started by its launcher
(``python -m platforms.opencode``), which gives it HOME and XDG folders of its own
under the stack's scratch directory and nothing that reaches past 127.0.0.1. Its
password is the run's (LOAD_PASSWORD), passed in the child's environment, never in
argv; every route wants it, the health check too.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator
from pathlib import Path

from inputs.fixture import DEFAULT_EMAIL
from stack.local import (
    LocalStack,
    PlatformUnavailable,
    StackOptions,
    build_once,
    child_env,
    password,
    running_stub,
    seed,
    topology,
)
from stack.processes import ROOT, Server, free_port, running

# How ``make demo`` names this platform in its first line.
WHAT = "opencode serve"

BINARY = ROOT / "platforms" / "opencode" / "node_modules" / ".bin" / "opencode"
# opencode answers its health check about 2 s after start on an idle machine.
READY_TIMEOUT_S = 60.0
# opencode's basic-auth user when OPENCODE_SERVER_USERNAME is not set (its default).
USER = "opencode"
# How the topology line names the platform.
DESCRIBED = (
    "opencode serve 1.18.33 (npm opencode-ai, platforms/opencode/, one Bun process, SQLite, "
    "edit/bash/webfetch denied)"
)


# make opencode-install took 8 s here (2026-12-02, load average 2.6, npm's cache warm).
BUILD = "about 10 s, longer with npm's cache cold"


def ensure_opencode() -> None:
    """Install the pinned opencode if needed (``make opencode-install``), or say why not."""
    done = build_once("opencode-install", "opencode (platforms/opencode/node_modules)", BUILD)
    if done.returncode != 0 or not BINARY.exists():
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise PlatformUnavailable(
            f"make opencode-install failed: {lines[-1] if lines else done.returncode}; "
            "check that node, npm and the npm registry are reachable"
        )


def basic_auth(secret: str) -> dict[str, str]:
    """The Authorization header opencode's server wants on every route."""
    token = base64.b64encode(f"{USER}:{secret}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@contextlib.contextmanager
def running_opencode(data_dir: Path, stub_url: str, env: dict[str, str]) -> Iterator[Server]:
    """opencode serve on a free port, its state in ``data_dir``, the run's password on; ready
    when its health check answers with that password; stopped when the block ends."""
    port = free_port()
    args = [
        "-m",
        "platforms.opencode",
        "--port",
        str(port),
        "--stub-url",
        stub_url,
        "--data-dir",
        str(data_dir.resolve()),
    ]
    with running(
        args,
        "/global/health",
        port,
        data_dir.parent / "opencode.log",
        {**env, "OPENCODE_SERVER_PASSWORD": password()},
        ready_timeout=READY_TIMEOUT_S,
        ready_headers=basic_auth(password()),
    ) as server:
        yield server


@contextlib.contextmanager
def start_stack(options: StackOptions) -> Iterator[LocalStack]:
    """Start stub and opencode, write the corpus into its project folder, yield; stop both
    when the block ends."""
    ensure_opencode()
    env = child_env()
    with (
        running_stub(options, env) as stub,
        running_opencode(
            options.workdir / "opencode-data", stub.url, {**env, **options.target_env}
        ) as server,
    ):
        fixture = options.workdir / "fixture.json"
        seed(server.url, stub.url, options.documents, fixture, env, platform="opencode")
        yield LocalStack(
            stub,
            server,
            fixture,
            DEFAULT_EMAIL,
            topology(options, DESCRIBED, stub),
            None,
            metrics=False,
        )
