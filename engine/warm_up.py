"""Everything a load process does before it says it is ready, so none of it lands in the run.

Measured before this existed: a worker's first plan opened its connections, made its
pools and ran collections inside the first second of load, and the first arrivals of
every distributed run were sent 0.1-1.2 s late. Here that work happens during
Prepare, before the master picks the start time.
"""

from __future__ import annotations

import gc

import gevent
import gevent.pool

from engine.http import HttpTransport

# Connections opened at once while warming up; more would be a burst on the platform.
OPEN_AT_ONCE = 32


def open_connections(http: HttpTransport, count: int) -> int:
    """Open ``count`` keep-alive connections to the host now and leave them in the pool;
    returns how many opened. (The transport's own "open ahead" replaces this when it has one.)"""
    opener = getattr(http, "open_ahead", None)
    if opener is not None:
        return opener(count)
    pool = http._client._connection_pool
    sockets = []
    group = gevent.pool.Pool(OPEN_AT_ONCE)

    def one() -> None:
        try:
            sockets.append(pool.get_socket())
        except OSError:
            return

    for _ in range(count):
        group.spawn(one)
    group.join()
    for sock in sockets:
        pool.return_socket(sock)
    return len(sockets)


def settle_memory() -> None:
    """Collect now and move what survives out of the collector's view (``gc.freeze``), so the
    run's first collections scan only what the run allocates, not the whole import graph."""
    gc.collect()
    gc.freeze()
