"""Trivial chat look-alikes for the streams benchmark: AgenticOS's WebSocket turn, agno's SSE run.

AgenticOS: sign-in and a WebSocket turn (``text_delta`` frames, then ``complete``).
agno's AgentOS: the key checked by a list read, and a run streamed as server-sent
events (``RunStarted``, ``RunContent``, ``RunCompleted``). Each turn's first token
leaves exactly FIRST_TOKEN_MS after the server received the message (scheduled
against that moment, so its own delays do not add up), then TOKENS tokens TOKEN_MS
apart and the end. The benchmark compares the time to first token the generator
observes with this stated delay.

Why a bare ``asyncio.Protocol`` and not aiohttp (which it was until issue 33): this
server shares the machine's two cores with the load process it measures, and the
benchmark only means something while the server's own first token is on time (p99 <=
2 ms). aiohttp cost 680-945 us of CPU per turn and, at 10,000 open turns, its own
p99 was 235-301 ms late; the server is a reference, not a subject, so it does the
least: one HTTP/1.1 head parser (keep-alive, Content-Length bodies), RFC 6455's
handshake and unmasking, pre-built frames and chunks, and one timer per token
(``loop.call_later``) instead of a task per turn.

    python bench/ws_server.py PORT [FIRST_TOKEN_MS] [off|default]

(the last: the collector off during load, collected at each /stats, or Python's defaults)
serves 127.0.0.1 until killed.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import hashlib
import json
import re
import sys
import time
from typing import cast
from urllib.parse import parse_qs

import uvloop

FIRST_TOKEN_MS = 2000.0
TOKENS = 4
TOKEN_MS = 50.0
# The arrival index in the kit's chat message (workloads/corpus.py turn_message).
INDEX = re.compile(r"turn (\d+)")
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_HEAD = 64 * 1024


class Server:
    """What every connection shares: the stated delay, each turn's times, the collector's."""

    def __init__(self, first_token_ms: float):
        self.first_s = first_token_ms / 1000
        # Each turn since the last /stats, by its arrival index: (message received, first
        # token sent), time.monotonic() seconds.
        self.turns: dict[int, tuple[float, float]] = {}
        self.gc_longest_s = 0.0
        self._gc_began = 0.0

    def time_collections(self, phase: str, info: dict) -> None:
        """gc.callbacks' hook: the longest collection, so /stats says whether the server's
        own lateness was its collector."""
        if phase == "start":
            self._gc_began = time.perf_counter()
        else:
            self.gc_longest_s = max(self.gc_longest_s, time.perf_counter() - self._gc_began)

    def stats(self) -> dict:
        """The turns since the last call: the server's own first-token lateness (p99 and worst,
        in ms), each turn's (received, first token sent) by arrival index, the CPU seconds this
        server used and its longest garbage collection (ms); the collector then runs, between
        runs."""
        turns, self.turns = self.turns, {}
        late = sorted((sent - received - self.first_s) * 1000 for received, sent in turns.values())
        p99 = late[max(0, -(-len(late) * 99 // 100) - 1)] if late else 0.0
        gc_ms, self.gc_longest_s = self.gc_longest_s * 1000, 0.0
        answer = {
            "turns": turns,
            "p99_ms": p99,
            "max_ms": max(late, default=0),
            "cpu_s": time.process_time(),
            "gc_max_ms": gc_ms,
        }
        if not gc.isenabled():
            gc.collect()
        return answer


def _frame(text: str) -> bytes:
    """A server's (unmasked) text frame."""
    data = text.encode()
    if len(data) < 126:
        return bytes((0x81, len(data))) + data
    return bytes((0x81, 126)) + len(data).to_bytes(2, "big") + data


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _event(name: str, data: dict) -> bytes:
    return _chunk(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())


DELTA = _frame(json.dumps({"type": "text_delta", "data": {"content": "x"}}))
COMPLETE = _frame(json.dumps({"type": "complete", "data": {"stopped": False}}))
CLOSE = bytes((0x88, 2)) + (1000).to_bytes(2, "big")
RUN_STARTED = _event("RunStarted", {"run_id": "bench"})
RUN_CONTENT = _event("RunContent", {"run_id": "bench", "content": "x"})
RUN_COMPLETED = _event("RunCompleted", {"run_id": "bench", "content": "x"}) + b"0\r\n\r\n"
SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
)


def _json(status: str, body: object) -> bytes:
    data = json.dumps(body).encode()
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    ).encode() + data


SIGN_IN = _json("200 OK", {"access_token": "bench", "token_type": "bearer"})
HEALTH = _json("200 OK", {"status": "ok"})
AGENTS = _json("200 OK", [{"id": "bench", "name": "bench"}])
# AgenticOS's check that a token works (the kit reads the user's organisations once).
ORGS = _json("200 OK", {"items": [{"id": "00000000-0000-0000-0000-000000000000"}]})
NOT_FOUND = _json("404 Not Found", {"detail": "not found"})


class Connection(asyncio.Protocol):
    """One client connection: HTTP/1.1 requests, then (after an upgrade) WebSocket frames."""

    def __init__(self, server: Server):
        self._server = server
        self._buffer = bytearray()
        self._websocket = False
        self._transport: asyncio.Transport | None = None
        self._timers: list[asyncio.TimerHandle] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport's subclasses, only alike.
        self._transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        self._transport = None

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while self._transport is not None:
            done = self._frames() if self._websocket else self._request()
            if not done:
                return

    def _write(self, data: bytes) -> None:
        if self._transport is not None:
            self._transport.write(data)

    def _request(self) -> bool:
        """One whole request off the buffer, answered; False while it is incomplete."""
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > MAX_HEAD and self._transport is not None:
                self._transport.close()
            return False
        lines = bytes(self._buffer[:end]).decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        if len(self._buffer) < end + 4 + length:
            return False
        body = bytes(self._buffer[end + 4 : end + 4 + length])
        del self._buffer[: end + 4 + length]
        method, target = lines[0].split(" ", 2)[:2]
        path = target.partition("?")[0]
        if method == "GET" and path == "/api/v1/ws/agent":
            self._upgrade(headers)
        elif method == "POST" and path.startswith("/agents/") and path.endswith("/runs"):
            message = parse_qs(body.decode()).get("message", [""])[0]
            self._write(SSE_HEAD + RUN_STARTED)
            self._turn(message, RUN_CONTENT, RUN_COMPLETED)
        elif method == "POST" and path == "/api/v1/auth/login":
            self._write(SIGN_IN)
        elif path in ("/health", "/api/v1/health"):  # agno's health, and AgenticOS's
            self._write(HEALTH)
        elif path == "/api/v1/orgs":
            self._write(ORGS)
        elif path == "/agents":
            self._write(AGENTS)
        elif path == "/stats":
            self._write(_json("200 OK", self._server.stats()))
        else:
            self._write(NOT_FOUND)
        return True

    def _upgrade(self, headers: dict[str, str]) -> None:
        key = headers.get("sec-websocket-key", "").encode()
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest()).decode()
        offered = [p.strip() for p in headers.get("sec-websocket-protocol", "").split(",")]
        protocol = "Sec-WebSocket-Protocol: chat\r\n" if "chat" in offered else ""
        self._write(
            (
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Accept: {accept}\r\n{protocol}\r\n"
            ).encode()
        )
        self._websocket = True

    def _frames(self) -> bool:
        """One whole client frame off the buffer, acted on; False while it is incomplete."""
        buffer = self._buffer
        if len(buffer) < 2:
            return False
        opcode, length, at = buffer[0] & 0x0F, buffer[1] & 0x7F, 2
        if length == 126:
            if len(buffer) < 4:
                return False
            length, at = int.from_bytes(buffer[2:4], "big"), 4
        elif length == 127:
            if len(buffer) < 10:
                return False
            length, at = int.from_bytes(buffer[2:10], "big"), 10
        masked = buffer[1] & 0x80
        if len(buffer) < at + (4 if masked else 0) + length:
            return False
        payload = bytes(buffer[at + (4 if masked else 0) : at + (4 if masked else 0) + length])
        if masked:
            mask = (bytes(buffer[at : at + 4]) * (length // 4 + 1))[:length]
            payload = (int.from_bytes(payload, "big") ^ int.from_bytes(mask, "big")).to_bytes(
                length, "big"
            )
        del buffer[: at + (4 if masked else 0) + length]
        if opcode == 0x1:
            self._turn(payload.decode(), DELTA, COMPLETE + CLOSE)
        elif opcode == 0x9:
            self._write(bytes((0x8A, len(payload))) + payload)
        elif opcode == 0x8 and self._transport is not None:
            # The client's close (or its answer to ours): the turn is over.
            self._transport.close()
        return True

    def _turn(self, text: str, token: bytes, end: bytes) -> None:
        """The turn's tokens, the first FIRST_TOKEN_MS after its message (``text``) was
        received, each a timer of its own; when the first left is noted under the turn's
        index, and ``end`` follows the last."""
        received = time.monotonic()
        loop = asyncio.get_running_loop()
        match = INDEX.search(text)
        index = int(match.group(1)) if match else None
        self._timers.clear()
        for n in range(TOKENS):
            due = received + self._server.first_s + n * TOKEN_MS / 1000
            self._timers.append(
                loop.call_later(
                    max(0.0, due - time.monotonic()),
                    self._token,
                    received,
                    index if n == 0 else None,
                    token + (end if n == TOKENS - 1 else b""),
                )
            )

    def _token(self, received: float, index: int | None, data: bytes) -> None:
        if index is not None:
            self._server.turns[index] = (received, time.monotonic())
        self._write(data)


async def serve(port: int, first_token_ms: float, collector: str) -> None:
    """Serve 127.0.0.1:``port`` until cancelled."""
    server = Server(first_token_ms)
    gc.callbacks.append(server.time_collections)
    if collector == "off":
        gc.collect()
        gc.freeze()
        gc.disable()
    loop = asyncio.get_running_loop()
    listening = await loop.create_server(
        lambda: Connection(server), "127.0.0.1", port, backlog=4096, reuse_address=True
    )
    async with listening:
        await listening.serve_forever()


if __name__ == "__main__":
    uvloop.install()
    asyncio.run(
        serve(
            int(sys.argv[1]),
            float(sys.argv[2]) if len(sys.argv) > 2 else FIRST_TOKEN_MS,
            sys.argv[3] if len(sys.argv) > 3 else "off",
        )
    )
