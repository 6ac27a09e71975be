"""The database pool, configured and held the way AgenticOS holds it.

One SQLAlchemy async engine per process, SQLite (aiosqlite, WAL) by default or
PostgreSQL (psycopg) by URL, with AgenticOS's pool knobs. A request that needs
the database checks a connection out when it starts and keeps it until it
ends, model call included; that is what makes the pool the binding constraint
under load there, and the target must fail the same way (wait the pool
timeout, then 500), or a run against it would measure a kinder platform.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import cast

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.pool import AsyncAdaptedQueuePool

from platforms.reference.settings import Settings

# Milliseconds a SQLite writer waits for the file lock before failing: writes
# serialise on one file, and under a burst they queue rather than error.
SQLITE_BUSY_TIMEOUT_MS = 10_000


def async_database_url(url: str) -> str:
    """The URL with the async driver SQLAlchemy needs: aiosqlite or psycopg."""
    parsed = make_url(url.replace("postgres://", "postgresql://", 1))
    if parsed.drivername.startswith("sqlite"):
        return parsed.set(drivername="sqlite+aiosqlite").render_as_string(hide_password=False)
    return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    """WAL lets readers run beside the one writer; the busy timeout makes writers queue."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def create_engine(settings: Settings) -> AsyncEngine:
    """An engine whose pool has AgenticOS's knobs, for either database."""
    url = async_database_url(settings.database_url)
    engine = create_async_engine(
        url,
        poolclass=AsyncAdaptedQueuePool,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        pool_timeout=settings.db_pool_timeout,
    )
    if engine.dialect.name == "sqlite":
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


@dataclass
class PoolGauge:
    """How many callers wait for a connection now: SQLAlchemy's pool does not count them."""

    waiting: int = 0


class Database:
    """The engine plus the one way the app borrows a connection (so waiting is counted)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.gauge = PoolGauge()

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session holding one pooled connection until the block ends, commits included.

        Binding the session to a checked-out connection keeps the connection
        across commits, so a run can commit its row and still hold the
        connection through the model call, as AgenticOS does. A pool that stays
        exhausted for ``DB_POOL_TIMEOUT`` raises ``sqlalchemy.exc.TimeoutError``.
        """
        self.gauge.waiting += 1
        try:
            connection = await self.engine.connect()
        finally:
            self.gauge.waiting -= 1
        try:
            async with AsyncSession(bind=connection, expire_on_commit=False) as session:
                yield session
        finally:
            await connection.close()

    def pool_status(self) -> dict[str, int]:
        """Size, checked out, overflow in use and waiting, for /metrics."""
        # The engine is built with this pool class (make_engine), on either database.
        pool = cast(AsyncAdaptedQueuePool, self.engine.pool)
        return {
            "size": pool.size(),
            "checked_out": pool.checkedout(),
            "overflow": max(0, pool.overflow()),
            "waiting": self.gauge.waiting,
        }
