"""What the server needs from its operator, and the environment langgraph-api reads it from.

langgraph-api is configured through environment variables read when its
modules are imported (``langgraph_api.config``): the graphs, the store's index,
the auth handler and the number of concurrent runs. ``langgraph dev`` builds
that environment from ``langgraph.json``; ``server_environment`` builds the same
one from our settings, so the launcher can serve ``langgraph_api.server:app``
on a socket it bound itself (see ``__main__.py`` for why not ``langgraph dev``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

# The graph the kit runs, by the name the API knows it (and its system assistant) by.
GRAPH_ID = "loadkit-agent"
# The stub's default embedding width; the store's index is fixed to it at start.
EMBEDDING_DIM = 768
# Concurrent runs the in-memory queue executes: its own default is 10 and `langgraph dev`'s 1,
# which would serialise a load test's streamed runs (first tokens 0.8-12.4 s at 20 at once).
N_JOBS_PER_WORKER = 20
# Where the kit's key travels: the header the official SDK (langgraph_sdk) sends its key in.
KEY_HEADER = "x-api-key"
KEY_ENV = "LOADKIT_API_KEY"
HERE = Path(__file__).resolve().parent


class AppSettingsError(ValueError):
    """A setting the server cannot start without; one line naming the variable and the fix."""


@dataclass(frozen=True)
class AppSettings:
    """Where the stub is, where state goes, how many runs at once, and the operator's key."""

    stub_url: str
    data_dir: Path
    key: str
    n_jobs_per_worker: int = N_JOBS_PER_WORKER
    embedding_dim: int = EMBEDDING_DIM


def _positive(name: str, default: int) -> int:
    value = os.environ.get(name, str(default))
    if not value.isdigit() or int(value) < 1:
        raise AppSettingsError(f"{name}: {value!r} is not a positive integer")
    return int(value)


def settings_from_env(n_jobs_per_worker: int | None = None) -> AppSettings:
    """LANGGRAPH_STUB_URL, LANGGRAPH_DATA_DIR, LANGGRAPH_EMBEDDING_DIM and LOADKIT_API_KEY,
    or AppSettingsError."""
    key = os.environ.get(KEY_ENV, "")
    if not key:
        raise AppSettingsError(
            f"{KEY_ENV}: not set; export it (the kit uses LOAD_PASSWORD's value) so the API is "
            "not open"
        )
    jobs = n_jobs_per_worker if n_jobs_per_worker is not None else N_JOBS_PER_WORKER
    if jobs < 1:
        raise AppSettingsError(f"--n-jobs-per-worker: {jobs} is not a positive integer")
    return AppSettings(
        stub_url=os.environ.get("LANGGRAPH_STUB_URL", "http://127.0.0.1:4020").rstrip("/"),
        data_dir=Path(os.environ.get("LANGGRAPH_DATA_DIR", "langgraph-data")).resolve(),
        key=key,
        n_jobs_per_worker=jobs,
        embedding_dim=_positive("LANGGRAPH_EMBEDDING_DIM", EMBEDDING_DIM),
    )


def server_environment(settings: AppSettings) -> dict[str, str]:
    """The variables langgraph-api and our graph read, as ``langgraph dev`` would set them for
    the in-memory runtime, minus its development-only parts (see README.md)."""
    graph = f"{HERE / 'graph.py'}:graph"
    store = {
        "index": {
            "embed": f"{HERE / 'graph.py'}:embeddings",
            "dims": settings.embedding_dim,
            "fields": ["text"],
        }
    }
    return {
        "LANGGRAPH_RUNTIME_EDITION": "inmem",
        "DATABASE_URI": ":memory:",
        "REDIS_URI": "fake",
        "MIGRATIONS_PATH": "__inmem",
        "N_JOBS_PER_WORKER": str(settings.n_jobs_per_worker),
        "LANGSERVE_GRAPHS": json.dumps({GRAPH_ID: graph}),
        "LANGGRAPH_STORE": json.dumps(store),
        "LANGGRAPH_AUTH": json.dumps({"path": f"{HERE / 'auth.py'}:auth"}),
        # Nothing leaves the machine: no LangSmith tracing, whatever the operator's shell holds.
        "LANGSMITH_TRACING": "false",
        "LANGGRAPH_STUB_URL": settings.stub_url,
        "LANGGRAPH_EMBEDDING_DIM": str(settings.embedding_dim),
    }
