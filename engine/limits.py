"""What one load process can hold: the bound on its concurrent arrivals, and the files it takes.

The dispatcher caps its connections here and the run's settings cap
``--connections`` with the same figure, so the limit lives in the core both use
rather than in the options module (which would pull the scenario, the fixture and
the probes into the dispatcher for one number).
"""

from __future__ import annotations

import contextlib
import math
import resource
from typing import NamedTuple

import psutil

# File descriptors a load process keeps for everything but its connections (Python,
# Locust's own sockets, logs, the run's files, /proc reads of its probes).
FD_RESERVE = 128
# Memory one concurrent arrival may cost, generously: two sockets' kernel buffers and a greenlet.
ARRIVAL_BYTES = 256 * 1024
# How an operator raises the hard limit, in the three places a load process usually runs.
RAISE_HARD_LIMIT = "ulimit -Hn, systemd's LimitNOFILE=, docker run --ulimit nofile="


class Hold(NamedTuple):
    """The most concurrent arrivals this process holds, and, when that is fewer than were
    asked, why (the limit that binds and how to lift it); empty when it holds them all."""

    arrivals: int
    short_because: str


def files_needed(arrivals: int, two_socket_share: float = 0.0) -> int:
    """Descriptors ``arrivals`` concurrent arrivals may take: a socket each (idle keep-alive
    ones are kept within what the arrivals in flight leave: ``HttpTransport.trim_idle``), a
    second for the share that may hold two at once (a chat turn cancelled through the
    platform's HTTP API while its stream is open), and FD_RESERVE for the rest."""
    return FD_RESERVE + arrivals + math.ceil(arrivals * two_socket_share)


def raise_open_files_limit(needed: int) -> int:
    """Raise this process's open-files limit towards ``needed``; the (soft) limit now in force.

    Every concurrent arrival holds a socket, and the soft limit (often 1024) is a
    default, not a decision: running into it turns a lagging server into the
    generator's own ``OSError: Too many open files``. So the soft limit goes to the
    hard one; where the hard one is below the need, a process allowed to
    (CAP_SYS_RESOURCE, as root on a host) raises it to the need, as HAProxy and nginx
    raise theirs; otherwise it stays, and ``process_connection_limit`` says so.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < needed:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (needed, needed))
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, needed)
    if soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def process_connection_limit(wanted: int, two_socket_share: float = 0.0) -> Hold:
    """How many of ``wanted`` concurrent arrivals this process can hold without running out
    of files or memory, once its open-files limit is raised for them (``files_needed``,
    with ``two_socket_share`` of them holding two sockets); memory pays for ARRIVAL_BYTES
    each out of what is available."""
    needed = files_needed(wanted, two_socket_share)
    open_files = raise_open_files_limit(needed)
    by_files = max(1, math.floor((open_files - FD_RESERVE) / (1 + two_socket_share)))
    available = psutil.virtual_memory().available
    by_memory = max(1, available // ARRIVAL_BYTES)
    most = min(wanted, by_files, by_memory)
    if most == wanted:
        return Hold(most, "")
    if by_files <= by_memory:
        return Hold(
            most,
            f"its open-files limit is {open_files}, below the {needed} that "
            f"{wanted} arrivals need, and it may not raise its hard limit ({RAISE_HARD_LIMIT})",
        )
    return Hold(
        most,
        f"{available >> 20} MiB of memory available pays for {by_memory} at "
        f"{ARRIVAL_BYTES >> 10} KiB each",
    )


def two_socket_share(chat_share: float, cancel_share: float) -> float:
    """The share of arrivals that may hold two sockets at once: the chat turns cancelled (a
    cancel may go over the platform's HTTP API while the turn's stream stays open)."""
    return chat_share * cancel_share
