"""What the master and the load-generating processes tell each other, as plain data.

Locust carries these as custom messages (msgpack over its own socket, or a direct
call in a local run). The master sends everything a process needs (scenario,
fixture, its slot among W), so a worker needs nothing but LOAD_PASSWORD; pings
between ``Ready`` and the plan time the round trip the start must allow for; samples
travel back in compact tuples with Locust's regular worker reports, and the last
ones with ``Drained``, which the master therefore receives after all the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.content_coding import DEFAULT_ACCEPT

# Message types: master -> processes.
PREPARE = "loadkit_prepare"
PING = "loadkit_ping"
PLAN = "loadkit_plan"
STOP = "loadkit_stop"
# Message types: processes -> master.
READY = "loadkit_ready"
PONG = "loadkit_pong"
DRAINED = "loadkit_drained"
# Key of the sample batch inside Locust's report_to_master data.
REPORT_KEY = "loadkit"


@dataclass
class Prepare:
    """Sign in and get ready: the run, each process's slot and connection share, what to run."""

    run_id: str
    slots: dict[str, int]
    connections: list[int]
    scenario: dict
    fixture: dict
    host: str
    email: str
    # "open arrival" (the dispatcher) or "users" (closed-loop Locust users); see runner/users.py.
    mode: str = "open arrival"
    # Connections each process opens before it says it is ready: what its first second needs.
    warm: list[int] = field(default_factory=list)
    # The Accept-Encoding the load's requests send (--accept-encoding).
    accept_encoding: str = DEFAULT_ACCEPT
    # The certificates its TLS connections trust (engine.trust.Trust.to_wire: the master's CA,
    # sent, so a worker on another machine needs no file): empty, the default store.
    tls: dict = field(default_factory=dict)


@dataclass
class Ping:
    """Answer at once: the master times the round trip to pick a start every process makes."""

    run_id: str
    seq: int


@dataclass
class Pong:
    """The answer to a Ping, from one process."""

    run_id: str
    seq: int
    slot: int


@dataclass
class Ready:
    """A process is signed in (``error`` empty) or says in one line why it cannot run."""

    run_id: str
    slot: int
    error: str = ""


@dataclass
class PlanUpdate:
    """The schedule from ``start_epoch``: the whole plan, again whenever the rate changes."""

    run_id: str
    start_epoch: float
    plan: list[dict]


@dataclass
class Batch:
    """Samples and the generator's own readings since the last batch, from one process, the
    arrivals the platform accepted for later work as ``[index, workload, ref]``, and what the
    process has offered so far as ``[segment, workload, count]``, counted at the instant its
    samples were taken: offered minus the samples the master holds is then exactly what was
    in flight there (the live metrics' in-flight; run.json's offered from the last batch)."""

    run_id: str
    slot: int
    samples: list = field(default_factory=list)
    readings: list = field(default_factory=list)
    accepted: list = field(default_factory=list)
    offered: list = field(default_factory=list)


@dataclass
class Drained:
    """A process's last batch (its ``offered`` is final: it offers nothing more), and why."""

    batch: Batch
    reason: str = ""
    # How the start went here: plan_ahead_ms (plan received before t = 0; negative is after)
    # and behind_ms (how late this process woke for t = 0); see LoadProcess.
    start: dict = field(default_factory=dict)


def to_wire(message: Prepare | Ping | Pong | Ready | PlanUpdate | Batch | Drained) -> dict:
    """A message as the plain dict Locust sends; shallow, so thousands of rows cost nothing."""
    data = dict(vars(message))
    if isinstance(message, Drained):
        data["batch"] = dict(vars(message.batch))
    return data


def drained_from_wire(data: dict) -> Drained:
    """The Drained message a process sent (a dict after msgpack, the object in a local run)."""
    return Drained(Batch(**data["batch"]), data["reason"], data.get("start", {}))
