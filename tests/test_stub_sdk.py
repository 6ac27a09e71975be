"""The official openai SDK, sync and async, parses everything the stub sends.

The platform under test talks to the stub through client libraries like this
one, so the wire format is proven by the real parser, not by our own reading.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.request

import openai
import pytest

from stack.processes import free_port, running
from stub.app import ERROR_MESSAGE, RATE_LIMIT_MESSAGE, RETRY_AFTER_S
from stub.wire import answer_text

pytestmark = pytest.mark.system

TOKENS = 6
FAST = ["--first-token-ms", "20", "--token-ms", "2", "--tokens", str(TOKENS)]
MESSAGES = [{"role": "user", "content": "say something slow"}]


@contextlib.contextmanager
def _stub(tmp_path, name, *flags):
    port = free_port()
    args = ["-m", "stub", "--port", str(port), *FAST, *flags]
    with running(args, "/health", port, tmp_path / f"{name}.log") as server:
        yield server


@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    with _stub(tmp_path_factory.mktemp("stub"), "ok") as server:
        yield server


@pytest.fixture(scope="module")
def client(stub):
    return openai.OpenAI(base_url=stub.url + "/v1", api_key="not-a-key", max_retries=0)


def _stats(server) -> dict:
    with urllib.request.urlopen(server.url + "/stats", timeout=5) as resp:
        return json.load(resp)


def _check_stream(chunks, n_tokens: int, finish: str) -> None:
    """Role first, every token, one finish chunk, then the usage chunk with no choices."""
    assert chunks[0].object == "chat.completion.chunk"
    assert chunks[0].choices[0].delta.role == "assistant"
    assert len({c.id for c in chunks}) == 1
    *content_chunks, finish_chunk, usage_chunk = chunks
    assert all(c.usage is None for c in [*content_chunks, finish_chunk])
    text = "".join(c.choices[0].delta.content or "" for c in content_chunks)
    assert text == answer_text(n_tokens)
    assert [c.choices[0].finish_reason for c in content_chunks] == [None] * len(content_chunks)
    assert finish_chunk.choices[0].finish_reason == finish
    assert usage_chunk.choices == []
    assert usage_chunk.usage.completion_tokens == n_tokens
    assert usage_chunk.usage.prompt_tokens == 3
    assert usage_chunk.usage.total_tokens == n_tokens + 3


def test_sync_stream_with_usage(client):
    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert chunks[0].model == "gpt-4o-mini"
    _check_stream(chunks, TOKENS, "stop")


def test_async_stream_with_usage_cut_by_max_tokens(stub):
    async def collect():
        aclient = openai.AsyncOpenAI(base_url=stub.url + "/v1", api_key="x", max_retries=0)
        async with aclient:
            stream = await aclient.chat.completions.create(
                model="m",
                messages=MESSAGES,
                stream=True,
                max_tokens=TOKENS - 2,
                stream_options={"include_usage": True},
            )
            return [chunk async for chunk in stream]

    _check_stream(asyncio.run(collect()), TOKENS - 2, "length")


def test_stream_without_usage_ends_with_finish_chunk(client):
    chunks = list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks)


def test_sync_plain_completion(client):
    done = client.chat.completions.create(model="m", messages=MESSAGES)
    assert done.object == "chat.completion"
    assert done.choices[0].message.role == "assistant"
    assert done.choices[0].message.content == answer_text(TOKENS)
    assert done.choices[0].finish_reason == "stop"
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (3, TOKENS)


def test_async_plain_completion_cut_by_max_completion_tokens(stub):
    async def ask():
        async with openai.AsyncOpenAI(base_url=stub.url + "/v1", api_key="x") as aclient:
            return await aclient.chat.completions.create(
                model="m", messages=MESSAGES, max_completion_tokens=2
            )

    done = asyncio.run(ask())
    assert done.choices[0].message.content == answer_text(2)
    assert done.choices[0].finish_reason == "length"


def test_embeddings_base64_default_and_float_agree(client):
    texts = ["alpha", "beta gamma"]
    default = client.embeddings.create(model="e", input=texts)  # the SDK asks for base64
    floats = client.embeddings.create(model="e", input=texts, encoding_format="float")
    assert [d.index for d in default.data] == [0, 1]
    for a, b in zip(default.data, floats.data, strict=True):
        assert len(a.embedding) == 768
        assert a.embedding == pytest.approx(b.embedding, abs=1e-7)
        assert sum(v * v for v in a.embedding) == pytest.approx(1.0, abs=1e-5)
    assert default.data[0].embedding != pytest.approx(default.data[1].embedding, abs=1e-3)


def test_async_embeddings_of_one_string(stub):
    async def embed():
        async with openai.AsyncOpenAI(base_url=stub.url + "/v1", api_key="x") as aclient:
            return await aclient.embeddings.create(model="e", input="alpha")

    assert len(asyncio.run(embed()).data[0].embedding) == 768


def test_models_lists_the_stub(client):
    assert [m.id for m in client.models.list()] == ["stub"]


def test_injected_500_is_internal_server_error_and_not_retried(tmp_path):
    with _stub(tmp_path, "errors", "--error-rate", "1") as server:
        retrying = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=3)
        with pytest.raises(openai.InternalServerError) as caught:
            retrying.chat.completions.create(model="m", messages=MESSAGES)
        assert caught.value.status_code == 500
        assert ERROR_MESSAGE in caught.value.message
        assert caught.value.body["message"] == ERROR_MESSAGE

        async def embed():
            async with openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="x") as aclient:
                await aclient.embeddings.create(model="e", input="x")

        with pytest.raises(openai.InternalServerError):
            asyncio.run(embed())
        stats = _stats(server)
        # x-should-retry: false kept the SDK from retrying (3 retries were allowed).
        assert stats["requests"]["/v1/chat/completions"] == 1
        assert stats["requests"]["/v1/embeddings"] == 1
        assert stats["faults"]["errors"] == 2


def test_injected_429_is_rate_limit_error_with_retry_after(tmp_path):
    with _stub(tmp_path, "limited", "--rate-limit-rate", "1") as server:
        retrying = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=3)
        with pytest.raises(openai.RateLimitError) as caught:
            list(retrying.chat.completions.create(model="m", messages=MESSAGES, stream=True))
        assert caught.value.body["message"] == RATE_LIMIT_MESSAGE
        assert caught.value.body["code"] == "rate_limit_exceeded"
        assert caught.value.response.headers["retry-after"] == str(RETRY_AFTER_S)
        assert caught.value.response.headers["x-should-retry"] == "false"

        async def embed():
            async with openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="x") as aclient:
                await aclient.embeddings.create(model="e", input="x")

        with pytest.raises(openai.RateLimitError) as caught:
            asyncio.run(embed())
        assert caught.value.body["message"] == RATE_LIMIT_MESSAGE
        stats = _stats(server)
        assert stats["requests"]["/v1/chat/completions"] == 1
        assert stats["requests"]["/v1/embeddings"] == 1
        assert stats["faults"]["rate_limited"] == 2
