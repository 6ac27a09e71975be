"""Everything a load process does before it says it is ready, so none of it lands in the run.

Measured before this existed: a worker's first plan opened its connections, made its
pools and ran collections inside the first second of load, and the first arrivals of
every distributed run were sent 0.1-1.2 s late. Here that work happens during
Prepare, before the master picks the start time: connections are opened by the
transport's own ``prepare``, and memory is settled here.

Memory is settled twice. The first settle, when the load process starts, is the
expensive one: a full collection over the ~144,000 objects the imports leave
(Locust, gevent, and the reports' pandas and matplotlib), ~150 ms on a free core.
Done at Prepare instead, every worker did it in the same instant, and at 4 workers
on 2 busy cores it took 0.5-0.9 s of each one's 0.6-1.2 s warm-up, a different
share each time: the one that got a core first was ready in tens of milliseconds
(issue 25). Frozen at start, the import graph is out of the collector's view, so
Prepare's settle scans only what came after it (under a millisecond) and frees
what an earlier run left behind. run.json's ``start`` says what each process spent
before it was ready: ``sign_in_ms``, ``connect_ms``, ``settle_ms``.
"""

from __future__ import annotations

import gc


def settle_memory() -> None:
    """Collect now and move what survives out of the collector's view (``gc.freeze``), so the
    run's first collections scan only what the run allocates, not the whole import graph."""
    gc.collect()
    gc.freeze()
