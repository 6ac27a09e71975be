"""A misbehaving chat server for both dialects' chat turns, counting every fault it injects.

It speaks enough AgenticOS (sign-in, the chat WebSocket), enough agno AgentOS
(the key check, streamed runs as server-sent events, run cancel) and enough
LangGraph Agent Server (the same three, its way) for each dialect's real
``chat_turn``, and breaks turns on a fixed cycle among good ones:
a connection closed before any answer, a refused handshake or run (500, 401), a
302 to elsewhere, an upgrade answered 101 with a wrong ``Sec-WebSocket-Accept`` or
answered 200 (AgenticOS only: agno's turn is no upgrade), a connection reset or
closed after a few tokens, a stream ended in good order
before its final frame, a frame that is not JSON, an error frame, a stop nobody
asked for, a turn that never sends a token.
Good turns honour a stop (a ``stop`` frame, the cancel endpoint) that arrives
while they stream. The server decides, so a test can compare the failures the
client recorded with the faults the server says it injected, one for one.

    python -m tests.support.hostile_chat_server

prints ``PORT CONTROL_PORT`` once both listen on 127.0.0.1. CONTROL_PORT answers
any request with the counts as JSON: one per kind of turn begun, ``completed``
and ``cancelled`` good turns, ``stop_late`` (a stop for a good turn that had
already completed), ``faults`` (their sum over FAULTS) and ``refused_auth`` (a
request with the wrong credential, never expected).
"""

from __future__ import annotations

import base64
import hashlib
import json
import select
import socket
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import count

from tests.support.counting_server import serve

# What the dialects sign in with; test values, not secrets.
PASSWORD = "hostile-password"
TOKEN = "hostile-token"
AGENT = "hostile-agent"
# Turns begin in this order, round and round: every fault once among good turns.
CYCLE = (
    "good",
    "refused_500",
    "reset",
    "good",
    "closed",
    "not_json",
    "good",
    "stream_ended",
    "error",
    "good",
    "stopped_unasked",
    "refused_401",
    "good",
    "silent",
    "dropped",
    "redirect",
    "bad_accept",
    "good",
    "not_upgraded",
)
# Faults of the WebSocket upgrade alone: an agno turn skips them in the cycle.
UPGRADE_ONLY = ("bad_accept", "not_upgraded")
FAULTS = (
    "dropped",
    "redirect",
    "bad_accept",
    "not_upgraded",
    "refused_500",
    "refused_401",
    "reset",
    "closed",
    "stream_ended",
    "not_json",
    "error",
    "stopped_unasked",
    "silent",
)
# A good turn's tokens and the gap between them: a stop sent on the first token has
# the rest of the turn (~0.7 s) to arrive, and a late one is counted, not lost.
GOOD_TOKENS = 8
TOKEN_GAP_S = 0.1
# Tokens a broken turn sends before it breaks; the others break before any.
TOKENS_BEFORE = {"reset": 3, "closed": 3, "stream_ended": 3, "error": 2}
# How long the server waits for a client to hang up after a turn (or for a silent
# turn's client to give up); longer than any test's timeout.
HANG_UP_S = 30.0
WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
WS_TEXT, WS_CLOSE = 0x1, 0x8
ERROR_MESSAGE = "hostile model failure"
ELSEWHERE = "https://chat.example/agent"
NOT_JSON = b"<html>502 Bad Gateway</html>"


class State:
    """What the server did, and the agno runs still streaming; shared by connection threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.turns = 0
        self.run_ids = count(1)
        # run id -> "streaming", "cancel" (asked while streaming), "done" or "fault"
        self.runs: dict[str, str] = {}
        # The runs a cancel stopped: a LangGraph run's status then reads "interrupted".
        self.interrupted: set[str] = set()

    def add(self, name: str) -> None:
        with self.lock:
            self.counts[name] += 1

    def next_turn(self, upgrade: bool) -> str:
        """The next kind of turn in the cycle; without an ``upgrade``, the next that applies."""
        with self.lock:
            while True:
                kind = CYCLE[self.turns % len(CYCLE)]
                self.turns += 1
                if upgrade or kind not in UPGRADE_ONLY:
                    break
            self.counts[kind] += 1
            return kind

    def snapshot(self) -> dict:
        with self.lock:
            counts = dict(self.counts)
        counts["faults"] = sum(counts.get(f, 0) for f in FAULTS)
        return counts


class Request:
    """One HTTP request: method, path, lower-cased headers, body."""

    def __init__(self, method: str, path: str, headers: dict[str, str], body: bytes):
        self.method, self.path, self.headers, self.body = method, path, headers, body


def _read_request(conn: socket.socket, buf: bytes) -> tuple[Request | None, bytes]:
    """One request and what followed it; None when the client hung up."""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return None, buf
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", 0))
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        rest += chunk
    return Request(method, path, headers, rest[:length]), rest[length:]


def _answer(conn: socket.socket, status: str, body: bytes, close: bool = False) -> None:
    extra = "Connection: close\r\n" if close else ""
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n{extra}\r\n"
    )
    conn.sendall(head.encode() + body)


def _reset(conn: socket.socket) -> None:
    """Close with an RST instead of a FIN."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def _hang_up(conn: socket.socket, state: State, on_stop=None) -> None:
    """Half-close, then read until the client hangs up (so its late writes are not met by an
    RST that would turn a clean close into a reset); each frame read goes to ``on_stop``."""
    try:
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        return
    _drain(conn, state, on_stop)


def _drain(conn: socket.socket, state: State, on_frame=None) -> None:
    conn.settimeout(HANG_UP_S)
    try:
        while True:
            if on_frame is None:
                if not conn.recv(65536):
                    return
                continue
            frame = _ws_read(conn)
            if frame is None or frame[0] == WS_CLOSE:
                return
            on_frame(frame)
    except OSError:
        return


# --- the AgenticOS side: sign-in and the chat WebSocket --------------------------------


def _ws_frame(opcode: int, payload: bytes) -> bytes:
    size = len(payload)
    if size < 126:
        head = struct.pack("!BB", 0x80 | opcode, size)
    elif size < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 126, size)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, size)
    return head + payload


def _ws_send(conn: socket.socket, kind: str, data: dict | None = None) -> None:
    conn.sendall(_ws_frame(WS_TEXT, json.dumps({"type": kind, "data": data or {}}).encode()))


def _recv_exactly(conn: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _ws_read(conn: socket.socket) -> tuple[int, bytes] | None:
    """One client frame (opcode, unmasked payload); None at EOF."""
    head = _recv_exactly(conn, 2)
    if head is None:
        return None
    opcode, size = head[0] & 0x0F, head[1] & 0x7F
    if size == 126:
        size = struct.unpack("!H", _recv_exactly(conn, 2) or b"\0\0")[0]
    elif size == 127:
        size = struct.unpack("!Q", _recv_exactly(conn, 8) or b"\0" * 8)[0]
    mask = _recv_exactly(conn, 4) if head[1] & 0x80 else b"\0\0\0\0"
    payload = _recv_exactly(conn, size) if size else b""
    if mask is None or payload is None:
        return None
    return opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def _is_stop(frame: tuple[int, bytes]) -> bool:
    try:
        return frame[0] == WS_TEXT and json.loads(frame[1]).get("type") == "stop"
    except (ValueError, AttributeError):
        return False


def _redirect(conn: socket.socket) -> None:
    head = f"HTTP/1.1 302 Found\r\nLocation: {ELSEWHERE}\r\nContent-Length: 0\r\n"
    conn.sendall(head.encode() + b"Connection: close\r\n\r\n")


def _login(conn: socket.socket, request: Request, state: State) -> None:
    if f"password={PASSWORD}" not in request.body.decode():
        state.add("refused_auth")
        _answer(conn, "401 Unauthorized", b'{"detail": "bad credentials"}')
        return
    _answer(conn, "200 OK", json.dumps({"access_token": TOKEN}).encode())


def _websocket(conn: socket.socket, request: Request, state: State) -> None:
    """One chat turn on the WebSocket, good or broken as the cycle says."""
    if f"access_token.{TOKEN}" not in request.headers.get("sec-websocket-protocol", ""):
        state.add("refused_auth")
        _answer(conn, "403 Forbidden", b"{}", close=True)
        return
    kind = state.next_turn(upgrade=True)
    if kind == "dropped":
        conn.shutdown(socket.SHUT_RDWR)
        return
    if kind == "redirect":
        _redirect(conn)
        return
    if kind == "not_upgraded":
        _answer(conn, "200 OK", b'{"status": "ok"}', close=True)
        return
    if kind in ("refused_500", "refused_401"):
        status, code, message = (
            ("500 Internal Server Error", "internal_error", "hostile refusal")
            if kind == "refused_500"
            else ("401 Unauthorized", "unauthorized", "token expired")
        )
        body = json.dumps({"error": {"code": code, "message": message}}).encode()
        _answer(conn, status, body, close=True)
        return
    key = request.headers["sec-websocket-key"].encode()
    if kind == "bad_accept":
        key = key[::-1]  # an accept token for some other key
    accept = base64.b64encode(hashlib.sha1(key + WS_GUID).digest())
    conn.sendall(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept + b"\r\nSec-WebSocket-Protocol: chat\r\n\r\n"
    )
    if kind == "bad_accept":
        # A client that checks the token never sends its turn; wait for it to go.
        _drain(conn, state)
        return
    if _ws_read(conn) is None:  # the turn's message
        return
    _ws_send(conn, "conversation_created", {"conversation_id": "hostile-conversation"})
    if kind == "good":
        _ws_good_turn(conn, state)
        return
    for _ in range(TOKENS_BEFORE.get(kind, 0)):
        _ws_send(conn, "text_delta", {"content": "tok "})
    if kind == "reset":
        _reset(conn)
        return
    if kind == "stream_ended":
        conn.sendall(_ws_frame(WS_CLOSE, struct.pack("!H", 1011) + b"hostile close"))
    elif kind == "not_json":
        conn.sendall(_ws_frame(WS_TEXT, NOT_JSON))
    elif kind == "error":
        _ws_send(conn, "error", {"message": ERROR_MESSAGE})
    elif kind == "stopped_unasked":
        _ws_send(conn, "complete", {"conversation_id": "hostile-conversation", "stopped": True})
    elif kind == "silent":
        _drain(conn, state, on_frame=lambda frame: None)
        return
    _hang_up(conn, state, on_stop=lambda frame: None)


def _ws_good_turn(conn: socket.socket, state: State) -> None:
    """Tokens until done or a stop arrives; then wait for the client to hang up."""
    stopped = False
    for _ in range(GOOD_TOKENS):
        _ws_send(conn, "text_delta", {"content": "tok "})
        readable, _, _ = select.select([conn], [], [], TOKEN_GAP_S)
        if readable:
            frame = _ws_read(conn)
            if frame is None:
                return
            if _is_stop(frame):
                stopped = True
                break
    data = {"conversation_id": "hostile-conversation", "stopped": stopped}
    _ws_send(conn, "complete", data)
    state.add("cancelled" if stopped else "completed")

    def late(frame: tuple[int, bytes]) -> None:
        if _is_stop(frame):
            state.add("stop_late")

    _drain(conn, state, on_frame=late)


# --- the streamed runs of agno and LangGraph: one fault cycle, each platform's spelling ----


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


@dataclass(frozen=True)
class Spelling:
    """How one platform spells a streamed run's parts, each event one chunk of the body."""

    # A refused key's body: what a wrong key gets, and the refused_401 fault.
    refused_401: bytes
    # The 200's head and the events before the first token, for a run id.
    opening: Callable[[str], bytes]
    # One token's event ("tok "), for a run id.
    token: Callable[[str], bytes]
    # An event whose data is not JSON.
    not_json: bytes
    # The error event, for a run id.
    error: Callable[[str], bytes]
    # What a stop nobody asked for looks like, for a run id.
    stopped_unasked: Callable[[str], bytes]
    # A good run's last events, for a run id and whether a cancel stopped it.
    ended: Callable[[str, bool], bytes]


def _streamed_run(conn: socket.socket, state: State, spelling: Spelling) -> bool:
    """One streamed run, good or broken as the cycle says; False when the connection must not
    be reused."""
    kind = state.next_turn(upgrade=False)
    if kind == "dropped":
        conn.shutdown(socket.SHUT_RDWR)
        return False
    if kind == "redirect":
        _redirect(conn)
        return False
    if kind == "refused_500":
        _answer(conn, "500 Internal Server Error", b'{"detail": "hostile refusal"}', close=True)
        return False
    if kind == "refused_401":
        _answer(conn, "401 Unauthorized", spelling.refused_401, close=True)
        return False
    run_id = f"run-{next(state.run_ids)}"
    with state.lock:
        state.runs[run_id] = "streaming" if kind == "good" else "fault"
    conn.sendall(spelling.opening(run_id))
    if kind == "good":
        _good_run(conn, state, run_id, spelling)
        return True
    for _ in range(TOKENS_BEFORE.get(kind, 0)):
        conn.sendall(spelling.token(run_id))
    if kind == "reset":
        _reset(conn)
        return False
    if kind in ("closed", "silent"):
        # closed: a FIN in the middle of the chunked body; silent: nothing until the client goes.
        if kind == "closed":
            _hang_up(conn, state)
        else:
            _drain(conn, state)
        return False
    if kind == "not_json":
        conn.sendall(spelling.not_json)
    elif kind == "error":
        conn.sendall(spelling.error(run_id))
    elif kind == "stopped_unasked":
        conn.sendall(spelling.stopped_unasked(run_id))
    conn.sendall(b"0\r\n\r\n")  # the body's end; for stream_ended, without a final event
    return True


def _good_run(conn: socket.socket, state: State, run_id: str, spelling: Spelling) -> None:
    """Tokens until done or a cancel arrives, then the run's end as the platform spells it."""
    for _ in range(GOOD_TOKENS):
        conn.sendall(spelling.token(run_id))
        time.sleep(TOKEN_GAP_S)
        with state.lock:
            if state.runs[run_id] == "cancel":
                break
    with state.lock:
        cancelled = state.runs[run_id] == "cancel"
        state.runs[run_id] = "done"
        state.counts["cancelled" if cancelled else "completed"] += 1
        if cancelled:
            state.interrupted.add(run_id)
    conn.sendall(spelling.ended(run_id, cancelled) + b"0\r\n\r\n")


def _cancel_asked(path: str, state: State) -> str | None:
    """Mark the run a cancel names (``.../runs/{id}/cancel``) to stop, when it still streams;
    count a cancel for one already done as late. The run's state before the cancel."""
    run_id = path.rstrip("/").split("/")[-2]
    with state.lock:
        now = state.runs.get(run_id)
        if now == "streaming":
            state.runs[run_id] = "cancel"
        elif now == "done":
            state.counts["stop_late"] += 1
    return now


# --- the agno side: the key check, streamed runs, run cancel ----------------------------


def _event(name: str, run_id: str, **fields) -> bytes:
    data = json.dumps({"event": name, "run_id": run_id, **fields})
    return _chunk(f"event: {name}\ndata: {data}\n\n".encode())


AGNO = Spelling(
    refused_401=b'{"detail": "Invalid authentication"}',
    opening=lambda run_id: (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
        + _event("RunStarted", run_id)
        # agno's first RunContent is the model's role-only delta: no text, not a token.
        + _event("RunContent", run_id, content="")
    ),
    token=lambda run_id: _event("RunContent", run_id, content="tok "),
    not_json=_chunk(b"event: RunContent\ndata: " + NOT_JSON + b"\n\n"),
    error=lambda run_id: _event("RunError", run_id, content=ERROR_MESSAGE),
    stopped_unasked=lambda run_id: _event("RunCancelled", run_id) + _event("RunCompleted", run_id),
    # agno sends RunCancelled and then RunCompleted for a cancelled run.
    ended=lambda run_id, cancelled: (
        (_event("RunCancelled", run_id) if cancelled else b"") + _event("RunCompleted", run_id)
    ),
)


def _keyed(request: Request) -> bool:
    return request.headers.get("authorization") == f"Bearer {PASSWORD}"


def _agno_cancel(conn: socket.socket, path: str, state: State) -> None:
    """Cancel is intent, answered 200 ``{}`` always, as agno does."""
    _cancel_asked(path, state)
    _answer(conn, "200 OK", b"{}")


# --- the LangGraph side: the key check, streamed runs on a thread, run cancel ------------

# The state a LangGraph run streams before its tokens (the input) and at its end (the answer).
LG_INPUT = {"messages": [{"type": "human", "content": "hostile turn"}]}
LG_ANSWER = {"messages": [*LG_INPUT["messages"], {"type": "ai", "content": "tok " * GOOD_TOKENS}]}


def _lg_event(name: str, data: object) -> bytes:
    """One event as langgraph-api writes it: CRLF line ends, one chunk."""
    return _chunk(f"event: {name}\r\ndata: {json.dumps(data)}\r\n\r\n".encode())


def _lg_token(content: str) -> bytes:
    return _lg_event("messages", [{"content": content, "type": "AIMessageChunk"}, {}])


LANGGRAPH = Spelling(
    refused_401=b'{"detail": "invalid x-api-key"}',
    opening=lambda run_id: (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
        + _lg_event("metadata", {"run_id": run_id, "attempt": 1})
        + _lg_event("values", LG_INPUT)
        # The model's first chunk carries no text: not a token.
        + _lg_token("")
    ),
    token=lambda run_id: _lg_token("tok "),
    not_json=_chunk(b"event: messages\r\ndata: " + NOT_JSON + b"\r\n\r\n"),
    error=lambda run_id: _lg_event("error", {"error": "HostileError", "message": ERROR_MESSAGE}),
    # LangGraph marks no stop: its stream just ends without the answer, as an unasked cancel
    # would leave it.
    stopped_unasked=lambda run_id: b"",
    # A cancelled run's stream ends with no further event; a completed one with the answer.
    ended=lambda run_id, cancelled: b"" if cancelled else _lg_event("values", LG_ANSWER),
)


def _langgraph_cancel(conn: socket.socket, path: str, state: State) -> None:
    """202 with no body for a run still going; 404 for one already finished, as the server."""
    if _cancel_asked(path, state) == "done":
        _answer(conn, "404 Not Found", b'{"detail": "No matching runs to cancel."}')
    else:
        conn.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")


def _langgraph_status(conn: socket.socket, path: str, state: State) -> None:
    """A run's status: interrupted when a cancel stopped it, else success (a fault run ended
    too, only its stream was broken)."""
    run_id = path.rstrip("/").split("/")[-1]
    with state.lock:
        status = "interrupted" if run_id in state.interrupted else "success"
    _answer(conn, "200 OK", json.dumps({"run_id": run_id, "status": status}).encode())


def _langgraph(conn: socket.socket, request: Request, path: str, state: State) -> bool:
    """One LangGraph request; False when the connection must not be reused."""
    if request.headers.get("x-api-key") != PASSWORD:
        state.add("refused_auth")
        _answer(conn, "401 Unauthorized", LANGGRAPH.refused_401)
    elif path == "/assistants/search":
        _answer(conn, "200 OK", json.dumps([{"graph_id": AGENT}]).encode())
    elif path.endswith("/cancel"):
        _langgraph_cancel(conn, path, state)
    elif path.endswith("/runs/stream"):
        return _streamed_run(conn, state, LANGGRAPH)
    elif request.method == "GET" and "/runs/" in path:
        _langgraph_status(conn, path, state)
    else:
        _answer(conn, "404 Not Found", b'{"detail": "Not Found"}')
    return True


def _serve(conn: socket.socket, state: State) -> None:
    buf = b""
    try:
        while True:
            request, buf = _read_request(conn, buf)
            if request is None:
                return
            path = request.path.split("?")[0]
            if path == "/api/v1/auth/login":
                _login(conn, request, state)
            elif path == "/api/v1/ws/agent":
                _websocket(conn, request, state)
                return
            elif path.startswith("/threads/") or path == "/assistants/search":
                if not _langgraph(conn, request, path, state):
                    return
            elif not _keyed(request):
                state.add("refused_auth")
                _answer(conn, "401 Unauthorized", AGNO.refused_401)
            elif path == "/agents":
                _answer(conn, "200 OK", json.dumps([{"id": AGENT}]).encode())
            elif path.endswith("/cancel"):
                _agno_cancel(conn, path, state)
            elif path == f"/agents/{AGENT}/runs":
                if not _streamed_run(conn, state, AGNO):
                    return
            else:
                _answer(conn, "404 Not Found", b'{"detail": "Not Found"}')
    except OSError:
        pass
    finally:
        conn.close()


def main() -> None:
    """Serve until killed; print both ports once listening."""
    state = State()
    serve(lambda conn: _serve(conn, state), state.snapshot)


if __name__ == "__main__":
    sys.exit(main())
