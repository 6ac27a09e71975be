"""LangGraph Agent Server's success bodies as typed Structs: what CONTRACT.md says each gets back.

Read from langgraph-api 0.16.7's routes and schemas (``langgraph_api/api/*.py``,
``langgraph_api/schema.py``): a thread or assistant search is a JSON array of
objects; ``/runs/wait`` is the run's final state values (``messages``, each with a
``type``), or ``{"__error__": {...}}`` when the run failed; a store search is
``{"items": [...]}``, each item with its ``key`` and ``score``; a background run
is the Run (``run_id``, ``thread_id``, ``status``). Only these fields are named;
the server may add others. ``workloads.answers.held`` decodes a body into one
and names what does not fit.
"""

from __future__ import annotations

import msgspec

from workloads.answers import AnyObject, decoder


class Message(msgspec.Struct):
    """One message of a run's state: its ``type`` (``human``, ``ai``, ...)."""

    type: str


class RunError(msgspec.Struct):
    """A failed run's ``__error__``: the error's class and its message."""

    error: str = ""
    message: str = ""


class Values(msgspec.Struct):
    """``POST /runs/wait``: the final values, or the run's error under ``__error__``."""

    messages: list[Message] = []
    error: RunError | None = msgspec.field(default=None, name="__error__")


class Assistant(msgspec.Struct):
    """One assistant of ``POST /assistants/search``: the graph it runs."""

    graph_id: str


class Item(msgspec.Struct):
    """One store item found: its key, and its similarity (None when the store has no index)."""

    key: str
    score: float | None = None


class SearchPage(msgspec.Struct):
    """``POST /store/items/search``: ``{"items": [...]}``."""

    items: list[Item]


class Run(msgspec.Struct):
    """``POST /threads/{id}/runs``: the background run accepted."""

    run_id: str
    thread_id: str
    status: str


LIST = decoder(list[AnyObject])
ASSISTANTS = decoder(list[Assistant])
VALUES = decoder(Values)
SEARCH_PAGE = decoder(SearchPage)
RUN = decoder(Run)
