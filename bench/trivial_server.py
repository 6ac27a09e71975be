"""A trivial AgenticOS look-alike for the generator benchmark: sign-in and three empty lists.

It answers in microseconds so that what the benchmark measures is the generator,
not the server. ``python bench/trivial_server.py PORT`` serves 127.0.0.1 until killed;
``python bench/trivial_server.py PORT CAPACITY`` answers at most CAPACITY list reads a
second (a lagging platform: the rest queue), for the generator's behaviour under lag.
"""

from __future__ import annotations

import asyncio
import sys

import uvloop
from aiohttp import web

EMPTY_LIST = b'{"items": [], "total": 0}'
# A lagging server serves this many reads at once, each held 1/CAPACITY x LAG_SLOTS seconds.
LAG_SLOTS = 16
LAG = web.AppKey("lag", tuple)


async def sign_in(request: web.Request) -> web.Response:
    return web.json_response({"access_token": "bench", "token_type": "bearer"})


async def empty_list(request: web.Request) -> web.Response:
    lag = request.app.get(LAG)
    if lag is not None:
        slots, hold_s = lag
        async with slots:
            await asyncio.sleep(hold_s)
    return web.Response(body=EMPTY_LIST, content_type="application/json")


async def health(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


def app(capacity: float | None = None) -> web.Application:
    """The routes the benchmark touches: sign-in, the token's check, the lists, health."""
    application = web.Application()
    if capacity is not None:
        application[LAG] = (asyncio.Semaphore(LAG_SLOTS), LAG_SLOTS / capacity)
    application.router.add_post("/api/v1/auth/login", sign_in)
    # The three lists, and the organisations the kit reads once to check the token it got.
    for kind in ("agents", "runs", "conversations", "orgs"):
        application.router.add_get(f"/api/v1/{kind}", empty_list)
    # The kit reaches a platform by its health before it loads it (workloads/reach.py), at
    # AgenticOS's path; /health is where the benchmarks wait for this server to start.
    for path in ("/health", "/api/v1/health"):
        application.router.add_get(path, health)
    return application


if __name__ == "__main__":
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    capacity = float(sys.argv[2]) if len(sys.argv) > 2 else None
    web.run_app(app(capacity), host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
