"""What one load process can hold: the bound on its concurrent arrivals.

The dispatcher caps its connections here and the run's settings cap
``--connections`` with the same figure, so the limit lives in the core both use
rather than in the options module (which would pull the scenario, the fixture and
the probes into the dispatcher for one number).
"""

from __future__ import annotations

import contextlib
import resource

import psutil

# File descriptors a load process keeps for everything but its connections (Python,
# Locust's own sockets, logs, the run's files, /proc reads of its probes).
FD_RESERVE = 128
# Memory one concurrent arrival may cost, generously: two sockets' kernel buffers and a greenlet.
ARRIVAL_BYTES = 256 * 1024


def raise_open_files_limit() -> int:
    """Raise this process's open-files limit to its hard maximum; the limit now in force.

    Every concurrent arrival holds a socket, and the soft limit (often 1024) is a
    default, not a decision: running into it turns a lagging server into the
    generator's own ``OSError: Too many open files``.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def process_connection_limit() -> int:
    """The most concurrent arrivals this process can hold without running out of files or memory.

    An arrival in flight holds at most one socket and the transport keeps at most as
    many idle keep-alive ones, so half the descriptors left after FD_RESERVE; and no
    more than the available memory pays for at ARRIVAL_BYTES each.
    """
    by_files = (raise_open_files_limit() - FD_RESERVE) // 2
    by_memory = psutil.virtual_memory().available // ARRIVAL_BYTES
    return max(1, min(by_files, by_memory))
