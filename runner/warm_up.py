"""Everything a load process does before it says it is ready, so none of it lands in the run.

Measured before this existed: a worker's first plan opened its connections, made its
pools and ran collections inside the first second of load, and the first arrivals of
every distributed run were sent 0.1-1.2 s late. Here that work happens during
Prepare, before the master picks the start time: connections are opened by the
transport's own ``prepare``, and memory is settled here.
"""

from __future__ import annotations

import gc


def settle_memory() -> None:
    """Collect now and move what survives out of the collector's view (``gc.freeze``), so the
    run's first collections scan only what the run allocates, not the whole import graph."""
    gc.collect()
    gc.freeze()
