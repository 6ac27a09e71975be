"""A tiny agent service to try the echo platform on: an agent with one tool, on an OpenAI-
compatible model (agent-loadkit's stub), served over HTTP.

``python service.py --port 8765 --model-url http://127.0.0.1:4020`` serves on 127.0.0.1:

- ``GET /health``: ``{"ok": true}``;
- ``GET /conversations``: the last 20 conversations, ``[{"id": ...}]``;
- ``POST /run`` ``{"input": text}``: the agent's loop run whole, ``{"id", "output"}``;
- ``POST /chat`` ``{"input": text}``: the same loop, its answer streamed as server-sent
  events, ``event: token`` per piece of text and ``event: done`` at the end.

The agent passes the user's text to its model unchanged and offers it one tool,
``lookup``; whenever the model asks for it the agent runs it and asks again with the
history grown, until the model answers. That is all the kit's stub needs to drive a loop.
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections import deque
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a topic up in the team's notes.",
            "parameters": {
                "type": "object",
                "properties": {"topic": {"type": "string"}},
                "required": ["topic"],
            },
        },
    }
]


async def model_turn(
    session: aiohttp.ClientSession, url: str, messages: list[dict]
) -> AsyncIterator[str | list[dict]]:
    """One streamed model call: its text as it comes, then the tool calls it asked for (if
    any), accumulated from the stream's deltas."""
    body = {"model": "echo", "messages": messages, "tools": TOOLS, "stream": True}
    calls: dict[int, dict] = {}
    async with session.post(f"{url}/v1/chat/completions", json=body) as resp:
        resp.raise_for_status()
        async for line in resp.content:
            data = line.decode().strip().removeprefix("data:").strip()
            if not data or data == "[DONE]":
                continue
            delta = json.loads(data)["choices"][0]["delta"]
            if delta.get("content"):
                yield delta["content"]
            for piece in delta.get("tool_calls") or []:
                call = calls.setdefault(piece["index"], {"id": "", "name": "", "arguments": ""})
                call["id"] += piece.get("id") or ""
                function = piece.get("function") or {}
                call["name"] += function.get("name") or ""
                call["arguments"] += function.get("arguments") or ""
    if calls:
        yield [calls[i] for i in sorted(calls)]


async def agent(session: aiohttp.ClientSession, url: str, text: str) -> AsyncIterator[str]:
    """The agent's answer to ``text``, as it streams, after as many tool steps as asked."""
    messages: list[dict] = [{"role": "user", "content": text}]
    while True:
        asked: list[dict] = []
        async for piece in model_turn(session, url, messages):
            if isinstance(piece, str):
                yield piece
            else:
                asked = piece
        if not asked:
            return
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for c in asked
                ],
            }
        )
        for call in asked:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": "no notes"})


def app(model_url: str) -> web.Application:
    """The service: its routes on one shared client session to the model."""
    conversations: deque[str] = deque(maxlen=20)
    application = web.Application()

    async def session_ctx(application: web.Application) -> AsyncIterator[None]:
        async with aiohttp.ClientSession() as session:
            application["session"] = session
            yield

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def listed(request: web.Request) -> web.Response:
        return web.json_response([{"id": c} for c in conversations])

    async def run(request: web.Request) -> web.Response:
        text = (await request.json())["input"]
        output = "".join([p async for p in agent(request.app["session"], model_url, text)])
        conversations.append(run_id := uuid.uuid4().hex)
        return web.json_response({"id": run_id, "output": output})

    async def chat(request: web.Request) -> web.StreamResponse:
        text = (await request.json())["input"]
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        try:
            async for piece in agent(request.app["session"], model_url, text):
                await resp.write(f"event: token\ndata: {json.dumps(piece)}\n\n".encode())
            await resp.write(b"event: done\ndata: {}\n\n")
        except aiohttp.ClientError as exc:
            await resp.write(f"event: error\ndata: {type(exc).__name__}\n\n".encode())
        conversations.append(uuid.uuid4().hex)
        return resp

    application.cleanup_ctx.append(session_ctx)
    application.router.add_get("/health", health)
    application.router.add_get("/conversations", listed)
    application.router.add_post("/run", run)
    application.router.add_post("/chat", chat)
    return application


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--model-url", default="http://127.0.0.1:4020")
    args = parser.parse_args()
    web.run_app(app(args.model_url.rstrip("/")), host="127.0.0.1", port=args.port, print=None)
