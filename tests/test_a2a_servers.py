"""The a2a-sdk server (platforms/a2a) against the real stub, spoken to in plain HTTP.

Not the kit's A2A dialect: raw JSON-RPC and server-sent events over
http.client, so what is checked is the server, as an A2A client meets it. One
stub and one server (both versions, a bearer key) for the module, on free
loopback ports: the card says what is served and the auth; a streamed turn
carries its text as artifact chunks and ends ``completed`` after the tool loop
the marker asked for (the stub records its three model calls); a cancel
mid-answer ends the stream and the task ``canceled`` and the stub records the
model stream abandoned; and each single-version server (``--protocol``) serves
its version from its card and refuses the other's method names. The server runs
from its own environment, built by ``make a2a-venv`` (.ci/run builds it first);
the module skips, saying why, only when that cannot install.
"""

from __future__ import annotations

import csv
import http.client
import io
import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from protocol.marker import Marker, write_marker
from stack.local import PlatformUnavailable
from stack.own_venv import OwnVenv
from stack.processes import Server, free_port, running

pytestmark = [pytest.mark.system, pytest.mark.slow]

A2A = OwnVenv(
    name="a2a",
    called="the a2a-sdk server",
    described="the a2a-sdk 1.3.0 server (platforms/a2a/)",
    build="under a minute",
    key_env="A2A_API_KEY",
    env_prefix="A2A_",
    ready_path="/health",
    metrics=False,
)
# Only ever in this process's memory and the child's environment.
KEY = f"test-{uuid.uuid4().hex}"
# 20 tokens 20 ms apart: 0.4 s of answer after the first, so a cancel on the first lands
# mid-answer; tool-calling steps are quicker (a head and a few argument pieces).
STUB_ARGS = ("--first-token-ms", "50", "--token-ms", "20", "--tokens", "20")
# Reading a stream or waiting for the stub's record: well past the slowest turn here.
WAIT_S = 20.0


@contextmanager
def a2a_server(stub: Server, tmp_path, protocol: str, key: str | None) -> Iterator[Server]:
    """The launcher, as ``make a2a`` runs it, on a free port: ``--protocol``, the stub, a key."""
    try:
        python = A2A.interpreter()
    except PlatformUnavailable as exc:
        pytest.skip(f"the a2a-sdk server's environment cannot install here: {exc}")
    port = free_port()
    env = {"A2A_STUB_URL": stub.url, "A2A_API_KEY": key or ""}
    args = ["-m", "platforms.a2a", "--port", str(port), "--protocol", protocol]
    log = tmp_path / f"a2a-{protocol}.log"
    with running(args, "/health", port, log, env, python=python, ready_timeout=120) as server:
        yield server


@pytest.fixture(scope="module")
def stub(tmp_path_factory) -> Iterator[Server]:
    port = free_port()
    log = tmp_path_factory.mktemp("stub") / "stub.log"
    with running(["-m", "stub", "--port", str(port), *STUB_ARGS], "/health", port, log) as s:
        yield s


@pytest.fixture(scope="module")
def server(stub, tmp_path_factory) -> Iterator[Server]:
    with a2a_server(stub, tmp_path_factory.mktemp("a2a"), "both", KEY) as s:
        yield s


def connect(server: Server) -> http.client.HTTPConnection:
    host, port = server.url.removeprefix("http://").split(":")
    return http.client.HTTPConnection(host, int(port), timeout=WAIT_S)


def call(server: Server, method: str, params: dict, headers: dict | None = None) -> dict:
    """One JSON-RPC call at ``/``; the decoded answer (result or error)."""
    conn = connect(server)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    conn.request("POST", "/", body, {"Content-Type": "application/json", **(headers or {})})
    answer = conn.getresponse()
    assert answer.status == 200, answer.read()
    decoded = json.loads(answer.read())
    conn.close()
    return decoded


def v1(key: str = KEY) -> dict:
    return {"A2A-Version": "1.0", "Authorization": f"Bearer {key}"}


def message(text: str) -> dict:
    """A user message as 1.0 writes it."""
    return {"role": "ROLE_USER", "parts": [{"text": text}], "messageId": uuid.uuid4().hex}


def message_03(text: str) -> dict:
    """A user message as 0.3 writes it: lowercase role, ``kind`` discriminators."""
    return {
        "kind": "message",
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        "messageId": uuid.uuid4().hex,
    }


def get_card(server: Server) -> dict:
    conn = connect(server)
    conn.request("GET", "/.well-known/agent-card.json")
    card = json.loads(conn.getresponse().read())
    conn.close()
    return card


def stream(server: Server, text: str, on_event=None) -> list[dict]:
    """SendStreamingMessage; every event's ``result`` in order, read as it arrives until the
    server closes the stream. ``on_event(result)`` sees each one first."""
    conn = connect(server)
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendStreamingMessage",
            "params": {"message": message(text)},
        }
    )
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream", **v1()}
    conn.request("POST", "/", body, headers)
    answer = conn.getresponse()
    assert answer.status == 200
    assert answer.getheader("content-type", "").startswith("text/event-stream")
    results = []
    while line := answer.readline():
        if line.startswith(b"data:"):
            event = json.loads(line[5:])
            assert "result" in event, event
            results.append(event["result"])
            if on_event is not None:
                on_event(event["result"])
    conn.close()
    return results


def state_of(result: dict) -> str | None:
    for kind in ("task", "statusUpdate"):
        if kind in result:
            return result[kind]["status"]["state"]
    return None


def text_of(results: list[dict]) -> str:
    return "".join(
        part.get("text", "")
        for r in results
        if "artifactUpdate" in r
        for part in r["artifactUpdate"]["artifact"]["parts"]
    )


def stub_calls(stub: Server, run: str, arrival: int, rows: int) -> list[dict]:
    """The stub's per-call rows for one arrival, once ``rows`` of them are written (a row is
    written when its call ends), in step order."""
    deadline = time.monotonic() + WAIT_S
    while True:
        conn = connect(stub)
        conn.request("GET", f"/calls?run={run}")
        table = conn.getresponse().read().decode()
        conn.close()
        found = [r for r in csv.DictReader(io.StringIO(table)) if r["arrival"] == str(arrival)]
        if len(found) >= rows or time.monotonic() > deadline:
            return sorted(found, key=lambda r: int(r["step"]))
        time.sleep(0.05)


def test_the_card_names_every_interface_and_the_bearer_key_and_the_key_is_required(server):
    card = get_card(server)
    served = {(i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]}
    assert served == {
        ("JSONRPC", "1.0"),
        ("JSONRPC", "0.3"),
        ("HTTP+JSON", "1.0"),
        ("HTTP+JSON", "0.3"),
    }
    assert card["capabilities"]["streaming"] is True
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    for headers in ({"A2A-Version": "1.0"}, v1("not-the-key")):
        conn = connect(server)
        conn.request("POST", "/", "{}", {"Content-Type": "application/json", **headers})
        assert conn.getresponse().status == 401
        conn.close()


def test_a_streamed_turn_carries_text_and_ends_completed_after_the_marked_tool_loop(server, stub):
    run = f"a2a-test-{uuid.uuid4().hex[:8]}"
    results = stream(server, "hello " + write_marker(Marker(run=run, arrival=1, steps=3, tokens=5)))
    assert state_of(results[0]) == "TASK_STATE_SUBMITTED"
    assert state_of(results[-1]) == "TASK_STATE_COMPLETED"
    text_events = [r for r in results if "artifactUpdate" in r]
    assert len(text_events) >= 5 and text_of(results).strip()
    assert text_events[-1]["artifactUpdate"]["lastChunk"] is True
    calls = stub_calls(stub, run, 1, 3)
    assert [(c["step"], c["reply"], c["outcome"]) for c in calls] == [
        ("1", "tool_calls", "ok"),
        ("2", "tool_calls", "ok"),
        ("3", "answer", "ok"),
    ]


def test_a_cancel_mid_answer_ends_the_task_canceled_and_abandons_the_model_stream(server, stub):
    run = f"a2a-test-{uuid.uuid4().hex[:8]}"
    cancelled: dict = {}

    def cancel_on_first_text(result: dict) -> None:
        if "task" in result:
            cancelled["task"] = result["task"]["id"]
        if "artifactUpdate" in result and "thread" not in cancelled:
            task = cancelled["task"]
            cancelled["thread"] = threading.Thread(
                target=lambda: cancelled.update(
                    answer=call(server, "CancelTask", {"id": task}, v1())
                )
            )
            cancelled["thread"].start()

    results = stream(
        server, "stop me " + write_marker(Marker(run=run, arrival=1)), cancel_on_first_text
    )
    cancelled["thread"].join(WAIT_S)
    assert cancelled["answer"]["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert state_of(results[-1]) == "TASK_STATE_CANCELED"
    assert len([r for r in results if "artifactUpdate" in r]) < 20
    after = call(server, "GetTask", {"id": cancelled["task"]}, v1())
    assert after["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    [model_call] = stub_calls(stub, run, 1, 1)
    assert model_call["outcome"] == "abandoned"


def test_a_1_0_only_server_serves_1_0_from_its_card_and_refuses_the_0_3_names(stub, tmp_path):
    run = f"a2a-test-{uuid.uuid4().hex[:8]}"
    with a2a_server(stub, tmp_path, "1.0", None) as one:
        card = get_card(one)
        assert {i["protocolVersion"] for i in card["supportedInterfaces"]} == {"1.0"}
        assert "protocolVersion" not in card  # no 0.3 card fields
        text = "1.0 only " + write_marker(Marker(run=run, arrival=1))
        answered = call(one, "SendMessage", {"message": message(text)}, {"A2A-Version": "1.0"})
        assert answered["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answered
        refused = call(one, "message/send", {"message": message_03("x")})
        assert refused["error"]["code"] == -32601


def test_a_0_3_only_server_serves_0_3_from_its_card_and_refuses_the_1_0_names(stub, tmp_path):
    run = f"a2a-test-{uuid.uuid4().hex[:8]}"
    with a2a_server(stub, tmp_path, "0.3", None) as one:
        card = get_card(one)
        assert {i["protocolVersion"] for i in card["supportedInterfaces"]} == {"0.3"}
        assert (card["protocolVersion"], card["preferredTransport"]) == ("0.3", "JSONRPC")
        text = "0.3 only " + write_marker(Marker(run=run, arrival=1))
        answered = call(one, "message/send", {"message": message_03(text)})
        assert answered["result"]["status"]["state"] == "completed", answered
        refused = call(one, "SendMessage", {"message": message("x")}, {"A2A-Version": "1.0"})
        assert refused["error"]["code"] == -32601
