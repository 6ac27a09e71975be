"""Stub + reference target on free loopback ports, seeded, for ``make demo`` and tests.

The reference target (``python -m platforms.reference``) runs from the kit's own
environment, on SQLite unless the options name a database, with the per-user run
limit raised so that a load test measures the platform and not its limiter.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from inputs.fixture import DEFAULT_EMAIL
from stack.local import LocalStack, StackOptions, child_env, running_stub, seed, topology
from stack.processes import free_port, running

# How ``make demo`` names this platform in its first line.
WHAT = "reference target"

# One identity stands in for many callers: at the platform's default of 30 runs a
# minute the experiment would measure the limiter, not the platform (the seed).
RAISED_RUN_LIMIT = 100_000


def _described(options: StackOptions) -> str:
    """The target as the topology line names it: its process, database and every knob moved
    from its default."""
    database = "Postgres" if options.database_url else "SQLite"
    knobs = [f"{k}={v}" for k, v in sorted(options.target_env.items())]
    knobs.append(f"RATE_LIMIT_RUN_PER_MINUTE={RAISED_RUN_LIMIT} raised from 30")
    return f"reference target (1 uvicorn process, {database}, {', '.join(knobs)})"


@contextlib.contextmanager
def start_stack(options: StackOptions) -> Iterator[LocalStack]:
    """Start stub and target, seed the fixture, yield; stop both when the block ends."""
    workdir = options.workdir
    env = child_env()
    with running_stub(options, env) as stub:
        target_port = free_port()
        database_url = options.database_url or f"sqlite:///{workdir.resolve()}/target.sqlite3"
        target_env = {
            **env,
            "RATE_LIMIT_RUN_PER_MINUTE": str(RAISED_RUN_LIMIT),
            "DATABASE_URL": database_url,
            "EMBEDDING_URL": stub.url,
            **options.target_env,
        }
        target_args = ["-m", "platforms.reference", "--port", str(target_port)]
        with running(
            target_args, "/api/v1/health", target_port, workdir / "target.log", target_env
        ) as target:
            fixture = workdir / "fixture.json"
            seed(target.url, stub.url, options.documents, fixture, env)
            described = topology(options, _described(options), stub)
            yield LocalStack(stub, target, fixture, DEFAULT_EMAIL, described, options.database_url)
