"""Stub + LangGraph's Agent Server on free loopback ports, seeded, for ``make demo`` and tests:
the server runs from its own environment (``.venv-langgraph``, requirements-langgraph.txt),
stack/own_venv.py.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from stack.local import LocalStack, StackOptions
from stack.own_venv import OwnVenv, running_in_own_venv

# How ``make demo`` names this platform in its first line.
WHAT = "LangGraph's Agent Server"

# Runs the in-memory queue executes at once, passed explicitly so the topology line says it:
# `langgraph dev`'s default of 1 would run a load test's streamed turns one after another.
N_JOBS_PER_WORKER = 20

LANGGRAPH = OwnVenv(
    name="langgraph",
    called="LangGraph",
    described=(
        "LangGraph Agent Server (langgraph-api 0.16.7, in-memory runtime 0.36.7, "
        f"platforms/langgraph/, 1 uvicorn process, --n-jobs-per-worker {N_JOBS_PER_WORKER})"
    ),
    # make langgraph-venv took 35 s here (docs/internals.md).
    build="about a minute",
    key_env="LOADKIT_API_KEY",
    env_prefix="LANGGRAPH_",
    ready_path="/ok",
    args=("--n-jobs-per-worker", str(N_JOBS_PER_WORKER)),
)


def start_stack(options: StackOptions) -> AbstractContextManager[LocalStack]:
    """Start stub and server, seed its store; stop both when the block ends."""
    return running_in_own_venv(options, LANGGRAPH)
