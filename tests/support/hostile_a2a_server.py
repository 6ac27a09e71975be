"""A misbehaving A2A server, JSON-RPC 1.0 as a2a-sdk 1.3.0 serves it, counting what it injects.

It serves an agent card and the five methods the kit's A2A dialect calls
(SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask), and answers
each message as a script chosen by the arrival index in the kit's marker
(``<loadkit>{"arrival": K, ...}</loadkit>`` in the user's text): a streamed
message by ``STREAM_CASES[K % len(STREAM_CASES)]``, a blocking one by
``SEND_CASES[K % len(SEND_CASES)]``. So one run of many arrivals meets every
case, and a test knows from each sample's index which case it met and can
compare the failures the client recorded with what the server says it did, one
for one. The events are spelled as a2a-sdk 1.3.0 spells them under 1.0 names
(platforms/a2a/WIRE.md): ``data:`` lines only, each a JSON-RPC envelope whose
result is a ``task``, ``statusUpdate`` or ``artifactUpdate``.

Streamed cases: a good turn (submitted, working, artifact text deltas, the closing
empty chunk, completed; a cancel while it streams ends it ``canceled``, for the
stream and GetTask); a state after a terminal one (completed then working); a
stream that closes mid-answer without a terminal state; an SSE ``event: error``;
a task failing mid-answer, rejected, or asking for input, each with a status
message; a JSON-RPC error inside the stream; a bad frame; a task the server
cancelled itself; one JSON body instead of a stream, a -32004 error or the task
(a card that says streaming and a server that does not stream). Cancel cases,
each a good turn when nobody cancels it: a cancel answered canceled and not
carried out (the stream and GetTask go on to completed), a task completed before
the kit can ask (CancelTask answers -32002, GetTask completed), a cancel refused
(-32001). Blocking sends: a completed task, a failed one, -32001, -32009, and an
HTTP 500 with no JSON-RPC body.

A fault's task is past cancelling from its first event (GetTask says it failed,
was rejected...), so a cancel the kit asks of one after its first text (the faults
that break mid-answer send ``TOKENS_BEFORE`` deltas first) is answered -32002, as
a2a-sdk answers a cancel of a finished task: too late, which leaves the turn as the
fault ended it, whether or not the kit cancelled.

    python -m tests.support.hostile_a2a_server [--card MODE]

prints ``PORT CONTROL_PORT`` once both listen on 127.0.0.1. MODE says what the
card and the routes are: ``open`` (JSON-RPC 1.0 at ``/``, streaming, no
security), ``key`` (the same card declaring a bearer scheme; every A2A request
needs ``Authorization: Bearer PASSWORD``), ``guarded`` (the key needed for the
card too, which declares none: agno's and LangGraph's way), ``none`` (no card at
either well-known path), ``v2`` (the one interface at protocol version 2.0).
CONTROL_PORT answers with the counts as JSON: each case begun by its name;
``completed`` and ``cancelled`` (good turns that completed, or that a cancel
stopped), ``ignored`` (cancels answered canceled and not carried out),
``too_late`` (cancels answered -32002), ``refused_cancel`` (-32001), ``got``,
``listed``, ``card``; and what the kit must never cause: ``refused_auth`` (a
wrong or missing key), ``bad_request`` (no ``A2A-Version: 1.0``, a wrong Accept,
a message not of 1.0's shape, or no marker).
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from protocol.marker import read_marker
from tests.support.counting_server import serve

# The key of the ``key`` and ``guarded`` modes: a test value, not a secret.
PASSWORD = "hostile-a2a-key"
MODES = ("open", "key", "guarded", "none", "v2")
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")

# Streamed messages' scripts, by arrival index: good turns among the faults, and each
# cancel case once. Eighteen, so that from one arrival of a case to its next the kit's
# cancel sequence (frac(k(sqrt 2 - 1)), engine/mix.py) moves by about 0.46: at a cancel
# share of one half, a case's turns alternate between cancelled and not, and a short run
# meets every case both ways (a length such as 17 moves it by 0.04, and a case's turns
# are then all cancelled or all not).
STREAM_CASES = (
    "good",
    "backwards",
    "stream_ended",
    "cancel_ignored",
    "error_event",
    "failed",
    "good",
    "rejected",
    "cancel_late",
    "input_required",
    "rpc_error",
    "not_streamed",
    "good",
    "bad_frame",
    "cancel_refused",
    "not_streamed_task",
    "canceled_unasked",
    "good",
)
# Blocking messages' answers, by arrival index.
SEND_CASES = ("send_completed", "send_failed", "send_not_found", "send_version", "send_500")
# Cases that stream text and honour (or answer) a cancel; the rest are faults.
CANCEL_CASES = ("good", "cancel_ignored", "cancel_late", "cancel_refused")
# A good turn's text deltas and the gap between them: a cancel sent on the first has the
# rest of the turn (~0.5 s) to arrive, and a late one is counted (too_late), not lost.
GOOD_TOKENS = 6
TOKEN_GAP_S = 0.1
# Text deltas a fault sends before it breaks (mid-answer); the others break before any.
TOKENS_BEFORE = {
    "backwards": 2,
    "stream_ended": 3,
    "error_event": 2,
    "failed": 2,
    "rpc_error": 2,
    "bad_frame": 2,
    "canceled_unasked": 2,
}
# The state GetTask gives a fault's task, from its first event on: past cancelling.
FAULT_STATES = {
    "rejected": "rejected",
    "input_required": "input-required",
    "canceled_unasked": "canceled",
    "backwards": "completed",
}
TOKEN = "tok "
# The server's words, as the tests expect them back in the samples.
FAILED_SAYS = "hostile model failure: upstream 503"
REJECTED_SAYS = "hostile policy refused the request"
INPUT_SAYS = "which city do you mean?"
ERROR_EVENT_SAYS = "hostile stream failure"
INTERNAL_SAYS = "hostile internal error"
NOT_FOUND_SAYS = "Task not found"
NOT_CANCELABLE_SAYS = "Task cannot be canceled"
UNSUPPORTED_SAYS = "Streaming is not supported"
VERSION_SAYS = "A2A version 1.0 is not supported by this handler"
TOOL_FAILED_SAYS = "hostile tool failure"
NOT_JSON = b"<html>502 Bad Gateway</html>"
# The method names of 1.0, the line the kit must speak to this card.
V1_METHODS = ("SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask")


def enum(state: str) -> str:
    """A state in 1.0's spelling: ``input-required`` is ``TASK_STATE_INPUT_REQUIRED``."""
    return "TASK_STATE_" + state.upper().replace("-", "_")


@dataclass
class Task:
    """One task the server made: its script, its state as GetTask tells it, and the cancel."""

    id: str
    context_id: str
    case: str
    state: str
    cancel: threading.Event = field(default_factory=threading.Event)

    def as_json(self, state: str | None = None, said: str = "") -> dict[str, Any]:
        status: dict[str, Any] = {"state": enum(state or self.state)}
        if said:
            status["message"] = agent_message(said, self)
        return {"id": self.id, "contextId": self.context_id, "status": status}


def agent_message(text: str, task: Task) -> dict[str, Any]:
    return {
        "role": "ROLE_AGENT",
        "parts": [{"text": text}],
        "messageId": uuid.uuid4().hex,
        "taskId": task.id,
        "contextId": task.context_id,
    }


class State:
    """The tasks made so far and what the server did; shared by connection threads."""

    def __init__(self, mode: str):
        self.mode = mode
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.tasks: dict[str, Task] = {}

    def add(self, name: str) -> None:
        with self.lock:
            self.counts[name] += 1

    def new_task(self, case: str, context_id: str | None, state: str) -> Task:
        task = Task(uuid.uuid4().hex, context_id or uuid.uuid4().hex, case, state)
        with self.lock:
            self.tasks[task.id] = task
            self.counts[case] += 1
        return task

    def snapshot(self) -> dict:
        with self.lock:
            return dict(self.counts)


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


def _answer(conn: socket.socket, status: str, body: bytes, kind: str = "application/json") -> None:
    head = f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n\r\n"
    conn.sendall(head.encode() + body)


def _rpc(conn: socket.socket, rpc_id: object, result: object) -> None:
    _answer(conn, "200 OK", json.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": result}).encode())


def _rpc_error(conn: socket.socket, rpc_id: object, code: int, message: str) -> None:
    error = {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": code, "message": message}}
    _answer(conn, "200 OK", json.dumps(error).encode())


# --- the card ---------------------------------------------------------------------------


def card(mode: str, host: str) -> dict[str, Any]:
    """The agent card for ``mode``, naming the server by the Host it was asked with."""
    version = "2.0" if mode == "v2" else "1.0"
    described: dict[str, Any] = {
        "name": "hostile agent",
        "description": "breaks turns on purpose",
        "version": "0.0.1",
        "supportedInterfaces": [
            {"url": f"http://{host}/", "protocolBinding": "JSONRPC", "protocolVersion": version}
        ],
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    }
    if mode == "key":
        described["securitySchemes"] = {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}
        described["securityRequirements"] = [{"schemes": {"bearer": {"list": []}}}]
    return described


# --- a streamed message -----------------------------------------------------------------


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class Stream:
    """One streamed answer: each event a chunk of the body, each ``data`` a JSON-RPC envelope."""

    def __init__(self, conn: socket.socket, rpc_id: object, task: Task):
        self.conn, self.rpc_id, self.task = conn, rpc_id, task
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-store\r\nTransfer-Encoding: chunked\r\n\r\n"
        )

    def raw(self, event: bytes) -> None:
        self.conn.sendall(_chunk(event))

    def result(self, result: dict[str, Any]) -> None:
        envelope = {"jsonrpc": "2.0", "id": self.rpc_id, "result": result}
        self.raw(b"data: " + json.dumps(envelope).encode() + b"\n\n")

    def submitted(self, user: dict[str, Any]) -> None:
        self.result({"task": {**self.task.as_json("submitted"), "history": [user]}})

    def status(self, state: str, said: str = "") -> None:
        task = self.task
        status = task.as_json(state, said)["status"]
        self.result(
            {"statusUpdate": {"taskId": task.id, "contextId": task.context_id, "status": status}}
        )

    def text(self, text: str, last: bool = False) -> None:
        task = self.task
        update: dict[str, Any] = {
            "taskId": task.id,
            "contextId": task.context_id,
            "artifact": {"artifactId": "answer", "name": "answer", "parts": [{"text": text}]},
            "append": True,
        }
        if last:
            update["lastChunk"] = True
        self.result({"artifactUpdate": update})

    def end(self) -> None:
        self.conn.sendall(b"0\r\n\r\n")


def _streamed(conn: socket.socket, rpc_id: object, k: int, message: dict, state: State) -> None:
    """One streamed message, scripted by its arrival index."""
    case = STREAM_CASES[k % len(STREAM_CASES)]
    if case == "not_streamed":
        # a2a-sdk with streaming off: the card still says streaming, the answer is one body.
        state.add(case)
        _rpc_error(conn, rpc_id, -32004, UNSUPPORTED_SAYS)
        return
    if case in CANCEL_CASES:
        # cancel_late's task is completed before the kit can ask to cancel it.
        first = "completed" if case == "cancel_late" else "working"
    else:
        first = FAULT_STATES.get(case, "failed")
    task = state.new_task(case, message.get("contextId"), first)
    if case == "not_streamed_task":
        # A server that answers a streamed message as a blocking one: the task, as JSON.
        _rpc(conn, rpc_id, {"task": task.as_json("completed")})
        return
    stream = Stream(conn, rpc_id, task)
    stream.submitted(message)
    if case == "rejected":
        stream.status("rejected", REJECTED_SAYS)
        stream.end()
        return
    stream.status("working")
    if case in CANCEL_CASES:
        _answered(stream, state)
        return
    for _ in range(TOKENS_BEFORE.get(case, 0)):
        stream.text(TOKEN)
    if case == "backwards":
        stream.status("completed")
        stream.status("working")
    elif case == "error_event":
        stream.raw(b"event: error\ndata: " + ERROR_EVENT_SAYS.encode() + b"\n\n")
    elif case == "rpc_error":
        error = {"code": -32603, "message": INTERNAL_SAYS}
        envelope = {"jsonrpc": "2.0", "id": rpc_id, "error": error}
        stream.raw(b"data: " + json.dumps(envelope).encode() + b"\n\n")
    elif case == "bad_frame":
        stream.raw(b"data: " + NOT_JSON + b"\n\n")
    elif case == "failed":
        stream.status("failed", FAILED_SAYS)
    elif case == "input_required":
        stream.status("input-required", INPUT_SAYS)
    elif case == "canceled_unasked":
        stream.status("canceled")
    # stream_ended: the body ends here, in good order, without a terminal state.
    stream.end()


def _answered(stream: Stream, state: State) -> None:
    """A turn that answers in full: its text deltas, the closing empty chunk, completed; a good
    turn stops ``canceled`` when a cancel arrives while it streams. cancel_late's task was
    completed before its one delta, so nothing waits."""
    task = stream.task
    for _ in range(1 if task.case == "cancel_late" else GOOD_TOKENS):
        stream.text(TOKEN)
        if task.case == "cancel_late":
            continue
        # Wait out the gap, or less once a cancel arrived (cancel_ignored then hurries on).
        task.cancel.wait(TOKEN_GAP_S)
        with state.lock:
            if task.state == "canceled":
                break
    with state.lock:
        # A cancel accepted after the last look still stops it: the answer said canceled.
        cancelled = task.state == "canceled"
        if not cancelled:
            task.state = "completed"
            if task.case == "good":
                state.counts["completed"] += 1
    if cancelled:
        stream.status("canceled")
    else:
        stream.text("", last=True)
        stream.status("completed")
    stream.end()


# --- the other methods ------------------------------------------------------------------


def _sent(conn: socket.socket, rpc_id: object, k: int, message: dict, state: State) -> None:
    """One blocking message, answered as its arrival index says."""
    case = SEND_CASES[k % len(SEND_CASES)]
    if case == "send_not_found":
        state.add(case)
        _rpc_error(conn, rpc_id, -32001, NOT_FOUND_SAYS)
    elif case == "send_version":
        state.add(case)
        _rpc_error(conn, rpc_id, -32009, VERSION_SAYS)
    elif case == "send_500":
        state.add(case)
        _answer(conn, "500 Internal Server Error", b"Internal Server Error", "text/plain")
    elif case == "send_failed":
        task = state.new_task(case, message.get("contextId"), "failed")
        _rpc(conn, rpc_id, {"task": task.as_json(said=TOOL_FAILED_SAYS)})
    else:
        task = state.new_task(case, message.get("contextId"), "completed")
        artifact = {"artifactId": "answer", "name": "answer", "parts": [{"text": TOKEN * 3}]}
        _rpc(conn, rpc_id, {"task": {**task.as_json(), "artifacts": [artifact]}})


def _cancelled(conn: socket.socket, rpc_id: object, task_id: str, state: State) -> None:
    """CancelTask, as each case answers it."""
    with state.lock:
        task = state.tasks.get(task_id)
        if task is None or task.case == "cancel_refused":
            answer = "refused_cancel"
        elif task.case == "cancel_ignored":
            answer = "ignored"
        elif task.state == "working":
            task.state, answer = "canceled", "cancelled"
        else:
            answer = "too_late"
        state.counts[answer] += 1
    if answer == "refused_cancel":
        _rpc_error(conn, rpc_id, -32001, NOT_FOUND_SAYS)
        return
    if answer == "too_late":
        _rpc_error(conn, rpc_id, -32002, NOT_CANCELABLE_SAYS)
        return
    task.cancel.set()
    # cancel_ignored: canceled, says the answer; the task goes on to completed.
    _rpc(conn, rpc_id, task.as_json("canceled"))


def _got(conn: socket.socket, rpc_id: object, task_id: str, state: State) -> None:
    with state.lock:
        task = state.tasks.get(task_id)
        state.counts["got"] += 1
        answer = task.as_json() if task is not None else None
    if answer is None:
        _rpc_error(conn, rpc_id, -32001, NOT_FOUND_SAYS)
    else:
        _rpc(conn, rpc_id, answer)


def _listed(conn: socket.socket, rpc_id: object, size: int, state: State) -> None:
    with state.lock:
        tasks = [task.as_json() for task in list(state.tasks.values())[-size:]]
        state.counts["listed"] += 1
        total = len(state.tasks)
    _rpc(conn, rpc_id, {"tasks": tasks, "nextPageToken": "", "pageSize": size, "totalSize": total})


def _marked(message: dict) -> int | None:
    """The arrival index in a 1.0 user message's marker; None for a message not so shaped."""
    parts = message.get("parts")
    if message.get("role") != "ROLE_USER" or not message.get("messageId"):
        return None
    if not isinstance(parts, list) or any("kind" in p for p in parts):
        return None
    marker = read_marker("".join(str(p.get("text") or "") for p in parts))
    return marker.arrival if marker is not None else None


def _rpc_call(conn: socket.socket, request: Request, state: State) -> None:
    """One JSON-RPC request at ``/``: checked as a 1.0 client must send it, then answered."""
    try:
        body = json.loads(request.body)
        method, rpc_id, params = body["method"], body.get("id"), body.get("params") or {}
    except (ValueError, KeyError, TypeError):
        state.add("bad_request")
        _rpc_error(conn, None, -32700, "Parse error")
        return
    if request.headers.get("a2a-version") != "1.0" or method not in V1_METHODS:
        state.add("bad_request")
        _rpc_error(conn, rpc_id, -32009, "version not supported")
        return
    stream = method == "SendStreamingMessage"
    accept = "text/event-stream" if stream else "application/json"
    if accept not in request.headers.get("accept", ""):
        state.add("bad_request")
        _rpc_error(conn, rpc_id, -32600, f"Accept must include {accept}")
        return
    if method in ("SendMessage", "SendStreamingMessage"):
        message = params.get("message") or {}
        k = _marked(message)
        if k is None:
            state.add("bad_request")
            _rpc_error(conn, rpc_id, -32602, "a 1.0 user message with the kit's marker")
        elif stream:
            _streamed(conn, rpc_id, k, message, state)
        else:
            _sent(conn, rpc_id, k, message, state)
    elif method == "GetTask":
        _got(conn, rpc_id, str(params.get("id")), state)
    elif method == "CancelTask":
        _cancelled(conn, rpc_id, str(params.get("id")), state)
    else:
        _listed(conn, rpc_id, int(params.get("pageSize") or 50), state)


def _serve(conn: socket.socket, state: State) -> None:
    buf = b""
    try:
        while True:
            request, buf = _read_request(conn, buf)
            if request is None:
                return
            path = request.path.split("?")[0]
            keyed = request.headers.get("authorization") == f"Bearer {PASSWORD}"
            if path in CARD_PATHS and request.method == "GET":
                if state.mode == "none":
                    _answer(conn, "404 Not Found", b'{"detail": "Not Found"}')
                elif state.mode == "guarded" and not keyed:
                    state.add("refused_auth")
                    _answer(conn, "401 Unauthorized", b'{"detail": "Authorization required"}')
                else:
                    state.add("card")
                    host = request.headers.get("host", "127.0.0.1")
                    _answer(conn, "200 OK", json.dumps(card(state.mode, host)).encode())
            elif path != "/" or request.method != "POST":
                _answer(conn, "404 Not Found", b'{"detail": "Not Found"}')
            elif state.mode in ("key", "guarded") and not keyed:
                state.add("refused_auth")
                _answer(conn, "401 Unauthorized", b'{"detail": "Invalid or missing API key"}')
            else:
                _rpc_call(conn, request, state)
    except OSError:
        pass
    finally:
        conn.close()


def main() -> None:
    """Serve until killed; print both ports once listening."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--card", choices=MODES, default="open")
    state = State(parser.parse_args().card)
    serve(lambda conn: _serve(conn, state), state.snapshot)


if __name__ == "__main__":
    sys.exit(main())
