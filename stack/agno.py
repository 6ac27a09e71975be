"""Stub + agno's AgentOS on free loopback ports, seeded, for ``make demo PLATFORM=agno`` and tests:
agno runs from its own environment (``.venv-agno``, requirements-agno.txt), stack/own_venv.py.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from stack.local import LocalStack, StackOptions
from stack.own_venv import OwnVenv, running_in_own_venv

# How ``make demo`` names this platform in its first line.
WHAT = "agno's AgentOS"

AGNO = OwnVenv(
    name="agno",
    called="agno",
    described=(
        "agno AgentOS 3.1.10 (platforms/agno/, 1 uvicorn process, SQLite sessions, LanceDB "
        "knowledge)"
    ),
    # make agno-venv took 46 s here (docs/internals.md).
    build="about a minute",
    key_env="OS_SECURITY_KEY",
    env_prefix="AGNO_",
    ready_path="/health",
    env={"AGNO_TELEMETRY": "false"},
    # AgentOS serves no Prometheus /metrics.
    metrics=False,
)


def start_stack(options: StackOptions) -> AbstractContextManager[LocalStack]:
    """Start stub and AgentOS, seed its knowledge; stop both when the block ends."""
    return running_in_own_venv(options, AGNO)
