"""LangGraph's part of the fixture: the graph the runs use and the store namespace searched.

A deployment defines its graphs in code; the seed checks the graph is served
and fills the namespace of the store's semantic index with the documents.
"""

from __future__ import annotations

from dataclasses import dataclass

from inputs.fixture import Fixture, read_seeded


@dataclass(frozen=True)
class LangGraphSeeded:
    """What ``workloads.langgraph.seed`` found or filled: names, never the key."""

    # The graph id, which is also its system assistant's name (runs pass it as assistant_id).
    graph_id: str
    # The store namespace holding the documents (searched by prefix).
    namespace: str
    documents: int


def seeded(fixture: Fixture) -> LangGraphSeeded:
    """The fixture's LangGraph part, or FixtureError naming what is missing."""
    return read_seeded(LangGraphSeeded, fixture)
