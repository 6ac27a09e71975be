"""Stub + an A2A server on the reference SDK (a2a-sdk 1.3.0, platforms/a2a/) on free loopback
ports, seeded from its card, for ``make demo PLATFORM=a2a`` and tests: the server runs from
its own environment (``.venv-a2a``, requirements-a2a.txt), stack/own_venv.py.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from stack.local import LocalStack, StackOptions
from stack.own_venv import OwnVenv, running_in_own_venv

# How ``make demo`` names this platform in its first line.
WHAT = "an A2A server on a2a-sdk"

A2A = OwnVenv(
    name="a2a",
    called="the A2A server",
    described=(
        "A2A server on a2a-sdk 1.3.0 (platforms/a2a/, 1 uvicorn process, JSON-RPC and "
        "HTTP+JSON, A2A 1.0 and 0.3, one agent with one tool)"
    ),
    # Said while it builds (docs/internals.md, "Figures behind the code").
    build="under a minute",
    key_env="A2A_API_KEY",
    env_prefix="A2A_",
    ready_path="/health",
    # It serves no Prometheus /metrics.
    metrics=False,
)


def start_stack(options: StackOptions) -> AbstractContextManager[LocalStack]:
    """Start stub and server, seed from its card; stop both when the block ends."""
    return running_in_own_venv(options, A2A)
