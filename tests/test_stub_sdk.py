"""The official openai SDK, sync and async, parses everything the stub sends; so does
pydantic-ai, AgenticOS's client, in the agent's tool loop.

The platform under test talks to the stub through client libraries like this
one, so the wire format is proven by the real parser, not by our own reading.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import urllib.request

import openai
import pytest

from protocol.marker import Marker, write_marker
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


# The agent's loop (stub/plan.py): the kit's marker plans the steps, the stub asks for tools.
LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look a topic up.",
        "parameters": {
            "type": "object",
            "properties": {"topic": {"type": "string"}},
            "required": ["topic"],
        },
    },
}


def _marked(run: str, arrival: int, steps: int, parallel: int = 1, **fields) -> list[dict]:
    marker = write_marker(
        Marker(run, arrival, steps, parallel, fields.get("tool"), fields.get("args"), None)
    )
    return [{"role": "user", "content": f"Load test turn {arrival}. {marker}"}]


def _calls(server, run: str) -> list[dict]:
    with urllib.request.urlopen(f"{server.url}/calls?run={run}", timeout=5) as resp:
        return list(csv.DictReader(io.TextIOWrapper(resp, "utf-8")))


def _streamed_tool_calls(chunks) -> tuple[str | None, list[dict]]:
    """The finish reason and the calls of a streamed answer, joined from their deltas as the
    SDK's documentation says to (each call's pieces by its index)."""
    finish, calls = None, {}
    for chunk in chunks:
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": None, "name": None, "arguments": ""})
                call["id"] = delta.id or call["id"]
                call["name"] = (delta.function.name if delta.function else None) or call["name"]
                call["arguments"] += (delta.function.arguments or "") if delta.function else ""
    return finish, [calls[i] for i in sorted(calls)]


def _loop(client, run: str, arrival: int, steps: int, parallel: int, stream: bool) -> list:
    """Drive one turn as an agent would: run each asked-for tool, send the results back."""
    messages = _marked(run, arrival, steps, parallel, args={"topic": "pools"})
    seen = []
    for _ in range(steps + 1):
        if stream:
            chunks = client.chat.completions.create(
                model="m",
                messages=messages,
                tools=[LOOKUP],
                stream=True,
                stream_options={"include_usage": True},
            )
            finish, calls = _streamed_tool_calls(chunks)
        else:
            done = client.chat.completions.create(model="m", messages=messages, tools=[LOOKUP])
            finish = done.choices[0].finish_reason
            calls = [
                {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                for c in done.choices[0].message.tool_calls or []
            ]
        seen.append((finish, calls))
        if finish != "tool_calls":
            return seen
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
                    for c in calls
                ],
            }
        )
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls]
    return seen


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_sdk_parses_tool_calls_and_the_stub_records_each_step(stub, client, stream):
    run = f"sdk-{stream}"
    seen = _loop(client, run, 11, steps=3, parallel=2, stream=stream)
    assert [finish for finish, _ in seen] == ["tool_calls", "tool_calls", "stop"]
    for step, (_, calls) in enumerate(seen[:2], start=1):
        assert [c["id"] for c in calls] == [f"call_11_{step}_0", f"call_11_{step}_1"]
        assert {c["name"] for c in calls} == {"lookup"}
        assert [json.loads(c["arguments"]) for c in calls] == [{"topic": "pools"}] * 2
    rows = _calls(stub, run)
    assert [(r["arrival"], r["step"], r["reply"], r["tool_calls"]) for r in rows] == [
        ("11", "1", "tool_calls", "2"),
        ("11", "2", "tool_calls", "2"),
        ("11", "3", "answer", "0"),
    ]
    # Two calls of 1 head + 2 pieces each: 6 sends, the first at 20 ms, then 2 ms apart.
    assert all(float(r["total_ms"]) >= float(r["first_ms"]) >= 20.0 for r in rows)
    assert float(rows[0]["total_ms"]) >= 20.0 + 5 * 2.0


def test_a_turn_offered_no_tool_is_answered_and_recorded_short(stub, client):
    done = client.chat.completions.create(model="m", messages=_marked("short", 3, steps=2))
    assert done.choices[0].finish_reason == "stop"
    named = client.chat.completions.create(
        model="m", messages=_marked("short", 4, steps=2, tool="read"), tools=[LOOKUP]
    )
    assert named.choices[0].message.tool_calls is None
    rows = _calls(stub, "short")
    assert [(r["arrival"], r["step"], r["reply"]) for r in rows] == [
        ("3", "1", "no_tool"),
        ("4", "1", "no_tool"),
    ]


def test_pydantic_ai_runs_the_planned_loop(stub):
    """AgenticOS's client (pydantic-ai) joins the stub's calls into its tool loop."""
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=stub.url + "/v1", api_key="not-a-key")
    agent = Agent(OpenAIChatModel("stub", provider=provider), instructions="Be brief.")
    topics = []

    @agent.tool_plain
    def lookup(topic: str) -> str:
        """Look a topic up."""
        topics.append(topic)
        return f"{topic}: nothing to report"

    def prompt(arrival: int, parallel: int) -> str:
        return _marked("pai", arrival, 3, parallel)[0]["content"]

    async def both():
        whole = await agent.run(prompt(1, 1))
        async with agent.run_stream(prompt(2, 2)) as streamed:
            return whole.output, await streamed.get_output()

    outputs = asyncio.run(both())
    assert outputs == (answer_text(TOKENS), answer_text(TOKENS))
    assert topics == ["loadkit"] * (2 + 4)
    rows = _calls(stub, "pai")
    assert [(r["arrival"], r["step"], r["reply"]) for r in rows] == [
        (a, s, kind)
        for a in ("1", "2")
        for s, kind in (("1", "tool_calls"), ("2", "tool_calls"), ("3", "answer"))
    ]
