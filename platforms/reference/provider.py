"""Calls to the model provider: OpenAI Chat Completions and an Ollama-style embedder.

Runs and chat turns speak Chat Completions to the agent's model profile (the
stub in a default run), offering the agent's tools when it has any, as pydantic-ai
does for AgenticOS (``tool_choice: "auto"``, no ``parallel_tool_calls``); embeddings
go to a keyless Ollama ``/api/embed`` endpoint, as the seed's deployment reaches them.
Any failure becomes a ProviderError carrying one line, which the API turns into
a 500 or an ``error`` frame: what the platform does when its provider fails is part of
what a resilience run measures.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp

# Seconds a model call may take in all, so a provider that holds a request open
# fails the run instead of holding its database connection for ever.
MODEL_TIMEOUT_S = 120.0
# Seconds an embedding call may take: short texts, one round trip.
EMBED_TIMEOUT_S = 60.0


class ProviderError(Exception):
    """The provider failed: refused, answered non-2xx, timed out or spoke nonsense."""


@dataclass(frozen=True)
class ModelTarget:
    """Where and as what to call a chat model: from the agent's model profile and secret."""

    base_url: str
    model: str
    api_key: str | None


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for: its id, the function and its JSON arguments."""

    id: str
    name: str
    arguments: str

    def as_message_part(self) -> dict:
        """The call as the assistant message that asked for it carries it back."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True)
class ToolDelta:
    """A streamed piece of call ``index``: its id and name come once, its arguments in pieces."""

    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass
class Completion:
    """One finished answer (text, or the tool calls it asked for) and the usage the provider
    reported (or we counted)."""

    text: str
    input_tokens: int
    output_tokens: int
    tool_calls: list[ToolCall] = field(default_factory=list)


def _headers(target: ModelTarget) -> dict[str, str]:
    headers = {"Content-Type": "application/json"}
    if target.api_key:
        headers["Authorization"] = f"Bearer {target.api_key}"
    return headers


async def _failure(resp: aiohttp.ClientResponse) -> ProviderError:
    body = (await resp.text())[:200].replace("\n", " ")
    return ProviderError(f"model provider answered HTTP {resp.status}: {body}")


def _offer(tools: list[dict]) -> dict:
    """The request's tool fields: none without tools, else the tools and ``auto``."""
    return {"tools": tools, "tool_choice": "auto"} if tools else {}


def _transport_error(exc: BaseException, url: str) -> ProviderError:
    if isinstance(exc, asyncio.TimeoutError):
        return ProviderError(f"model provider at {url} timed out")
    return ProviderError(f"model provider at {url} unreachable: {type(exc).__name__}: {exc}")


class Provider:
    """One HTTP client session shared by every model and embedding call of the process."""

    def __init__(self, embedding_url: str) -> None:
        self.embedding_url = embedding_url
        # No connection cap: the database pool already bounds concurrent model calls,
        # and a second hidden cap here would be the bottleneck instead of the pool.
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def close(self) -> None:
        """Close the shared session at shutdown."""
        await self._session.close()

    async def complete(
        self, target: ModelTarget, messages: list[dict], tools: list[dict]
    ) -> Completion:
        """A whole (non-streamed) chat completion: text, or the tool calls the model asks for."""
        url = f"{target.base_url.rstrip('/')}/chat/completions"
        body = {"model": target.model, "messages": messages, "stream": False, **_offer(tools)}
        try:
            async with self._session.post(
                url,
                json=body,
                headers=_headers(target),
                timeout=aiohttp.ClientTimeout(total=MODEL_TIMEOUT_S),
            ) as resp:
                if resp.status >= 300:
                    raise await _failure(resp)
                data = await resp.json(content_type=None)
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _transport_error(exc, url) from exc
        try:
            message = data["choices"][0]["message"]
            text = message["content"] or ""
            calls = [
                ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"])
                for c in message.get("tool_calls") or []
            ]
        except (KeyError, IndexError, TypeError) as exc:
            raise ProviderError(f"model provider at {url} answered without choices") from exc
        usage = data.get("usage") or {}
        return Completion(
            text=text,
            input_tokens=int(usage.get("prompt_tokens", 0)),
            output_tokens=int(usage.get("completion_tokens", 0)),
            tool_calls=calls,
        )

    async def stream(
        self, target: ModelTarget, messages: list[dict], tools: list[dict]
    ) -> AsyncIterator[str | ToolDelta | dict]:
        """Yield each text delta and each tool call's piece as it arrives, then the usage dict
        if the provider sent one."""
        url = f"{target.base_url.rstrip('/')}/chat/completions"
        body = {
            "model": target.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            **_offer(tools),
        }
        try:
            async with self._session.post(
                url,
                json=body,
                headers=_headers(target),
                timeout=aiohttp.ClientTimeout(total=MODEL_TIMEOUT_S),
            ) as resp:
                if resp.status >= 300:
                    raise await _failure(resp)
                async for raw in resp.content:
                    line = raw.decode().strip()
                    if not line.startswith("data:"):
                        continue
                    payload = line[len("data:") :].strip()
                    if payload == "[DONE]":
                        return
                    chunk = json.loads(payload)
                    for choice in chunk.get("choices") or []:
                        delta = choice.get("delta") or {}
                        content = delta.get("content")
                        if content:
                            yield content
                        for call in delta.get("tool_calls") or []:
                            function = call.get("function") or {}
                            yield ToolDelta(
                                int(call.get("index", 0)),
                                call.get("id"),
                                function.get("name"),
                                function.get("arguments") or "",
                            )
                    if chunk.get("usage"):
                        yield chunk["usage"]
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _transport_error(exc, url) from exc
        except (json.JSONDecodeError, TypeError, ValueError) as exc:
            raise ProviderError(f"model provider at {url} sent a malformed stream chunk") from exc

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        """One vector per text from ``{EMBEDDING_URL}/api/embed`` (Ollama's batch path)."""
        url = f"{self.embedding_url}/api/embed"
        try:
            async with self._session.post(
                url,
                json={"model": model, "input": texts},
                timeout=aiohttp.ClientTimeout(total=EMBED_TIMEOUT_S),
            ) as resp:
                if resp.status >= 300:
                    raise ProviderError(f"embedding endpoint {url} answered HTTP {resp.status}")
                data = await resp.json(content_type=None)
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise ProviderError(
                f"embedding endpoint {url} unreachable: {type(exc).__name__}; check EMBEDDING_URL"
            ) from exc
        vectors = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(vectors, list) or len(vectors) != len(texts):
            raise ProviderError(f"embedding endpoint {url} did not answer one vector per text")
        return vectors
