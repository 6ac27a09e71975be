"""A2A as the kit knows it: the one record the registry reads (engine.seam.Platform), with what
seeding makes of a card and what preflight checks.

Seeding reads the card (card.py), then reaches the server as a run will and asks it two
things through the dialect itself: whether it answers ListTasks (a list read is then a
ListTasks, else a GetTask), and, where it does not, for one task, made by one message,
that a list read can ask about before the run has made its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from engine.agent_plan import ANY_TOOL
from engine.samples import OK
from engine.seam import Platform, Probe, SeedError, Seeding, SeedOption, SeedSetup, Setup, Skip
from inputs.fixture import Fixture
from workloads.a2a.card import A2ASeeded, described
from workloads.a2a.dialect import A2A, NOT_OFFERED, OFFERS
from workloads.a2a.wire import BINDINGS
from workloads.one_arrival import signed_setup
from workloads.preflight import served_probe

NAME = "a2a"
# Where `make a2a` serves platforms/a2a.
DEFAULT_API_URL = "http://127.0.0.1:9999"


def make(setup: SeedSetup) -> A2ASeeded:
    """The deployment as its card describes it, then asked what it serves; SeedError if a
    message to its agent does not end in a completed task."""
    own = described(setup)
    fixture = Fixture(
        api_url=setup.api_url.rstrip("/"),
        stub_url=setup.stub_url.rstrip("/"),
        platform=NAME,
        seeded=dataclasses.asdict(own),
    )
    fix = "pass the right --api-url"
    with signed_setup(PLATFORM, fixture, setup.email, setup.secret, purpose="seed", fix=fix) as (
        reached,
        dialect,
    ):
        listed = reached.one("api_read") if own.list_tasks else None
        if listed is None or listed.outcome != OK:
            if listed is not None:
                print(f"seed: ListTasks not served ({listed.detail}); list reads ask GetTask")
            ran = reached.one("agent_run")
            if ran.outcome != OK or not isinstance(dialect, A2A) or not dialect.recent:
                raise SeedError(
                    f"a message to the agent ended {ran.outcome}: {ran.detail or 'no task'}; "
                    f"check that the agent reaches its model (the stub at {setup.stub_url})"
                )
            task_id, context_id = dialect.recent[-1]
            own = dataclasses.replace(
                own, list_tasks=False, task_id=task_id, context_id=context_id or None
            )
    print(f"seed: a2a {subject(own)}")
    return own


def subject(own: A2ASeeded) -> str:
    """What serves the work, in preflight's and the seed's words."""
    streams = (
        "streaming"
        if own.streaming
        else "not streaming, tried anyway"
        if (own.stream_anyway)
        else "not streaming (the card says so)"
    )
    key = f"key in {own.key_header}" if own.key_header else "no key"
    reads = "ListTasks" if own.list_tasks else "GetTask"
    return f"A2A {own.version} {own.binding} at {own.rpc_path} ({streams}; {key}; reads {reads})"


@contextmanager
def probes(setup: Setup[A2ASeeded]) -> Iterator[list[Probe]]:
    """One agent run, one list read and (where the card says it streams, or the seed asked
    to try) one streamed turn, through the dialect; a card that says it does not stream
    leaves chat turns out, with why."""

    def streamed() -> str:
        own = setup.seeded
        if not (own.streaming or own.stream_anyway):
            raise Skip(
                "the agent card says streaming: false; seed with --stream-anyway to try "
                "streamed messages anyway"
            )
        return served_probe(setup, "chat_stream", frozenset({"chat_stream"})).check()

    yield [
        served_probe(setup, "agent_run", frozenset({"agent_run"})),
        Probe(frozenset({"chat_stream"}), streamed, optional=True),
        served_probe(setup, "api_read", frozenset({"api_read"})),
    ]


PLATFORM = Platform(
    name=NAME,
    dialect=A2A,
    seeded=A2ASeeded,
    offers=OFFERS,
    not_offered=NOT_OFFERED,
    seeding=Seeding(
        make,
        DEFAULT_API_URL,
        options=(
            SeedOption("--agent", "the agent, on a server hosting several (LangGraph, agno)"),
            SeedOption(
                "--binding",
                f"the interface to use where the card offers several: {', '.join(BINDINGS)}",
            ),
            SeedOption(
                "--key-header",
                "the header the key goes in where the card declares none (default "
                "Authorization: Bearer)",
            ),
            SeedOption(
                "--stream-anyway",
                "stream chat turns though the card says streaming: false",
                switch=True,
            ),
        ),
        stub_help="the stub as the agent's server reaches it, for the record",
    ),
    probes=probes,
    tool=ANY_TOOL,
    subject=subject,
    started_by="make a2a",
)
