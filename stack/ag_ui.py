"""Stub + agno's AgentOS on free loopback ports, seeded as an AG-UI agent (its AG-UI interface at
``/agui``), for ``make demo PLATFORM=ag-ui`` and tests: agno runs from its own environment
(``.venv-agno``, requirements-agno.txt), stack/own_venv.py.

Why agno's interface and not ag-ui-langgraph (which the tests also run): it is the same
AgentOS the kit already starts for ``agno`` and ``a2a``-over-agno, one agent reached three
ways, and its key guards the route as a deployment's would; and when a client leaves a run
mid-answer it usually stops the model, so the demo's cancelled turns mostly show the stub's
calls abandoned (ag-ui-langgraph pays for the rest of every answer: workloads/ag_ui/WIRE.md).
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from stack.agno import AGNO
from stack.local import LocalStack, StackOptions
from stack.own_venv import OwnVenv, running_in_own_venv

# How ``make demo`` names this platform in its first line.
WHAT = "agno's AG-UI interface"

AG_UI = OwnVenv(
    name="ag-ui",
    called="agno",
    described=(
        "agno AgentOS 3.1.10's AG-UI interface (platforms/agno/, POST /agui, ag-ui-protocol "
        "1.0.0, 1 uvicorn process, SQLite sessions)"
    ),
    build=AGNO.build,
    key_env=AGNO.key_env,
    env_prefix=AGNO.env_prefix,
    ready_path=AGNO.ready_path,
    env=AGNO.env,
    metrics=AGNO.metrics,
    module="platforms.agno",
    venv="agno",
    seed_args=("--path", "/agui"),
)


def start_stack(options: StackOptions) -> AbstractContextManager[LocalStack]:
    """Start stub and AgentOS, seed its AG-UI agent; stop both when the block ends."""
    return running_in_own_venv(options, AG_UI)
