"""The FastAPI application: routes under /api/v1, the error body, counts, and lifecycle.

``create_app`` builds an app for given settings; the pool, provider client
and background worker are made in the lifespan (they need the running event
loop) and closed when it ends.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from fastapi import FastAPI

from platforms.reference import __version__
from platforms.reference.auth import TokenSigner
from platforms.reference.db import Database, create_engine
from platforms.reference.errors import install_error_handlers
from platforms.reference.ingest import index_document
from platforms.reference.metrics import Counts
from platforms.reference.provider import Provider
from platforms.reference.ratelimit import FixedWindowLimiter
from platforms.reference.routes import (
    agents,
    auth,
    chat,
    history,
    kb,
    ops,
    orgs,
    providers,
    rag,
    secrets,
    triggers,
)
from platforms.reference.runs import execute_routine
from platforms.reference.settings import Settings
from platforms.reference.state import AppState
from platforms.reference.worker import BackgroundWorker

API_PREFIX = "/api/v1"

log = logging.getLogger("platforms.reference")


class CountRequests:
    """ASGI middleware counting HTTP requests in flight and answered by status.

    Plain ASGI rather than BaseHTTPMiddleware, which would buffer and slow the
    very requests being measured.
    """

    def __init__(self, app, counts: Counts) -> None:
        self.app = app
        self.counts = counts

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        counts = self.counts

        async def counting_send(message) -> None:
            if message["type"] == "http.response.start":
                counts.requests[message["status"]] += 1
            await send(message)

        counts.in_flight += 1
        try:
            await self.app(scope, receive, counting_send)
        finally:
            counts.in_flight -= 1


class LogRequests:
    """ASGI middleware appending ``EPOCH METHOD PATH`` per request (HTTP and WebSocket) to a
    file as each arrives, flushed at once, so the log says what reached the platform even if
    the process is then killed. Only when TARGET_REQUEST_LOG asks for it."""

    def __init__(self, app, path: str) -> None:
        self.app = app
        self.file = open(path, "a", buffering=1)  # noqa: SIM115 -- open for the app's life

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] in ("http", "websocket"):
            method = scope.get("method", "WS")
            self.file.write(f"{time.time():.6f} {method} {scope['path']}\n")
        await self.app(scope, receive, send)


async def _close_all(*parts: tuple[str, Callable[[], Awaitable[object]]]) -> None:
    """Close each part in order; a failure is one logged line and never stops the rest."""
    for name, close in parts:
        try:
            await close()
        except Exception as exc:
            log.error("shutdown: closing the %s failed: %s: %s", name, type(exc).__name__, exc)


def create_app(settings: Settings) -> FastAPI:
    """The target's app for ``settings`` (the database must already be prepared)."""
    counts = Counts()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        db = Database(create_engine(settings))
        state = AppState(
            settings=settings,
            db=db,
            provider=Provider(settings.embedding_url),
            run_limiter=FixedWindowLimiter(settings.rate_limit_run_per_minute),
            login_limiter=FixedWindowLimiter(settings.rate_limit_login_per_minute),
            signer=TokenSigner(settings.secret_key),
            counts=counts,
        )
        state.worker = BackgroundWorker(
            db,
            index_document=lambda doc_id: index_document(state, doc_id),
            execute_routine=lambda run_id: execute_routine(state, run_id),
        )
        app.state.target = state
        await state.worker.start()
        try:
            yield
        finally:
            await _close_all(
                ("background worker", state.worker.stop),
                ("model provider client", state.provider.close),
                ("database pool", db.engine.dispose),
            )

    app = FastAPI(
        title="agent-loadkit reference target",
        version=__version__,
        lifespan=lifespan,
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=f"{API_PREFIX}/docs",
        redoc_url=None,
    )
    install_error_handlers(app)
    for module in (auth, orgs, agents, history, rag, kb, secrets, providers, triggers, chat, ops):
        app.include_router(module.router, prefix=API_PREFIX)
    app.include_router(ops.metrics_router)
    app.add_middleware(CountRequests, counts=counts)
    if settings.request_log:
        app.add_middleware(LogRequests, path=settings.request_log)
    return app
