"""Stub + agno's AgentOS on free loopback ports, seeded, for ``make demo PLATFORM=agno`` and tests.

agno runs from its own environment (``.venv-agno``, built by ``make agno-venv``
from requirements-agno.txt on first use), so it can pin its own FastAPI and
pydantic without moving the kit's. The AgentOS key is the run's password
(LOAD_PASSWORD), passed in the child's environment, never in argv.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from inputs.fixture import DEFAULT_EMAIL
from stack.local import (
    LocalStack,
    StackOptions,
    child_env,
    ensure_venv,
    password,
    running_stub,
    seed,
    topology,
)
from stack.processes import ROOT, free_port, running

# How ``make demo`` names this platform in its first line.
WHAT = "agno's AgentOS"

AGNO_PYTHON = ROOT / ".venv-agno" / "bin" / "python"
# make agno-venv took 46 s here (2026-12-02, load average 4.4, PyPI's files cached).
AGNO_BUILD = "about a minute"
# agno imports LanceDB, pyarrow and the OpenAI SDK before it listens: slower than our servers
# from a cold disk on a busy machine.
READY_TIMEOUT_S = 120.0


def ensure_agno_venv() -> str:
    """The agno interpreter, building its environment first if needed (``make agno-venv``)."""
    return ensure_venv("agno-venv", AGNO_PYTHON, "agno's environment (.venv-agno)", AGNO_BUILD)


# How the topology line names the platform.
DESCRIBED = (
    "agno AgentOS 3.1.10 (platforms/agno/, 1 uvicorn process, SQLite sessions, LanceDB knowledge)"
)


@contextlib.contextmanager
def start_stack(options: StackOptions) -> Iterator[LocalStack]:
    """Start stub and AgentOS, seed its knowledge, yield; stop both when the block ends."""
    python = ensure_agno_venv()
    workdir = options.workdir
    env = child_env()
    with running_stub(options, env) as stub:
        agno_port = free_port()
        agno_env = {
            **env,
            "OS_SECURITY_KEY": password(),
            "AGNO_STUB_URL": stub.url,
            "AGNO_DATA_DIR": str((workdir / "agno-data").resolve()),
            "AGNO_TELEMETRY": "false",
            **options.target_env,
        }
        agno_args = ["-m", "platforms.agno", "--port", str(agno_port)]
        with running(
            agno_args,
            "/health",
            agno_port,
            workdir / "agno.log",
            agno_env,
            python=python,
            ready_timeout=READY_TIMEOUT_S,
        ) as agno:
            fixture = workdir / "fixture.json"
            seed(agno.url, stub.url, options.documents, fixture, env, platform="agno")
            yield LocalStack(
                stub,
                agno,
                fixture,
                DEFAULT_EMAIL,
                topology(options, DESCRIBED, stub),
                None,
                metrics=False,
            )
