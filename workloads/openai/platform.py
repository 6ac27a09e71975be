"""OpenAI-compatible endpoints as the kit knows them: the one record the registry reads
(engine.seam.Platform), with what seeding finds and what preflight checks.

Seeding reads the model list (discover.py), then reaches the server as a run will and asks
it for one answer in the chosen flavour through the dialect itself, so a server that does
not serve that flavour (the stub has no ``/v1/responses``) is refused in one line before a
fixture is written. The kit gives the model no tool: an OpenAI endpoint is a model, not an
agent, and answers in one step, so a scenario whose turns plan more steps is refused before
load (``tool=None``, engine/agent_plan.py's plan_problem).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from engine.samples import OK
from engine.seam import Platform, Probe, SeedError, Seeding, SeedOption, SeedSetup, Setup
from inputs.fixture import Fixture
from workloads.one_arrival import signed_setup
from workloads.openai.dialect import NOT_OFFERED, OFFERS, OpenAI, OpenAISeeded
from workloads.openai.discover import described
from workloads.openai.wire import FLAVOURS, RESPONSES
from workloads.preflight import served_probe

NAME = "openai"
# Where `make litellm` serves LiteLLM's proxy (its own default port).
DEFAULT_API_URL = "http://127.0.0.1:4000"


def make(setup: SeedSetup) -> OpenAISeeded:
    """The deployment as its model list describes it, then one answer in the chosen flavour;
    SeedError if that answer does not come."""
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
        _dialect,
    ):
        ran = reached.one("agent_run")
    if ran.outcome != OK:
        if own.api == RESPONSES and ran.detail.startswith(("HTTP 404", "HTTP 405")):
            why = "the server does not serve the Responses API; seed with --api chat"
        else:
            why = f"check that the model reaches its provider (the stub at {setup.stub_url})"
        raise SeedError(
            f"one answer from {FLAVOURS[own.api]} ended {ran.outcome}: "
            f"{ran.detail or 'no detail'}; {why}"
        )
    print(f"seed: openai {subject(own)}")
    return own


def subject(own: OpenAISeeded) -> str:
    """What serves the work, in preflight's and the seed's words."""
    model, embedding = own.model, own.embedding_model
    embeds = f", embeddings by {embedding}" if embedding != model else ""
    key = "a bearer key" if own.key else "no key"
    return f"{FLAVOURS[own.api]} at {own.prefix} for model {model}{embeds} ({key})"


@contextmanager
def probes(setup: Setup[OpenAISeeded]) -> Iterator[list[Probe]]:
    """One arrival of each offered workload through the dialect: an answer whole, a streamed
    turn (the flavour's stream, which the default's one run does not reach), the model list
    and one embedding."""
    yield [
        served_probe(setup, "agent_run", frozenset({"agent_run"})),
        served_probe(setup, "chat_stream", frozenset({"chat_stream"})),
        served_probe(setup, "api_read", frozenset({"api_read"})),
        served_probe(setup, "rag_query", frozenset({"rag_query"})),
    ]


PLATFORM = Platform(
    name=NAME,
    dialect=OpenAI,
    seeded=OpenAISeeded,
    offers=OFFERS,
    not_offered=NOT_OFFERED,
    seeding=Seeding(
        make,
        DEFAULT_API_URL,
        options=(
            SeedOption(
                "--api",
                "the API flavour: chat (Chat Completions) or responses (the Responses API)",
                default="chat",
            ),
            SeedOption("--model", "the model to load (default: the first GET /v1/models lists)"),
            SeedOption("--embedding-model", "the model retrieval embeds with (default: --model)"),
        ),
        stub_help="the stub as the server (or its provider) reaches it, for the record",
    ),
    probes=probes,
    tool=None,
    subject=subject,
    started_by="make litellm, or your server",
)
