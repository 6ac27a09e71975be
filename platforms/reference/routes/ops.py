"""Health and metrics: what an operator and the kit's probes read, without signing in."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from platforms.reference import __version__
from platforms.reference.deps import app_state
from platforms.reference.metrics import CONTENT_TYPE, exposition

router = APIRouter()
# Prometheus scrapes /metrics at the root by convention, outside the versioned API.
metrics_router = APIRouter()


@router.get("/health")
async def health(request: Request) -> dict:
    """Answers while the process serves; never waits for the database pool."""
    state = app_state(request)
    return {
        "status": "ok",
        "version": __version__,
        "database": state.db.engine.dialect.name,
        "embedding_url": state.settings.embedding_url,
    }


@metrics_router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    """Prometheus text: requests in flight, pool use and waiters, queue depths, runs by status."""
    state = app_state(request)
    body = exposition(state.counts, state.db.pool_status, state.worker.depths)
    return Response(body, media_type=CONTENT_TYPE)
