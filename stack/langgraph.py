"""Stub + LangGraph's Agent Server on free loopback ports, seeded, for ``make demo`` and tests.

The server runs from its own environment (``.venv-langgraph``, built by ``make
langgraph-venv`` from requirements-langgraph.txt on first use), so langgraph-api
can pin its own Starlette and pydantic without moving the kit's. Its key is the
run's password (LOAD_PASSWORD), passed in the child's environment, never in argv;
its state goes in the stack's scratch directory.
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
WHAT = "LangGraph's Agent Server"

LANGGRAPH_PYTHON = ROOT / ".venv-langgraph" / "bin" / "python"
# make langgraph-venv took 35 s here (2026-12-02, load average 4.4, PyPI's files cached).
BUILD = "about a minute"
# The server imports LangChain, OpenTelemetry and gRPC and loads the graph before /ok answers:
# slower than our servers from a cold disk on a busy machine.
READY_TIMEOUT_S = 120.0
# Runs the in-memory queue executes at once, passed explicitly so the topology line says it:
# `langgraph dev`'s default of 1 would run a load test's streamed turns one after another.
N_JOBS_PER_WORKER = 20


def ensure_langgraph_venv() -> str:
    """The server's interpreter, building its environment first if needed."""
    return ensure_venv(
        "langgraph-venv", LANGGRAPH_PYTHON, "LangGraph's environment (.venv-langgraph)", BUILD
    )


# How the topology line names the platform.
DESCRIBED = (
    "LangGraph Agent Server (langgraph-api 0.16.7, in-memory runtime 0.36.7, "
    f"platforms/langgraph/, 1 uvicorn process, --n-jobs-per-worker {N_JOBS_PER_WORKER})"
)


@contextlib.contextmanager
def start_stack(options: StackOptions) -> Iterator[LocalStack]:
    """Start stub and server, seed its store, yield; stop both when the block ends."""
    python = ensure_langgraph_venv()
    workdir = options.workdir
    env = child_env()
    with running_stub(options, env) as stub:
        server_port = free_port()
        server_env = {
            **env,
            "LOADKIT_API_KEY": password(),
            "LANGGRAPH_STUB_URL": stub.url,
            "LANGGRAPH_DATA_DIR": str((workdir / "langgraph-data").resolve()),
        }
        server_args = [
            "-m",
            "platforms.langgraph",
            "--port",
            str(server_port),
            "--n-jobs-per-worker",
            str(N_JOBS_PER_WORKER),
        ]
        with running(
            server_args,
            "/ok",
            server_port,
            workdir / "langgraph.log",
            server_env,
            python=python,
            ready_timeout=READY_TIMEOUT_S,
        ) as server:
            fixture = workdir / "fixture.json"
            seed(server.url, stub.url, options.documents, fixture, env, platform="langgraph")
            yield LocalStack(
                stub,
                server,
                fixture,
                DEFAULT_EMAIL,
                topology(options, DESCRIBED, stub),
                None,
            )
