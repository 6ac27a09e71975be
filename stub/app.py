"""The stub's HTTP endpoints: OpenAI chat and embeddings, Ollama embeddings, stats.

Every delay is a deadline counted from the request's arrival (first token at
arrival + first-token delay, token k at the first token's deadline + k paces),
so a late wake-up never pushes later frames back and delays never accumulate.
How late each frame actually left is recorded, so a run can show the stub kept
its promises. Deadlines are served by the process's one Pacer; a streamed
answer's headers go out on arrival, as a real provider's do, and its frames
are written by the pacer straight to the connection as HTTP chunks.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

import msgspec
from aiohttp import web

from stub.calls import ANSWERED, HEADER, LEFT, CallLog
from stub.config import StubConfig
from stub.faults import Fault, FaultPlan
from stub.pacer import Pacer
from stub.plan import Reply, reply_to
from stub.schedule import (
    HANG,
    OUTAGE,
    RATE_LIMIT,
    SLOWDOWN,
    STALL,
    Board,
    Schedule,
    ScheduleError,
    Window,
)
from stub.stats import ENDPOINTS, FAULTS, Stats
from stub.vectors import as_base64, embed, width
from stub.wire import (
    TOOL_CALLS_FINISH,
    StreamFrames,
    completion_body,
    count_prompt_tokens,
    ollama_error,
    openai_error,
    tool_calls_body,
    tool_frames,
)

# The model id /v1/models lists; requests may name any model and get it echoed back.
MODEL_ID = "stub"
# Seconds a rate-limited client is told to wait: short, so a shed request retries soon.
RETRY_AFTER_S = 1
# Injected faults must reach the caller: the official SDKs honour this and do not retry.
NO_RETRY = {"x-should-retry": "false"}
ERROR_MESSAGE = "The stub model injected a server error (--error-rate)."
RATE_LIMIT_MESSAGE = "The stub model injected a rate limit (--rate-limit-rate)."
# A fault window's answers: what a provider in an outage or a storm says. They carry no
# x-should-retry: false, since what the platform's retries do is what a window measures.
WINDOW_ERROR = "The model provider is unavailable (fault window {name})."
WINDOW_RATE_LIMIT = "Rate limit reached for requests (fault window {name})."
_JSON = "application/json"
_SSE_HEADERS = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}

_CHAT, _EMBEDDINGS, _EMBED, _OLLAMA_EMBEDDINGS, _MODELS, _HEALTH, _WHATSAPP = range(len(ENDPOINTS))
_ERRORS, _TIMEOUTS, _RATE_LIMITED = range(len(FAULTS))
_FIRST, _TOKEN, _LOOP = 0, 1, 2
# How often the event loop checks its own punctuality: sees any stall of 20 ms or more, and
# costs about 0.6% of a core when idle (a 10 ms tick measured 1.2% on this machine).
LOOP_TICK_S = 0.020
# /calls is written out in pieces of about this many bytes, so a long record never sits whole
# in memory.
_CALLS_BATCH = 256 * 1024


class _Stub:
    """The handlers of one stub process, sharing its config, fault plan and stats."""

    def __init__(
        self, config: StubConfig, stats: Stats, calls: CallLog, stream: int, board: Board
    ) -> None:
        self.config = config
        self.stats = stats
        self.calls = calls
        self.plan = FaultPlan(config, stream)
        self.board = board
        self.schedule = Schedule(board, stream, self._book)
        self.first_s = config.first_token_ms / 1000.0
        self.pace_s = config.token_ms / 1000.0
        self.ids = itertools.count(1)
        self.id_prefix = f"chatcmpl-stub{stream}x"
        self.pacer = Pacer()

    async def _until(self, deadline: float) -> None:
        """Wait until time.monotonic() reaches deadline (the caller records the lateness)."""
        woken = asyncio.get_running_loop().create_future()
        self.pacer.at(deadline, lambda _due: _resolve(woken))
        await woken

    def _book(self, epoch: float, callback: Callable[[], None]) -> None:
        """Run callback at an epoch time, on this process's one timer (the schedule's)."""
        self.pacer.at(time.monotonic() + (epoch - time.time()), lambda _due: callback())

    def _fate(self) -> _Fate:
        """What the next model request meets: the fault window its arrival falls in (which
        decides it), else the static fault plan's draw (drawn either way, so the k-th request
        of a process keeps its fate whatever windows come and go)."""
        drawn = self.plan.next_fault()
        booked = self.schedule.at(time.time())
        if booked is None:
            return _Fate(drawn, None)
        window = booked.window
        hit = window.share >= 1.0 or booked.rng.random() < window.share
        if window.kind == OUTAGE:
            return _Fate(Fault.REFUSED if window.refuse else Fault.ERROR if hit else None, window)
        if window.kind == RATE_LIMIT:
            return _Fate(Fault.RATE_LIMIT if hit else None, window)
        if window.kind == HANG:
            return _Fate(Fault.TIMEOUT, window)
        return _Fate(drawn, window)

    async def _fault(self, fate: _Fate, request: web.Request, ollama: bool) -> web.Response:
        """Serve an injected fault: 500, 429 with Retry-After, a refused (reset) connection, or
        hold until the client leaves. A window's say which window, and let clients retry."""
        fault, window = fate.fault, fate.window
        if fault is Fault.REFUSED:
            self.stats.fault(_ERRORS)
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=503)
        if fault is Fault.TIMEOUT:
            self.stats.fault(_TIMEOUTS)
            # Cancelled when the client disconnects (handler_cancellation), never resolved.
            await asyncio.get_running_loop().create_future()
        headers = NO_RETRY if window is None else {}
        if fault is Fault.ERROR:
            self.stats.fault(_ERRORS)
            message = ERROR_MESSAGE if window is None else WINDOW_ERROR.format(name=window.name)
            body = ollama_error(message) if ollama else openai_error(message, "server_error", None)
            return web.Response(status=500, body=body, content_type=_JSON, headers=headers)
        self.stats.fault(_RATE_LIMITED)
        message = (
            RATE_LIMIT_MESSAGE if window is None else WINDOW_RATE_LIMIT.format(name=window.name)
        )
        body = (
            ollama_error(message)
            if ollama
            else openai_error(message, "requests", "rate_limit_exceeded")
        )
        wait = RETRY_AFTER_S if window is None else window.retry_after_s
        headers = {**headers, "Retry-After": f"{wait:g}"}
        return web.Response(status=429, body=body, content_type=_JSON, headers=headers)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        """POST /v1/chat/completions, streamed as SSE chunks or answered whole: text, or the
        tool calls the kit's marker plans for this step (stub/plan.py)."""
        arrival = time.monotonic()
        self.stats.begin(_CHAT)
        try:
            answer = self._answer(await _json_object(request), arrival)
            if answer is None:
                return _bad_request("The body must be a JSON object.")
            if isinstance(answer, _Fate):
                return await self._fault(answer, request, ollama=False)
            if answer.streamed:
                return await self._stream(request, answer)
            return await self._whole(answer)
        finally:
            self.stats.end()

    def _answer(self, body: dict | None, arrival: float) -> _Answer | _Fate | None:
        """This request's answer, or the fault it meets (None: the body is no JSON object),
        decided from the body alone; the body is not held while the answer waits."""
        if body is None:
            return None
        reply = reply_to(body)
        call = None if reply.marker is None else _Call(self, reply, arrival)
        fate = self._fate()
        if fate.fault is not None:
            if call is not None:
                call.end(fate.fault.value)
            return fate
        if reply.calls:
            n_tokens, finish = tool_frames(reply.calls), TOOL_CALLS_FINISH
        else:
            n_tokens, finish = self._answer_length(body, reply)
        window = fate.window
        slower = window.factor if window is not None and window.kind == SLOWDOWN else 1.0
        first = arrival + self.plan.spread(self.first_s * slower)
        paces = [self.plan.spread(self.pace_s * slower) for _ in range(n_tokens - 1)]
        stall_after, stall_s = self.config.stall_after, self.config.stall_ms / 1000.0
        if window is not None and window.kind == STALL:
            stall_after, stall_s = window.after_tokens, window.stall_s
        if 0 < stall_after < n_tokens:
            paces[stall_after - 1] += stall_s
        completion_id = f"{self.id_prefix}{next(self.ids)}"
        model = str(body.get("model") or MODEL_ID)
        prompt_tokens = count_prompt_tokens(body.get("messages"))
        if call is not None:
            call.prompt_tokens = prompt_tokens
        created = int(time.time())
        if not body.get("stream"):
            whole = (
                tool_calls_body(completion_id, created, model, reply.calls, prompt_tokens)
                if reply.calls
                else completion_body(completion_id, created, model, n_tokens, finish, prompt_tokens)
            )
            return _Answer(False, [whole], first, paces, call)
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        frames = StreamFrames.for_stream(completion_id, created, model, include_usage)
        payloads = (
            frames.tool_payloads(reply.calls, prompt_tokens)
            if reply.calls
            else frames.payloads(n_tokens, finish, prompt_tokens)
        )
        return _Answer(True, payloads, first, paces, call)

    def _answer_length(self, body: dict, reply: Reply) -> tuple[int, str]:
        """Tokens to send and why the answer ends: ``length`` when max_tokens cuts it. The
        kit's marker may state the answer's length; the stub's --tokens otherwise."""
        tokens = self.config.tokens
        if reply.marker is not None and reply.marker.tokens is not None:
            tokens = reply.marker.tokens
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        if isinstance(limit, int) and 0 < limit < tokens:
            return limit, "length"
        return tokens, "stop"

    async def _whole(self, answer: _Answer) -> web.Response:
        """A non-streamed answer, sent in one piece at its last token's deadline."""
        answered = answer.first + sum(answer.paces)
        call = answer.call
        try:
            await self._until(answered)
        except asyncio.CancelledError:
            self.stats.abandoned()
            if call is not None:
                call.end(LEFT)
            raise
        self.stats.late(_FIRST, time.monotonic() - answered)
        if call is not None:
            call.first_s = time.monotonic() - call.arrival
            call.end(ANSWERED)
        return web.Response(body=answer.payloads[0], content_type=_JSON)

    async def _stream(self, request: web.Request, answer: _Answer) -> web.StreamResponse:
        """Headers with the first token, middle tokens by the pacer, the last with the end.

        Each send is one write: aiohttp joins the buffered headers to the first chunk and
        the chunked terminator to the last, so a stream of n tokens costs n writes.
        """
        payloads, first, paces, call = answer.payloads, answer.first, answer.paces, answer.call
        last = first + sum(paces)
        response = web.StreamResponse(headers=_SSE_HEADERS)
        await response.prepare(request)
        try:
            await self._until(first)
            if len(payloads) > 1:
                await response.write(payloads[0])
                self.stats.late(_FIRST, time.monotonic() - first)
                if call is not None:
                    call.first_s = time.monotonic() - call.arrival
                middle = _Stream(request.transport, payloads[1:-1], paces, self)
                self.pacer.at(first + paces[0], middle.send)
                await middle.done
            await response.write_eof(payloads[-1])
            self.stats.late(_FIRST if len(payloads) == 1 else _TOKEN, time.monotonic() - last)
            if call is not None:
                if call.first_s is None:
                    call.first_s = time.monotonic() - call.arrival
                call.end(ANSWERED)
        except asyncio.CancelledError:
            self.stats.abandoned()
            if call is not None:
                call.end(LEFT)
            raise
        except ConnectionError:
            # The client left between frames; aiohttp closes quietly when the end cannot be sent.
            self.stats.abandoned()
            if call is not None:
                call.end(LEFT)
        return response

    async def embeddings(self, request: web.Request) -> web.Response:
        """POST /v1/embeddings: one unit vector per input, float or base64 encoded."""
        self.stats.begin(_EMBEDDINGS)
        try:
            body = await _json_object(request)
            if body is None:
                return _bad_request("The body must be a JSON object.")
            texts = _texts(body.get("input"))
            if texts is None:
                return _bad_request("'input' must be a string or a list of strings.")
            fate = self._fate()
            if fate.fault is not None:
                return await self._fault(fate, request, ollama=False)
            encode = as_base64 if body.get("encoding_format") == "base64" else list
            dim = width(body.get("model"), body.get("dimensions"), self.config.embedding_dim)
            data = [
                {"object": "embedding", "index": i, "embedding": encode(embed(text, dim))}
                for i, text in enumerate(texts)
            ]
            words = sum(len(text.split()) for text in texts)
            answer = {
                "object": "list",
                "data": data,
                "model": str(body.get("model") or MODEL_ID),
                "usage": {"prompt_tokens": words, "total_tokens": words},
            }
            return web.json_response(answer)
        finally:
            self.stats.end()

    async def ollama_embed(self, request: web.Request) -> web.Response:
        """POST /api/embed (Ollama): {"input": str | [str]} -> {"embeddings": [[...]]}."""
        self.stats.begin(_EMBED)
        try:
            body = await _json_object(request)
            texts = _texts(body.get("input")) if body is not None else None
            if body is None or texts is None:
                return _ollama_bad_request("'input' must be a string or a list of strings")
            fate = self._fate()
            if fate.fault is not None:
                return await self._fault(fate, request, ollama=True)
            dim = width(body.get("model"), body.get("dimensions"), self.config.embedding_dim)
            answer = {
                "model": str(body.get("model") or MODEL_ID),
                "embeddings": [list(embed(text, dim)) for text in texts],
                "prompt_eval_count": sum(len(text.split()) for text in texts),
            }
            return web.json_response(answer)
        finally:
            self.stats.end()

    async def ollama_embeddings(self, request: web.Request) -> web.Response:
        """POST /api/embeddings (Ollama's older path): {"prompt": str} -> {"embedding": [...]}."""
        self.stats.begin(_OLLAMA_EMBEDDINGS)
        try:
            body = await _json_object(request)
            prompt = body.get("prompt") if body is not None else None
            if body is None or not isinstance(prompt, str):
                return _ollama_bad_request("'prompt' must be a string")
            fate = self._fate()
            if fate.fault is not None:
                return await self._fault(fate, request, ollama=True)
            dim = width(body.get("model"), None, self.config.embedding_dim)
            return web.json_response({"embedding": list(embed(prompt, dim))})
        finally:
            self.stats.end()

    async def models(self, request: web.Request) -> web.Response:
        """GET /v1/models: the one model the stub is, in OpenAI's list shape."""
        self.stats.begin(_MODELS)
        try:
            model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "agent-loadkit"}
            return web.json_response({"object": "list", "data": [model]})
        finally:
            self.stats.end()

    async def health(self, request: web.Request) -> web.Response:
        """GET /health: answers as soon as the process serves."""
        self.stats.begin(_HEALTH)
        try:
            return web.json_response({"status": "ok"})
        finally:
            self.stats.end()

    async def whatsapp_messages(self, request: web.Request) -> web.Response:
        """POST /{version}/{phone}/messages: WhatsApp Cloud API's send, so a platform's replies
        (agno's WhatsApp interface) land here and are counted, never at Meta."""
        self.stats.begin(_WHATSAPP)
        try:
            await request.read()
            message = {"id": f"wamid.stub-{next(self.ids)}"}
            return web.json_response({"messaging_product": "whatsapp", "messages": [message]})
        finally:
            self.stats.end()

    async def get_calls(self, request: web.Request) -> web.StreamResponse:
        """GET /calls[?run=RUN]: every stub process's per-call rows (of that run) as one CSV."""
        response = web.StreamResponse(headers={"Content-Type": "text/csv; charset=utf-8"})
        await response.prepare(request)
        await response.write(HEADER.encode())
        batch = bytearray()
        for line in self.calls.rows(request.query.get("run")):
            batch += line
            if len(batch) >= _CALLS_BATCH:
                await response.write(bytes(batch))
                batch.clear()
        await response.write_eof(bytes(batch))
        return response

    async def post_faults(self, request: web.Request) -> web.Response:
        """POST /faults: a run's fault windows, kept for every process (stub/schedule.py)."""
        try:
            posted = self.board.post(await request.read())
        except ScheduleError as exc:
            return _bad_request(str(exc))
        self.schedule.keep_up()
        return web.json_response({"run": posted.run, "windows": len(posted.windows)})

    async def cancel_faults(self, request: web.Request) -> web.Response:
        """POST /faults/cancel: a run's windows end now in every process."""
        try:
            cancel = self.board.cancel(await request.read())
        except ScheduleError as exc:
            return _bad_request(str(exc))
        self.schedule.keep_up()
        return web.json_response({"run": cancel.run, "at": cancel.at})

    async def get_faults(self, request: web.Request) -> web.StreamResponse:
        """GET /faults[?run=RUN]: every process's record of the windows it applied and undid
        (of that run), JSON lines."""
        response = web.StreamResponse(headers={"Content-Type": "application/jsonl"})
        await response.prepare(request)
        await response.write_eof(b"".join(self.board.changes(request.query.get("run"))))
        return response

    async def get_stats(self, request: web.Request) -> web.Response:
        """GET /stats: combined counters of every stub process on this port."""
        return web.json_response({**self.stats.snapshot(), "knobs": self._knobs()})

    def _knobs(self) -> dict[str, float]:
        """The stated delays, so a report can subtract the model's time from what it observed."""
        config = self.config
        return {
            "first_token_ms": config.first_token_ms,
            "token_ms": config.token_ms,
            "tokens": config.tokens,
            "jitter": config.jitter,
        }

    async def reset_stats(self, request: web.Request) -> web.Response:
        """POST /stats/reset: counting starts afresh; what is in flight stays in flight."""
        self.stats.reset()
        return web.json_response(self.stats.snapshot())


@dataclass(frozen=True, slots=True)
class _Fate:
    """What a model request meets: a fault (None: answered), and the window it arrived in."""

    fault: Fault | None
    window: Window | None


@dataclass(frozen=True, slots=True)
class _Answer:
    """One chat request's answer as decided, all that is held while it waits for its
    deadlines: a loop's later steps resend the agent's whole history, and thousands of
    bodies in flight were thousands of dicts for every garbage collection to walk (the
    stub's CPU per loop call, docs/internals.md)."""

    streamed: bool
    payloads: list[bytes]  # streamed: one per send; whole: the one body
    first: float  # the first token's deadline
    paces: list[float]  # the later tokens' spacing
    call: _Call | None  # the record's row, for a marked call


class _Call:
    """One marked model call being served: the row the stub appends when it ends."""

    __slots__ = ("arrival", "first_s", "plan", "prompt_tokens", "started_at", "stub")

    def __init__(self, stub: _Stub, reply: Reply, arrival: float) -> None:
        marker = reply.marker
        assert marker is not None  # only marked calls are recorded
        self.stub, self.arrival = stub, arrival
        # What the row says of the plan, as plain values (the reply and its calls are not
        # kept through the answer's wait; a tuple of them is no work for the collector).
        self.plan = (
            marker.run,
            marker.arrival,
            reply.step,
            marker.steps,
            reply.kind,
            len(reply.calls),
            reply.turns,
        )
        self.started_at = time.time()
        self.first_s: float | None = None
        self.prompt_tokens = 0

    def end(self, outcome: str) -> None:
        """Append the call's row: its step, what the stub answered, its own times."""
        self.stub.calls.write(
            *self.plan,
            self.prompt_tokens,
            self.started_at,
            self.first_s,
            time.monotonic() - self.arrival,
            outcome,
        )


class _Stream:
    """The middle frames of one streamed answer, written by the pacer at their deadlines.

    ``done`` resolves at the deadline of the last token, which the handler writes itself
    together with the end of the stream.
    """

    __slots__ = ("chunks", "done", "paces", "sent", "stub", "transport")

    def __init__(self, transport, payloads: list[bytes], paces: list[float], stub: _Stub) -> None:
        self.transport = transport
        self.chunks = [b"%x\r\n%b\r\n" % (len(p), p) for p in payloads]
        self.paces = paces
        self.stub = stub
        self.sent = 0
        self.done = asyncio.get_running_loop().create_future()

    def send(self, deadline: float) -> None:
        """Write the frame due at deadline and book the next one (the pacer calls this)."""
        done = self.done
        if done.done():  # the handler was cancelled: its client has left
            return
        k = self.sent
        if k == len(self.chunks):
            done.set_result(None)
            return
        transport = self.transport
        if transport is None or transport.is_closing():
            done.set_exception(ConnectionResetError("client left mid-stream"))
            return
        transport.write(self.chunks[k])
        self.stub.stats.late(_TOKEN, time.monotonic() - deadline)
        self.sent = k + 1
        self.stub.pacer.at(deadline + self.paces[k + 1], self.send)


def _tick(stub: _Stub, deadline: float) -> None:
    """Record how late the loop served this tick, see whether the fault windows changed, and
    book the next tick on the same schedule."""
    stub.stats.late(_LOOP, time.monotonic() - deadline)
    stub.schedule.keep_up()
    stub.pacer.at(deadline + LOOP_TICK_S, lambda due: _tick(stub, due))


def _resolve(future: asyncio.Future) -> None:
    if not future.done():  # a cancelled waiter's client has left
        future.set_result(None)


async def _json_object(request: web.Request) -> dict | None:
    """The request's JSON object, or None. msgspec reads it: an agent's loop resends the whole
    history every step, and json.loads took twice as long over the same bytes."""
    try:
        body = msgspec.json.decode(await request.read())
    except msgspec.DecodeError:
        return None
    return body if isinstance(body, dict) else None


def _texts(value: object) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    return None


def _bad_request(message: str) -> web.Response:
    body = openai_error(message, "invalid_request_error", None)
    return web.Response(status=400, body=body, content_type=_JSON)


def _ollama_bad_request(message: str) -> web.Response:
    return web.Response(status=400, body=ollama_error(message), content_type=_JSON)


def build_app(
    config: StubConfig, stats: Stats, calls: CallLog, board: Board, stream: int = 0
) -> tuple[web.Application, Schedule]:
    """The aiohttp application of one stub process and its view of the fault windows; stream
    numbers its seeded sequences."""
    stub = _Stub(config, stats, calls, stream, board)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", stub.chat)
    app.router.add_post("/v1/embeddings", stub.embeddings)
    app.router.add_post("/api/embed", stub.ollama_embed)
    app.router.add_post("/api/embeddings", stub.ollama_embeddings)
    app.router.add_get("/v1/models", stub.models)
    app.router.add_get("/health", stub.health)
    app.router.add_get("/stats", stub.get_stats)
    app.router.add_get("/calls", stub.get_calls)
    app.router.add_post("/stats/reset", stub.reset_stats)
    app.router.add_post("/faults", stub.post_faults)
    app.router.add_post("/faults/cancel", stub.cancel_faults)
    app.router.add_get("/faults", stub.get_faults)
    app.router.add_post("/{version}/{phone}/messages", stub.whatsapp_messages)

    async def watch_loop(_app: web.Application) -> None:
        stub.pacer.at(time.monotonic() + LOOP_TICK_S, lambda due: _tick(stub, due))

    app.on_startup.append(watch_loop)
    return app, stub.schedule
