"""The A2A server: a2a-sdk's request handler, routes and card around the agent, as a Starlette app.

Assembled from a2a-sdk 1.3.0's own parts, as its sample server is: a
``DefaultRequestHandler`` over an in-memory task store, the agent card at
``/.well-known/agent-card.json``, JSON-RPC 2.0 at ``/`` and the HTTP+JSON
binding under ``/rest``, each listed in the card as an interface. What differs
by ``protocol``:

- ``both``: the SDK's v0.3 compatibility on, on both bindings: the 0.3 method
  names (``message/send``...) and 0.3 REST paths (``/rest/v1/...``) beside the
  1.0 ones, and the card lists a 0.3 and a 1.0 interface of each binding (the
  SDK then also writes the 0.3 card's ``url``/``preferredTransport``/
  ``protocolVersion`` into it);
- ``1.0``: compatibility off; the card lists 1.0 interfaces only;
- ``0.3``: the 0.3 names and paths only: the SDK's JSON-RPC dispatcher with no
  1.0 method left in its table (a 1.0 name is then "method not found", as an
  a2a-sdk 0.3 server answers it) and only the SDK's 0.3 REST adapter's routes;
  the card lists 0.3 interfaces only. a2a-sdk has no switch for this: with
  compatibility on, its 1.0 names answer whenever ``A2A-Version: 1.0`` is sent.

With a key (``A2A_API_KEY``) every route but the card and ``/health`` wants
``Authorization: Bearer <key>``, and the card declares that scheme; without one
the server is open (it listens on loopback unless told otherwise).
"""

from __future__ import annotations

import contextlib
import hmac
from collections.abc import AsyncIterator
from typing import Any

from a2a.server.request_handlers import DefaultRequestHandler

# Before the compat adapter: importing a2a.compat.v0_3.rest_adapter first is a circular
# import in a2a-sdk 1.3.0 (it imports a2a.server.routes, which imports it back).
from a2a.server.routes import (  # isort: skip
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.compat.v0_3.rest_adapter import REST03Adapter  # isort: skip
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from platforms.a2a.agent import StubAgentExecutor
from platforms.a2a.settings import AppSettings

AGENT_NAME = "loadkit-agent"
RPC_PATH = "/"
REST_PATH = "/rest"
BEARER = "bearer"
# Routes a client must reach before it has the key: the card says what auth to use.
OPEN_PATHS = ("/health", "/.well-known/")


def versions(protocol: str) -> list[str]:
    """The A2A versions served, the card's preferred one first."""
    return {
        "both": [PROTOCOL_VERSION_1_0, PROTOCOL_VERSION_0_3],
        "1.0": [PROTOCOL_VERSION_1_0],
        "0.3": [PROTOCOL_VERSION_0_3],
    }[protocol]


def agent_card(settings: AppSettings, base_url: str) -> AgentCard:
    """The card: every binding and version served, streaming, one skill, the auth."""
    card = AgentCard(
        name=AGENT_NAME,
        description="agent-loadkit's test agent: answers briefly, and looks topics up in the "
        "team's notes with its one tool when asked to.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(protocol_binding=binding, protocol_version=version, url=url)
            for binding, url in (
                ("JSONRPC", base_url + RPC_PATH),
                ("HTTP+JSON", base_url + REST_PATH),
            )
            for version in versions(settings.protocol)
        ],
        capabilities=AgentCapabilities(streaming=settings.streaming, push_notifications=False),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[
            AgentSkill(
                id="chat",
                name="chat",
                description="Answers a message, calling lookup as often as the model asks.",
                tags=["chat", "tools"],
            )
        ],
    )
    if settings.key is not None:
        card.security_schemes[BEARER].CopyFrom(
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
        )
        card.security_requirements.append(SecurityRequirement(schemes={BEARER: StringList()}))
    return card


class Only03Dispatcher(JsonRpcDispatcher):
    """The SDK's JSON-RPC dispatcher with no 1.0 method: its v0.3 adapter answers the 0.3
    names, and a 1.0 name falls through to its own "method not found"."""

    METHOD_TO_MODEL: dict[str, type] = {}  # noqa: RUF012 (the SDK's class attribute)


def a2a_routes(handler: DefaultRequestHandler, protocol: str) -> list[BaseRoute]:
    """JSON-RPC at RPC_PATH and HTTP+JSON under REST_PATH, for the versions served."""
    if protocol == "0.3":
        dispatcher = Only03Dispatcher(handler, enable_v0_3_compat=True)
        rest = REST03Adapter(http_handler=handler).routes()
        return [
            Route(RPC_PATH, dispatcher.handle_requests, methods=["POST"]),
            *(Route(REST_PATH + path, ep, methods=[method]) for (path, method), ep in rest.items()),
        ]
    compat = protocol == "both"
    return [
        *create_jsonrpc_routes(handler, RPC_PATH, enable_v0_3_compat=compat),
        *create_rest_routes(handler, enable_v0_3_compat=compat, path_prefix=REST_PATH),
    ]


class BearerKey:
    """Every request but OPEN_PATHS needs ``Authorization: Bearer <key>``; else 401."""

    def __init__(self, app: ASGIApp, key: str) -> None:
        self.app = app
        self.expected = f"Bearer {key}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(OPEN_PATHS):
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization", b"")
        if hmac.compare_digest(given, self.expected):
            await self.app(scope, receive, send)
            return
        refused = JSONResponse(
            {"error": "unauthorized: send Authorization: Bearer <A2A_API_KEY>"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await refused(scope, receive, send)


async def health(request: Request) -> JSONResponse:
    """Readiness: answers once the app serves, without the key."""
    return JSONResponse({"status": "ok"})


def create_app(settings: AppSettings, base_url: str) -> Starlette:
    """The Starlette app: /health, the card, and the A2A routes around the agent."""
    card = agent_card(settings, settings.public_url or base_url)
    executor = StubAgentExecutor(settings.stub_url)
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        # Drains the running tasks, so a stop leaves no model call behind.
        await handler.aclose()
        await executor.client.close()

    middleware: list[Any] = []
    if settings.key is not None:
        middleware.append(Middleware(BearerKey, key=settings.key))
    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            *create_agent_card_routes(card),
            *a2a_routes(handler, settings.protocol),
        ],
        middleware=middleware,
        lifespan=lifespan,
    )
