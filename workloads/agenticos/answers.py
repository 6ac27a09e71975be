"""AgenticOS's success bodies as typed Structs: what the API contract promises each workload.

The contract is /work/shared/contract/agenticos-api.md. Each Struct names only
the fields the kit relies on, typed as AgenticOS 0.0.247's ``app/schemas`` type
them: a list page's ``items`` and integer ``total``, a run's string ``output``
and ``status``, a search hit's ``content``, ``score``, ``metadata`` and
``parent_doc_id``, an upload's ``id``. Every other field is ignored, so the
platform may add some. ``workloads.answers.held`` decodes a body into one and
names what does not fit."""

from __future__ import annotations

import msgspec

from workloads.answers import AnyObject, decoder


class ListPage(msgspec.Struct):
    """``GET /agents|runs|conversations?limit=20``: ``{items: [...], total}``."""

    items: list[AnyObject]
    total: int


class RunResult(msgspec.Struct):
    """``POST /agents/{id}/run``: the finished run (AgentRunResult)."""

    run_id: str
    output: str
    status: str


class SearchHit(msgspec.Struct):
    """One retrieved chunk (RAGSearchResult)."""

    content: str
    score: float
    metadata: dict
    parent_doc_id: str


class SearchResult(msgspec.Struct):
    """``POST /rag/search``: ``{results: [...]}`` (RAGSearchResponse)."""

    results: list[SearchHit]


class Accepted(msgspec.Struct):
    """``POST /rag/collections/{name}/ingest``: 202, the upload accepted (RAGIngestResponse)."""

    id: str
    document_id: str | None = None


LIST_PAGE = decoder(ListPage)
RUN_RESULT = decoder(RunResult)
SEARCH_RESULT = decoder(SearchResult)
ACCEPTED = decoder(Accepted)
