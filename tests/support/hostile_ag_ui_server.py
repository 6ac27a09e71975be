"""A misbehaving AG-UI server: each path answers a run one way, good or broken, and counts it.

It speaks AG-UI as the real servers do (a POST of RunAgentInput answered with chunked
``data:`` events, FastAPI's 404 and 422 bodies) and breaks runs on purpose, one kind of
break per path, so a test can send each kind one arrival through the dialect and compare
the failure it recorded with what the server says it did:

- ``/good``: agno's shape, every event a client must read past included: RUN_STARTED, a
  tool call wrapped in an empty TEXT_MESSAGE_START/END with its TOOL_CALL_RESULT, a
  STATE_DELTA (a JSON Patch list), an empty keep-alive delta, GOOD_TOKENS text deltas
  TOKEN_GAP_S apart, RAW and CUSTOM events, RUN_FINISHED. It counts ``completed``, or
  ``left`` when the client closed the stream before the end (a cancelled turn);
- ``/run-error``: two tokens, then RUN_ERROR with ERROR_MESSAGE and ERROR_CODE;
- ``/ended``: three tokens, then the body ends in good order without RUN_FINISHED;
- ``/bad-frame``: a ``data:`` line that is not JSON; ``/no-type``: a JSON object without ``type``;
- ``/no-text``: RUN_STARTED, then RUN_FINISHED; ``/unanswered``: a TOOL_CALL_START with no
  result, text, RUN_FINISHED; ``/interrupt``: text, then RUN_FINISHED with an interrupt outcome;
- ``/unprocessable``: FastAPI's 422 for a body missing threadId; ``/json``: a 200 JSON body;
- anything else: FastAPI's 404.

    python -m tests.support.hostile_ag_ui_server

prints ``PORT CONTROL_PORT`` once both listen on 127.0.0.1; CONTROL_PORT answers the counts
(one per path asked, ``completed``, ``left``) as JSON.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter

from tests.support.counting_server import serve
from tests.support.hostile_chat_server import Request, _read_request

GOOD_TOKENS = 6
# Long enough that a client closing at its first token leaves before the last.
TOKEN_GAP_S = 0.05
ERROR_MESSAGE = "hostile model failure"
ERROR_CODE = "hostile_code"
INTERRUPT_REASON = "approval"
TOOL = "lookup"
UNPROCESSABLE = {
    "detail": [{"type": "missing", "loc": ["body", "threadId"], "msg": "Field required"}]
}
PATHS = (
    "/good",
    "/run-error",
    "/ended",
    "/bad-frame",
    "/no-type",
    "/no-text",
    "/unanswered",
    "/interrupt",
    "/unprocessable",
    "/json",
)


class State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    def add(self, name: str) -> None:
        with self.lock:
            self.counts[name] += 1

    def snapshot(self) -> dict:
        with self.lock:
            return dict(self.counts)


def _whole(conn: socket.socket, status: str, body: object) -> None:
    data = json.dumps(body).encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    )
    conn.sendall(head.encode() + data)


class Events:
    """One run's answer, written as the servers write it: one chunk per ``data:`` event."""

    def __init__(self, conn: socket.socket, request: Request):
        self.conn = conn
        run = json.loads(request.body)
        self.thread, self.run = run["threadId"], run["runId"]
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )

    def raw(self, line: bytes) -> None:
        piece = line + b"\n\n"
        self.conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))

    def send(self, type_: str, **fields: object) -> None:
        self.raw(b"data: " + json.dumps({"type": type_, **fields}).encode())

    def started(self) -> None:
        self.send("RUN_STARTED", threadId=self.thread, runId=self.run)

    def text(self, tokens: int, gap_s: float = 0.0) -> None:
        self.send("TEXT_MESSAGE_START", messageId="m-text", role="assistant")
        for i in range(tokens):
            self.send("TEXT_MESSAGE_CONTENT", messageId="m-text", delta=f" word{i}")
            time.sleep(gap_s)
        self.send("TEXT_MESSAGE_END", messageId="m-text")

    def tool_call(self, answered: bool) -> None:
        self.send("TOOL_CALL_START", toolCallId="call-1", toolCallName=TOOL)
        self.send("TOOL_CALL_ARGS", toolCallId="call-1", delta='{"topic": "x"}')
        self.send("TOOL_CALL_END", toolCallId="call-1")
        if answered:
            self.send("TOOL_CALL_RESULT", messageId="t-1", toolCallId="call-1", content="x")

    def finished(self, **outcome: object) -> None:
        self.send("RUN_FINISHED", threadId=self.thread, runId=self.run, **outcome)

    def end(self) -> None:
        self.conn.sendall(b"0\r\n\r\n")


def _good(events: Events, state: State) -> None:
    events.started()
    events.send("TEXT_MESSAGE_START", messageId="m-tool", role="assistant")
    events.send("TEXT_MESSAGE_END", messageId="m-tool")
    events.tool_call(answered=True)
    events.send("STATE_DELTA", delta=[{"op": "add", "path": "/x", "value": 1}])
    events.send("TEXT_MESSAGE_START", messageId="m-text", role="assistant")
    events.send("TEXT_MESSAGE_CONTENT", messageId="m-text", delta="")
    try:
        for i in range(GOOD_TOKENS):
            events.send("TEXT_MESSAGE_CONTENT", messageId="m-text", delta=f" word{i}")
            time.sleep(TOKEN_GAP_S)
        events.send("TEXT_MESSAGE_END", messageId="m-text")
        events.send("RAW", event={"anything": [1, 2]}, source="hostile")
        events.send("CUSTOM", name="note", value={"k": "v"})
        events.finished()
        events.end()
    except OSError:
        state.add("left")
        raise
    state.add("completed")


def _answer(conn: socket.socket, request: Request, state: State) -> None:
    path = request.path
    state.add(path if path in PATHS else "other")
    if request.method != "POST" or path not in PATHS:
        _whole(conn, "404 Not Found", {"detail": "Not Found"})
        return
    if path == "/unprocessable":
        _whole(conn, "422 Unprocessable Entity", UNPROCESSABLE)
        return
    if path == "/json":
        _whole(conn, "200 OK", {"status": "ok"})
        return
    events = Events(conn, request)
    if path == "/good":
        _good(events, state)
        return
    events.started()
    if path == "/run-error":
        events.text(2)
        events.send("RUN_ERROR", message=ERROR_MESSAGE, code=ERROR_CODE)
    elif path == "/ended":
        events.text(3)
    elif path == "/bad-frame":
        events.raw(b"data: <html>502 Bad Gateway</html>")
    elif path == "/no-type":
        events.raw(b'data: {"delta": "no type"}')
    elif path == "/no-text":
        events.finished()
    elif path == "/unanswered":
        events.tool_call(answered=False)
        events.text(2)
        events.finished()
    elif path == "/interrupt":
        events.text(2)
        interrupt = {"type": "interrupt", "interrupts": [{"id": "i", "reason": INTERRUPT_REASON}]}
        events.finished(outcome=interrupt)
    events.end()


def _connection(conn: socket.socket, state: State) -> None:
    """Answer requests on one connection until the client hangs up (or leaves mid-answer)."""
    buf = b""
    with conn:
        try:
            while True:
                request, buf = _read_request(conn, buf)
                if request is None:
                    return
                _answer(conn, request, state)
        except OSError:
            return


def main() -> None:
    state = State()
    serve(lambda conn: _connection(conn, state), state.snapshot)


if __name__ == "__main__":
    main()
