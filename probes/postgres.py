"""Database connections from pg_stat_activity: the seed's runs found the pool, not CPU, binding."""

from __future__ import annotations

import psycopg

# Counts client backends on the API's database, leaving out the probe's own connection.
QUERY = """
SELECT count(*), count(*) FILTER (WHERE state = 'active')
FROM pg_stat_activity
WHERE datname = current_database() AND backend_type = 'client backend'
  AND pid <> pg_backend_pid()
"""


class PostgresProbe:
    """Holds one autocommit connection for the run, so probing adds one backend, not many."""

    name = "db"

    def __init__(self, url: str):
        if not url.startswith(("postgresql", "postgres:")):
            raise ValueError("not a PostgreSQL URL; connections are probed on PostgreSQL only")
        self._conn = psycopg.connect(_libpq_url(url), autocommit=True, connect_timeout=3)

    def read(self) -> dict[str, float]:
        """Total and active connections to the database right now."""
        row = self._conn.execute(QUERY).fetchone()
        if row is None:
            raise ValueError("the connection count query returned no row")
        total, active = row
        return {"connections_total": float(total), "connections_active": float(active)}

    def close(self) -> None:
        self._conn.close()


def _libpq_url(url: str) -> str:
    """A SQLAlchemy-style URL (postgresql+psycopg://) as libpq spells it."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme.split('+')[0]}{sep}{rest}"
