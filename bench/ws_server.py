"""Trivial chat look-alikes for the streams benchmark: AgenticOS's WebSocket turn, agno's SSE run.

AgenticOS: sign-in and a WebSocket turn (``text_delta`` frames, then ``complete``).
agno's AgentOS: the key checked by a list read, and a run streamed as server-sent
events (``RunStarted``, ``RunContent``, ``RunCompleted``). Each turn's first token
leaves exactly FIRST_TOKEN_MS after the server received the message (scheduled
against that moment, so its own delays do not add up), then TOKENS tokens TOKEN_MS
apart and the end. The benchmark compares the time to first token the generator
observes with this stated delay.

    python bench/ws_server.py PORT [FIRST_TOKEN_MS]

serves 127.0.0.1 until killed.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time

import uvloop
from aiohttp import WSMsgType, web

FIRST_TOKEN_MS = 2000.0
TOKENS = 4
TOKEN_MS = 50.0
FIRST = web.AppKey("first_token_s", float)
# Each turn since the last /stats, by its arrival index: (message received, first token sent),
# time.monotonic() seconds (the loop's own clock is uvloop's, cached per iteration to the ms).
TURNS = web.AppKey("turns", dict[int, tuple[float, float]])
# The arrival index in the kit's chat message (workloads/corpus.py turn_message).
INDEX = re.compile(r"turn (\d+)")


async def sign_in(request: web.Request) -> web.Response:
    return web.json_response({"access_token": "bench", "token_type": "bearer"})


async def health(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def _stream(request: web.Request, text: str, send) -> None:
    """The turn's tokens, the first FIRST_TOKEN_MS after its message (``text``) was received,
    each through ``send()``; when the first left is noted under the turn's index."""
    received = time.monotonic()
    first = request.app[FIRST]
    for n in range(TOKENS):
        due = received + first + n * TOKEN_MS / 1000
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        if n == 0 and (index := INDEX.search(text)):
            request.app[TURNS][int(index.group(1))] = (received, time.monotonic())
        await send()


async def chat(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse(protocols=("chat",))
    await ws.prepare(request)
    delta = json.dumps({"type": "text_delta", "data": {"content": "x"}})
    async for message in ws:
        if message.type != WSMsgType.TEXT:
            break
        await _stream(request, message.data, lambda: ws.send_str(delta))
        await ws.send_str(json.dumps({"type": "complete", "data": {"stopped": False}}))
        break
    await ws.close()
    return ws


async def agents(request: web.Request) -> web.Response:
    return web.json_response([{"id": "bench", "name": "bench"}])


def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


async def agno_run(request: web.Request) -> web.StreamResponse:
    """agno's streamed run: the form read whole, then its events on one chunked answer."""
    form = await request.post()
    answer = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await answer.prepare(request)
    await answer.write(_event("RunStarted", {"run_id": "bench"}))
    content = _event("RunContent", {"run_id": "bench", "content": "x"})
    await _stream(request, str(form.get("message", "")), lambda: answer.write(content))
    await answer.write(_event("RunCompleted", {"run_id": "bench", "content": "x"}))
    await answer.write_eof()
    return answer


async def stats(request: web.Request) -> web.Response:
    """The turns since the last call: the server's own first-token lateness (p99 and worst,
    in ms) and each turn's (received, first token sent) by arrival index."""
    turns, first = dict(request.app[TURNS]), request.app[FIRST]
    request.app[TURNS].clear()
    late = sorted((sent - received - first) * 1000 for received, sent in turns.values())
    p99 = late[max(0, -(-len(late) * 99 // 100) - 1)] if late else 0.0
    return web.json_response({"turns": turns, "p99_ms": p99, "max_ms": max(late, default=0)})


def app(first_token_ms: float) -> web.Application:
    """Both platforms' sign-in and chat, health, the server's own lateness."""
    application = web.Application()
    application[FIRST] = first_token_ms / 1000
    application[TURNS] = {}
    application.router.add_get("/stats", stats)
    application.router.add_post("/api/v1/auth/login", sign_in)
    application.router.add_get("/api/v1/ws/agent", chat)
    application.router.add_get("/health", health)
    application.router.add_get("/agents", agents)
    application.router.add_post("/agents/{agent}/runs", agno_run)
    return application


if __name__ == "__main__":
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    first_ms = float(sys.argv[2]) if len(sys.argv) > 2 else FIRST_TOKEN_MS
    web.run_app(
        app(first_ms),
        host="127.0.0.1",
        port=int(sys.argv[1]),
        access_log=None,
        print=None,
        backlog=4096,
    )
