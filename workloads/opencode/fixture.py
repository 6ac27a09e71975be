"""opencode's part of the fixture: the project folder it serves, the corpus there, its model.

opencode serves one project folder and searches its files; the seed writes the
corpus into that folder (it must be on the machine the seed runs on) and reads
the model opencode is configured with, which every message names.
"""

from __future__ import annotations

from dataclasses import dataclass

from inputs.fixture import Fixture, read_seeded


@dataclass(frozen=True)
class OpenCodeSeeded:
    """What ``workloads.opencode.seed`` found or wrote: paths and names, never the password."""

    # The project folder opencode serves (its GET /path ``directory``).
    directory: str
    # The folder under it holding the corpus, one file per document.
    corpus: str
    documents: int
    # The model each message names: opencode's provider and model ids ("stub", "stub").
    provider_id: str
    model_id: str


def seeded(fixture: Fixture) -> OpenCodeSeeded:
    """The fixture's opencode part, or FixtureError naming what is missing."""
    return read_seeded(OpenCodeSeeded, fixture)
