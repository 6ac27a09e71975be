"""Calls to the model provider: OpenAI Chat Completions and an Ollama-style embedder.

Runs and chat turns speak Chat Completions to the agent's model profile (the
stub in a default run); embeddings go to a keyless Ollama ``/api/embed``
endpoint, as the seed's deployment reaches them. Any failure becomes a
ProviderError carrying one line, which the API turns into a 500 or an
``error`` frame: what the platform does when its provider fails is part of
what a resilience run measures.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

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


@dataclass
class Completion:
    """One finished answer and the usage the provider reported (or we counted)."""

    text: str
    input_tokens: int
    output_tokens: int


def _headers(target: ModelTarget) -> dict[str, str]:
    headers = {"Content-Type": "application/json"}
    if target.api_key:
        headers["Authorization"] = f"Bearer {target.api_key}"
    return headers


async def _failure(resp: aiohttp.ClientResponse) -> ProviderError:
    body = (await resp.text())[:200].replace("\n", " ")
    return ProviderError(f"model provider answered HTTP {resp.status}: {body}")


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

    async def complete(self, target: ModelTarget, messages: list[dict]) -> Completion:
        """A whole (non-streamed) chat completion."""
        url = f"{target.base_url.rstrip('/')}/chat/completions"
        body = {"model": target.model, "messages": messages, "stream": False}
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
            text = data["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise ProviderError(f"model provider at {url} answered without choices") from exc
        usage = data.get("usage") or {}
        return Completion(
            text=text,
            input_tokens=int(usage.get("prompt_tokens", 0)),
            output_tokens=int(usage.get("completion_tokens", 0)),
        )

    async def stream(self, target: ModelTarget, messages: list[dict]) -> AsyncIterator[str | dict]:
        """Yield each text delta as it arrives, then the usage dict if the provider sent one."""
        url = f"{target.base_url.rstrip('/')}/chat/completions"
        body = {
            "model": target.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
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
                        content = (choice.get("delta") or {}).get("content")
                        if content:
                            yield content
                    if chunk.get("usage"):
                        yield chunk["usage"]
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _transport_error(exc, url) from exc
        except json.JSONDecodeError as exc:
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
