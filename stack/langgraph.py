"""Stub + LangGraph's Agent Server on free loopback ports, seeded, for ``make demo`` and tests.

The server runs from its own environment (``.venv-langgraph``, built by ``make
langgraph-venv`` from requirements-langgraph.txt on first use), so langgraph-api
can pin its own Starlette and pydantic without moving the kit's. Its key is the
run's password (LOAD_PASSWORD), passed in the child's environment, never in argv;
its state goes in the stack's scratch directory.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from fixture import DEFAULT_EMAIL
from stack.local import LocalStack, StackOptions, child_env, ensure_venv, password, seed
from stack.processes import ROOT, free_port, running

# How ``make demo`` names this platform in its first line.
WHAT = "LangGraph's Agent Server"

LANGGRAPH_PYTHON = ROOT / ".venv-langgraph" / "bin" / "python"
# The server imports LangChain, OpenTelemetry and gRPC and loads the graph before /ok answers:
# slower than our servers from a cold disk on a busy machine.
READY_TIMEOUT_S = 120.0
# Runs the in-memory queue executes at once, passed explicitly so the topology line says it:
# `langgraph dev`'s default of 1 would run a load test's streamed turns one after another.
N_JOBS_PER_WORKER = 20


def ensure_langgraph_venv() -> str:
    """The server's interpreter, building its environment first if needed."""
    return ensure_venv("langgraph-venv", LANGGRAPH_PYTHON)


def _topology(options: StackOptions, stub_url: str) -> str:
    stub_knobs = [
        *options.stub_args,
        *(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("STUB_")),
    ]
    return (
        "one host: LangGraph Agent Server (langgraph-api 0.16.7, in-memory runtime 0.36.7, "
        f"langgraph_platform/, 1 uvicorn process, --n-jobs-per-worker {N_JOBS_PER_WORKER}) "
        f"and stub ({stub_url}, {' '.join(stub_knobs) or 'default delays'}) on 127.0.0.1, "
        "Locust in one local process"
    )


@contextlib.contextmanager
def start_stack(options: StackOptions) -> Iterator[LocalStack]:
    """Start stub and server, seed its store, yield; stop both when the block ends."""
    python = ensure_langgraph_venv()
    workdir = options.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    env = child_env()
    stub_port, server_port = free_port(), free_port()
    stub_args = ["-m", "stub", "--port", str(stub_port), *options.stub_args]
    with running(stub_args, "/health", stub_port, workdir / "stub.log", env) as stub:
        server_env = {
            **env,
            "LOADKIT_API_KEY": password(),
            "LANGGRAPH_STUB_URL": stub.url,
            "LANGGRAPH_DATA_DIR": str((workdir / "langgraph-data").resolve()),
        }
        server_args = [
            "-m",
            "langgraph_platform",
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
                _topology(options, stub.url),
                None,
            )
