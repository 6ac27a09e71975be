"""OpenAI's Chat Completions wire format, as pre-serialised byte templates.

Real clients (the official SDK, LangChain, pydantic-ai) parse these frames, so
the field order and spelling follow what api.openai.com sends. Each stream's
fixed head is built once and every token frame is that head plus a
pre-escaped delta plus a fixed tail, so a token costs a byte concatenation,
never a serialisation: the stub must not be the bottleneck of a load run. What
is serialised (a stream's head, a tool call's pieces, a whole answer) goes
through msgspec, about ten times quicker than ``json.dumps`` on these small values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from stub.plan import ToolCall

# A vocabulary of plain words so answers read as text and need no JSON escaping.
WORDS = (
    " The", " stub", " answers", " slowly", " on", " purpose", " so", " the",
    " platform", " holds", " its", " resources", " while", " it", " waits", ".",
)  # fmt: skip
_TOKEN_DELTAS = tuple(b'{"content":"' + w.encode() + b'"}' for w in WORDS)
_ROLE_DELTA = b'{"role":"assistant","content":"","refusal":null}'
# Stands where a real provider names its backend configuration; SDKs only pass it through.
SYSTEM_FINGERPRINT = "fp_stub"
DONE_FRAME = b"data: [DONE]\n\n"
# A tool call's JSON arguments arrive in pieces of this many characters, as a model writes
# them token by token; the SDKs join the pieces, and a client that read only the first
# delta would get broken JSON.
ARGUMENT_PIECE = 12
TOOL_CALLS_FINISH = "tool_calls"
_encode = msgspec.json.Encoder().encode


def answer_text(n_tokens: int) -> str:
    """The whole answer of n_tokens tokens, as a non-streaming completion carries it."""
    return "".join(WORDS[k % len(WORDS)] for k in range(n_tokens))


def count_prompt_tokens(messages: object) -> int:
    """A cheap, deterministic prompt size: whitespace-separated words of string contents."""
    if not isinstance(messages, list):
        return 0
    total = 0
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            total += len(content.split())
    return total


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


@dataclass(frozen=True)
class StreamFrames:
    """The frames of one streamed completion, built from per-stream head and fixed tails."""

    head: bytes
    tail: bytes
    usage_head: bytes

    @classmethod
    def for_stream(
        cls, completion_id: str, created: int, model: str, include_usage: bool
    ) -> StreamFrames:
        """Serialise the parts every frame of this stream shares, once."""
        common = (
            b'data: {"id":"'
            + completion_id.encode()
            + b'","object":"chat.completion.chunk","created":'
            + str(created).encode()
            + b',"model":'
            + _encode(model)
            + b',"system_fingerprint":"'
            + SYSTEM_FINGERPRINT.encode()
            + b'"'
        )
        usage_tail = b',"usage":null}\n\n' if include_usage else b"}\n\n"
        return cls(
            head=common + b',"choices":[{"index":0,"delta":',
            tail=b',"logprobs":null,"finish_reason":null}]' + usage_tail,
            usage_head=common + b',"choices":[],"usage":' if include_usage else b"",
        )

    def payloads(self, n_tokens: int, finish_reason: str, prompt_tokens: int) -> list[bytes]:
        """What goes out at each of the n_tokens deadlines; the last carries the end of stream."""
        sends = [self.first()] + [self.token(k) for k in range(1, n_tokens)]
        sends[-1] += self.last(finish_reason, prompt_tokens, n_tokens)
        return sends

    def tool_payloads(self, calls: Sequence[ToolCall], prompt_tokens: int) -> list[bytes]:
        """A tool-calling answer's sends: each call's head (id, name, empty arguments), then its
        arguments in pieces, as OpenAI streams them; the first carries the role, the last the
        end of stream. One send per model token: a call's head and each piece."""
        deltas = []
        for i, call in enumerate(calls):
            head = _tool_head(i, call)
            deltas.append(
                b'{"role":"assistant","content":null,"tool_calls":[' + head + b'],"refusal":null}'
                if i == 0
                else b'{"tool_calls":[' + head + b"]}"
            )
            deltas += [
                b'{"tool_calls":[{"index":%d,"function":{"arguments":%b}}]}' % (i, piece)
                for piece in _pieces(call.arguments)
            ]
        sends = [self.head + delta + self.tail for delta in deltas]
        sends[-1] += self.last(TOOL_CALLS_FINISH, prompt_tokens, len(sends))
        return sends

    def first(self) -> bytes:
        """The role frame and the first token, sent together at the first-token deadline."""
        return self.head + _ROLE_DELTA + self.tail + self.token(0)

    def token(self, k: int) -> bytes:
        """The frame carrying token k of the answer."""
        return self.head + _TOKEN_DELTAS[k % len(_TOKEN_DELTAS)] + self.tail

    def last(self, finish_reason: str, prompt_tokens: int, completion_tokens: int) -> bytes:
        """The finish frame, the usage frame when asked for, and [DONE]."""
        finish = self.tail.replace(
            b'"finish_reason":null', b'"finish_reason":"' + finish_reason.encode() + b'"', 1
        )
        frames = self.head + b"{}" + finish
        if self.usage_head:
            usage = _encode(_usage(prompt_tokens, completion_tokens))
            frames += self.usage_head + usage + b"}\n\n"
        return frames + DONE_FRAME


def _tool_head(index: int, call: ToolCall) -> bytes:
    """A streamed call's opening delta entry: its index, id, name and no arguments yet."""
    return b'{"index":%d,"id":%b,"type":"function","function":{"name":%b,"arguments":""}}' % (
        index,
        _encode(call.id),
        _encode(call.name),
    )


def _pieces(arguments: str) -> list[bytes]:
    """The arguments as JSON string literals of ARGUMENT_PIECE characters each."""
    return [
        _encode(arguments[at : at + ARGUMENT_PIECE])
        for at in range(0, len(arguments), ARGUMENT_PIECE)
    ]


def tool_frames(calls: Sequence[ToolCall]) -> int:
    """How many sends (model tokens) a tool-calling answer takes: a head per call and its
    argument pieces, so a streamed and a whole answer take the same time."""
    return sum(1 + len(range(0, len(call.arguments), ARGUMENT_PIECE)) for call in calls)


def tool_calls_body(
    completion_id: str,
    created: int,
    model: str,
    calls: Sequence[ToolCall],
    prompt_tokens: int,
) -> bytes:
    """A non-streaming ``chat.completion`` whose message asks for ``calls``."""
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in calls
        ],
        "refusal": None,
    }
    return _completion(
        completion_id, created, model, message, TOOL_CALLS_FINISH, prompt_tokens, tool_frames(calls)
    )


def completion_body(
    completion_id: str,
    created: int,
    model: str,
    n_tokens: int,
    finish_reason: str,
    prompt_tokens: int,
) -> bytes:
    """A non-streaming ``chat.completion`` object carrying the whole answer and its usage."""
    message = {"role": "assistant", "content": answer_text(n_tokens), "refusal": None}
    return _completion(
        completion_id, created, model, message, finish_reason, prompt_tokens, n_tokens
    )


def _completion(
    completion_id: str,
    created: int,
    model: str,
    message: dict,
    finish_reason: str,
    prompt_tokens: int,
    completion_tokens: int,
) -> bytes:
    body = {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": _usage(prompt_tokens, completion_tokens),
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }
    return _encode(body)


def openai_error(message: str, kind: str, code: str | None) -> bytes:
    """The error body OpenAI sends, which the SDK turns into its exception's message."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return _encode(body)


def ollama_error(message: str) -> bytes:
    """The error body Ollama sends: a bare message under "error"."""
    return _encode({"error": message})
