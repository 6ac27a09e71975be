"""What OpenAI-compatible servers answer, as typed Structs: the model list, embeddings, a chat
completion and its streamed chunks, a response and its stream events, and the error body.

Written against what the servers put on the wire (WIRE.md: the kit's stub, LiteLLM's proxy
1.110.2 in front of it) and OpenAI's API reference, naming only the fields the kit reads;
servers add others (LiteLLM's ``provider_specific_fields``, the stub's
``system_fingerprint``). The error body is OpenAI's ``{"error": {"message", "type",
"code", "param"}}``; a server that answers with the older top-level form (``{"object":
"error", "message", ...}``) or a bare string under ``error`` is read too, so a failure is
named in the server's words whatever its dialect of the error.
"""

from __future__ import annotations

import msgspec

from workloads.answers import decoder


class ApiError(msgspec.Struct):
    """OpenAI's error object: what went wrong, its kind and its code (a string or, from some
    servers, a number)."""

    message: str = ""
    type: str | None = None
    code: str | int | None = None


class ErrorBody(msgspec.Struct):
    """An error answer: ``error`` as an object (OpenAI, LiteLLM, the stub) or a string, or the
    object's fields at the top (``"object": "error"``)."""

    error: ApiError | str | None = None
    message: str | None = None
    type: str | None = None
    code: str | int | None = None


class Model(msgspec.Struct):
    """One model the key may use."""

    id: str


class ModelList(msgspec.Struct):
    """GET /v1/models: the models, in OpenAI's list shape."""

    data: list[Model]


class Embedding(msgspec.Struct):
    """One input's vector: floats, or base64 when asked for (the SDK's default)."""

    embedding: list[float] | str


class Embeddings(msgspec.Struct):
    """POST /v1/embeddings: one vector per input."""

    data: list[Embedding]


class Message(msgspec.Struct):
    """A completion's message: its text, and the tools it asks for (the kit offers none)."""

    content: str | None = None
    tool_calls: list[msgspec.Raw] | None = None


class Choice(msgspec.Struct):
    """One choice of a whole completion."""

    message: Message
    finish_reason: str | None = None


class Completion(msgspec.Struct):
    """POST /v1/chat/completions, not streamed."""

    choices: list[Choice]


class Delta(msgspec.Struct):
    """What one streamed chunk adds to its choice."""

    content: str | None = None
    tool_calls: list[msgspec.Raw] | None = None


class ChunkChoice(msgspec.Struct):
    """One choice of a streamed chunk."""

    delta: Delta = msgspec.field(default_factory=Delta)
    finish_reason: str | None = None


class Chunk(msgspec.Struct):
    """One ``chat.completion.chunk``; an error a server sends inside the stream (LiteLLM does,
    when its provider fails mid-answer) comes as ``error`` instead."""

    choices: list[ChunkChoice] = []
    error: ApiError | None = None


class Content(msgspec.Struct):
    """A part of an output message: its text, when it is text."""

    type: str = ""
    text: str | None = None


class OutputItem(msgspec.Struct):
    """One item of a response's output: a message, or a tool call (``function_call``)."""

    type: str = ""
    content: list[Content] | None = None


class ResponseError(msgspec.Struct):
    """Why a response failed."""

    code: str | None = None
    message: str = ""


class Incomplete(msgspec.Struct):
    """Why a response stopped short (``max_output_tokens``, ``content_filter``)."""

    reason: str | None = None


class Response(msgspec.Struct):
    """A response object: whole from POST /v1/responses, or inside a stream's events."""

    id: str
    status: str | None = None
    output: list[OutputItem] = []
    error: ResponseError | None = None
    incomplete_details: Incomplete | None = None


class StreamEvent(msgspec.Struct):
    """One Responses stream event, named by ``type``: a text delta, the response at its start
    or end, or an ``error`` event with its own code and message."""

    type: str
    delta: str | None = None
    response: Response | None = None
    code: str | None = None
    message: str | None = None


ERROR_BODY = decoder(ErrorBody)
MODEL_LIST = decoder(ModelList)
EMBEDDINGS = decoder(Embeddings)
COMPLETION = decoder(Completion)
CHUNK = decoder(Chunk)
RESPONSE = decoder(Response)
STREAM_EVENT = decoder(StreamEvent)


def output_text(response: Response) -> str:
    """A response's text: its output messages' text parts, joined."""
    return "".join(
        part.text or ""
        for item in response.output
        if item.type == "message"
        for part in item.content or ()
    )


def asked_for_tool(response: Response) -> bool:
    """Whether a response's output calls a tool (the kit offers none)."""
    return any(item.type.endswith("_call") for item in response.output)
