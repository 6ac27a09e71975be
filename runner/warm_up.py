"""Everything a load process does before it says it is ready, so none of it lands in the run.

Connections are opened by the transport's own ``prepare`` and memory is settled here, during
Prepare, before the master picks the start time: done inside the first second of load, this
work made the first arrivals of distributed runs late (docs/internals.md, "Figures behind
the code"). The expensive collection runs once, when the process starts, and the import graph
is then frozen out of the collector's view, so Prepare's settle scans only what came after.
run.json's ``start`` says what each process spent before it was ready: ``sign_in_ms``,
``connect_ms``, ``settle_ms``.
"""

from __future__ import annotations

import gc


def settle_memory() -> None:
    """Collect now and move what survives out of the collector's view (``gc.freeze``), so the
    run's first collections scan only what the run allocates, not the whole import graph."""
    gc.collect()
    gc.freeze()
