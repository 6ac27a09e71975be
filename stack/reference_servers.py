"""The stub model and the reference target as quick servers, for the tests and the benches.

Every test or bench that needs a platform of its own starts it with these, so the
stub's pace, the target's database and limits are stated in one place; each server
is a real process on 127.0.0.1 and a free port, stopped by PID when the block ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from stack.processes import Server, free_port, running

TARGET_HEALTH = "/api/v1/health"
# A quick model: tests wait for answers, not for realism. 8 tokens, narrow vectors.
FAST_STUB = ("--first-token-ms", "20", "--token-ms", "2", "--tokens", "8", "--embedding-dim", "64")
FAST_STUB_TOKENS = 8
FAST_STUB_DIM = 64
# Tests sign in and run far more than a person would in a minute; raise both limits
# (tests of the limits themselves start their own target with low ones).
RELAXED_LIMITS = {"RATE_LIMIT_RUN_PER_MINUTE": "10000", "RATE_LIMIT_LOGIN_PER_MINUTE": "10000"}


@contextlib.contextmanager
def stub_server(log_dir: Path, *flags: str, name: str = "stub") -> Iterator[Server]:
    """``python -m stub`` with ``flags`` (default: FAST_STUB) until the block ends."""
    port = free_port()
    args = ["-m", "stub", "--port", str(port), *(flags or FAST_STUB)]
    with running(args, "/health", port, log_dir / f"{name}.log") as server:
        yield server


@contextlib.contextmanager
def target_server(
    log_dir: Path,
    embedding_url: str,
    *,
    database_url: str | None = None,
    env: dict[str, str] | None = None,
    name: str = "target",
) -> Iterator[Server]:
    """``python -m platforms.reference`` on a fresh SQLite file in ``log_dir`` (or a URL)."""
    port = free_port()
    database_url = database_url or f"sqlite:///{log_dir / (name + '.sqlite3')}"
    args = ["-m", "platforms.reference", "--port", str(port), "--database-url", database_url]
    full_env = {**RELAXED_LIMITS, **(env or {}), "EMBEDDING_URL": embedding_url}
    with running(args, TARGET_HEALTH, port, log_dir / f"{name}.log", env=full_env) as server:
        yield server
