"""agno AgentOS's success bodies as typed Structs: what CONTRACT.md says each workload gets back.

Read from agno 3.1.10's schemas (``agno/os/schema.py``, ``agno/os/routers/*``):
``GET /agents`` is a JSON array of agents; ``GET /sessions`` and
``POST /knowledge/search`` are a ``PaginatedResponse`` (``data`` a list, ``meta``
an object); a non-streamed run is its RunOutput (``status`` a string); an upload
is its ContentResponseSchema (``id``); a WhatsApp delivery is
``{"status": "processing"}``. Only these fields are named; agno may add others.
``workloads.answers.held`` decodes a body into one and names what does not fit.
"""

from __future__ import annotations

import msgspec

from workloads.answers import AnyObject, decoder


class Agent(msgspec.Struct):
    """One agent of ``GET /agents``: its id."""

    id: str


class Page(msgspec.Struct):
    """``GET /sessions``: ``{data: [...], meta: {...}}`` (PaginatedResponse[SessionSchema])."""

    data: list[AnyObject]
    meta: AnyObject


class SearchHit(msgspec.Struct):
    """One search result (VectorSearchResult): its ``content``."""

    content: str


class SearchPage(msgspec.Struct):
    """``POST /knowledge/search``: PaginatedResponse[VectorSearchResult]."""

    data: list[SearchHit]
    meta: AnyObject


class RunOutput(msgspec.Struct):
    """``POST /agents/{id}/runs`` with ``stream=false``: the run, ``COMPLETED`` or not."""

    status: str


class Content(msgspec.Struct):
    """``POST /knowledge/content``: 202, the content accepted (ContentResponseSchema)."""

    id: str


class Delivery(msgspec.Struct):
    """``POST /whatsapp/webhook``: ``{"status": "processing"}``."""

    status: str


AGENTS = decoder(list[Agent])
PAGE = decoder(Page)
SEARCH_PAGE = decoder(SearchPage)
RUN_OUTPUT = decoder(RunOutput)
CONTENT = decoder(Content)
DELIVERY = decoder(Delivery)
