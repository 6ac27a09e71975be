"""What the master and the load-generating processes tell each other, as typed records.

Locust carries these as custom messages (msgpack over its own socket, or a direct call in
a local run). Each message is a msgspec Struct, encoded by msgspec to bytes where it is sent
(Locust's msgpack carries bytes as they are) and decoded into its type where it arrives, in
a local run as in a distributed one: a field of the wrong shape is refused there, in one
line naming it, rather than read as a ``KeyError`` stages later. The master sends everything
a process needs (scenario, fixture, trust, its slot among W), so a worker needs nothing but
LOAD_PASSWORD; pings between ``Ready`` and the plan time the round trip the start must allow
for; samples travel back in batches with Locust's regular worker reports, and the last ones
with ``Drained``, which the master therefore receives after all the others.

A worker of another version is refused at Prepare: ``Header`` is what every version's
Prepare begins with, so the versions are compared before anything else of it is read.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import msgspec
from msgspec import Struct, field

from engine.content_coding import DEFAULT_ACCEPT
from engine.run_record import OPEN_ARRIVAL, ProcessStart
from engine.samples import Sample
from engine.schedule import Plan
from engine.seam import Accepted
from engine.trust import Trust
from inputs.fixture import Fixture
from inputs.scenario import Scenario
from probes import Reading

log = logging.getLogger(__name__)

# The kit's version (pyproject.toml's), read once: master and workers must say the same.
VERSION: str = tomllib.loads(
    (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
)["project"]["version"]
# Key of the sample batch inside Locust's report_to_master data.
REPORT_KEY = "loadkit"


class MessageError(ValueError):
    """A message this process will not act on: one line naming the field, or the versions."""


class Message(Struct, frozen=True):
    """A message of the kit's, sent as Locust's custom message ``kind``."""

    kind: ClassVar[str]


class Header(Message, frozen=True):
    """What every version's Prepare begins with: enough to compare versions and to answer
    the master in the slot it gave, whatever else the other version's Prepare holds."""

    kind: ClassVar[str] = "loadkit_prepare"

    version: str
    run_id: str
    slots: dict[str, int]


class Prepare(Header, frozen=True, kw_only=True):
    """Sign in and get ready: the run, each process's slot and connection share, what to run."""

    connections: list[int]
    # The scenario the run offers, as the master settled it (a workload preflight skipped at
    # share 0): the process draws its arrivals from this one, never from a file.
    scenario: Scenario
    fixture: Fixture
    host: str
    email: str
    # "open arrival" (the dispatcher) or "users" (closed-loop Locust users); runner/users.py.
    mode: str = OPEN_ARRIVAL
    # Connections each process opens before it says it is ready: what its first second needs.
    warm: list[int] = field(default_factory=list)
    # The Accept-Encoding the load's requests send (--accept-encoding).
    accept_encoding: str = DEFAULT_ACCEPT
    # The certificates its TLS connections trust (the master's CA, sent, so a worker on
    # another machine needs no file); the default store by default.
    tls: Trust = field(default_factory=Trust)


class Ping(Message, frozen=True):
    """Answer at once: the master times the round trip to pick a start every process makes."""

    kind: ClassVar[str] = "loadkit_ping"

    run_id: str
    seq: int


class Pong(Message, frozen=True):
    """The answer to a Ping, from one process."""

    kind: ClassVar[str] = "loadkit_pong"

    run_id: str
    seq: int
    slot: int


class Ready(Message, frozen=True):
    """A process is signed in (``error`` empty) or says in one line why it cannot run."""

    kind: ClassVar[str] = "loadkit_ready"

    run_id: str
    slot: int
    error: str = ""


class PlanUpdate(Message, frozen=True):
    """The schedule from ``start_epoch``: the whole plan, again whenever the rate changes."""

    kind: ClassVar[str] = "loadkit_plan"

    run_id: str
    start_epoch: float
    plan: Plan


class Stop(Message, frozen=True):
    """Stop the run now: what was due and not finished is recorded as abandoned."""

    kind: ClassVar[str] = "loadkit_stop"

    run_id: str


class Offered(Struct, frozen=True, array_like=True):
    """What one process has offered of one workload in one segment so far."""

    segment: int
    workload: str
    count: int


class Batch(Struct, frozen=True):
    """Samples and the generator's own readings since the last batch, from one process, the
    arrivals the platform accepted for later work, and what the process has offered so far,
    counted at the instant its samples were taken: offered minus the samples the master holds
    is then exactly what was in flight there (the live metrics' in-flight; run.json's offered
    from the last batch)."""

    run_id: str
    slot: int
    samples: list[Sample] = field(default_factory=list)
    readings: list[Reading] = field(default_factory=list)
    accepted: list[Accepted] = field(default_factory=list)
    offered: list[Offered] = field(default_factory=list)


class Drained(Message, frozen=True):
    """A process's last batch (its ``offered`` is final: it offers nothing more), why it
    ended, and how its start went (run.json's ``start.processes``)."""

    kind: ClassVar[str] = "loadkit_drained"

    batch: Batch
    reason: str = ""
    start: ProcessStart = field(default_factory=ProcessStart)


# What a process answers the master with.
ToMaster = Ready | Pong | Drained
S = TypeVar("S", bound=Struct)
M = TypeVar("M", bound=Message)

_encoder = msgspec.msgpack.Encoder()
_decoders: dict[type, msgspec.msgpack.Decoder] = {}


def encode(message: Struct) -> bytes:
    """A message (or a batch) as the bytes Locust carries."""
    return _encoder.encode(message)


def decode(kind: type[S], data: Any) -> S:
    """The ``kind`` in ``data`` (bytes ``encode`` made), every field checked: MessageError
    naming the field (msgspec's words) when it is not one."""
    decoder = _decoders.get(kind)
    if decoder is None:
        decoder = _decoders[kind] = msgspec.msgpack.Decoder(kind)
    if not isinstance(data, bytes):
        raise MessageError(f"{kind.__name__}: got {type(data).__name__}, not an encoded message")
    try:
        return decoder.decode(data)
    except msgspec.DecodeError as exc:  # ValidationError is one, and names the field
        raise MessageError(f"{kind.__name__}: {exc}") from None


def prepare_from(header: Header, data: bytes) -> Prepare:
    """The whole Prepare whose ``header`` was read: MessageError with one line naming both
    versions when the master's is not this process's, else naming a malformed field."""
    if header.version != VERSION:
        raise MessageError(
            f"version: this load process is agent-loadkit {VERSION}, the master is "
            f"{header.version}; run the same version on the master and every worker"
        )
    return decode(Prepare, data)


def send(send_message: Callable[[str, bytes], None], message: Message) -> None:
    """Send ``message`` through a Locust runner's ``send_message``, under its kind."""
    send_message(message.kind, encode(message))


def listen(register: Callable[..., None], kind: type[M], handle: Callable[[M], Any]) -> None:
    """Through a Locust runner's ``register_message``, hand each ``kind`` message that arrives
    to ``handle``, decoded and checked; a malformed one is refused here in one line naming
    the field, and goes no further."""

    def on_message(msg, **_) -> None:
        try:
            message = decode(kind, msg.data)
        except MessageError as exc:
            log.error("%s from %s refused: %s", kind.kind, msg.node_id, exc)
            return
        handle(message)

    register(kind.kind, on_message)
