"""A trivial AgenticOS look-alike for the generator benchmark: sign-in and three empty lists.

It answers in microseconds so that what the benchmark measures is the generator,
not the server. ``python bench/trivial_server.py PORT`` serves 127.0.0.1 until killed.
"""

from __future__ import annotations

import asyncio
import sys

import uvloop
from aiohttp import web

EMPTY_LIST = b'{"items": [], "total": 0}'


async def sign_in(request: web.Request) -> web.Response:
    return web.json_response({"access_token": "bench", "token_type": "bearer"})


async def empty_list(request: web.Request) -> web.Response:
    return web.Response(body=EMPTY_LIST, content_type="application/json")


async def health(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


def app() -> web.Application:
    """The routes the benchmark touches: sign-in, the three lists, health."""
    application = web.Application()
    application.router.add_post("/api/v1/auth/login", sign_in)
    for kind in ("agents", "runs", "conversations"):
        application.router.add_get(f"/api/v1/{kind}", empty_list)
    application.router.add_get("/health", health)
    return application


if __name__ == "__main__":
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    web.run_app(app(), host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
