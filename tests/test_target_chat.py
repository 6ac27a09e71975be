"""The chat WebSocket: tokens streamed as they arrive, stop, model failure, handshake refusal.

A fast stub for whole turns and a slow one (250 ms between tokens) so that a
stop sent on the first token lands long before the answer would have ended.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import pytest
import websocket

from stack.processes import Server, free_port
from stack.reference_servers import FAST_STUB_TOKENS, stub_server, target_server
from tests.support.reference import make_agent, signed_in
from workloads.agenticos.client import AgenticOSClient
from workloads.agenticos.login import token_of

pytestmark = pytest.mark.system

# 40 tokens 250 ms apart: an unstopped answer takes ten seconds, a stop takes one frame.
SLOW_STUB = ("--first-token-ms", "50", "--token-ms", "250", "--tokens", "40")
SLOW_TOKENS = 40
# Seconds to wait for any one frame; generous for a busy machine, far below a hang.
FRAME_TIMEOUT_S = 15
# Sockets closed on `complete`: enough that a race hit by a third of turns cannot hide.
CLOSING_CLIENTS = 20
TURN_FRAMES = [
    "conversation_created",
    "user_prompt",
    "user_prompt_processed",
    "model_request_start",
    "part_start",
    *["text_delta"] * FAST_STUB_TOKENS,
    "final_result_start",
    "call_tools_start",
    "final_result",
    "message_saved",
    "complete",
]


@dataclass
class Chat:
    target: Server
    client: AgenticOSClient
    org_id: str
    fast_agent: str
    slow_agent: str
    dead_agent: str


@pytest.fixture(scope="module")
def chat(tmp_path_factory) -> Chat:
    logs = tmp_path_factory.mktemp("target_chat")
    with (
        stub_server(logs) as fast,
        stub_server(logs, *SLOW_STUB, name="slow_stub") as slow,
        target_server(logs, fast.url) as target,
    ):
        client = signed_in(target.url)
        org_id = next(o["id"] for o in client.get("/orgs")["items"] if o["is_personal"])
        _, fast_agent = make_agent(client, fast.url + "/v1")
        _, slow_agent = make_agent(client, slow.url + "/v1")
        _, dead_agent = make_agent(client, f"http://127.0.0.1:{free_port()}/v1")
        yield Chat(target, client, org_id, fast_agent, slow_agent, dead_agent)
        client.close()


def connect(chat: Chat, token: str | None = None) -> websocket.WebSocket:
    url = chat.target.url.replace("http://", "ws://") + "/api/v1/ws/agent"
    protocols = ["chat", f"access_token.{token or token_of(chat.client.auth)}"]
    return websocket.create_connection(
        f"{url}?organization_id={chat.org_id}", subprotocols=protocols, timeout=FRAME_TIMEOUT_S
    )


def start(ws: websocket.WebSocket, agent_id: str, conversation_id: str | None = None) -> None:
    turn = {"message": "hello", "agent_id": agent_id, "conversation_id": conversation_id}
    ws.send(json.dumps(turn))


def frames_until_end(ws: websocket.WebSocket, stop_on_first_token: bool = False) -> list[dict]:
    """Frames of one turn up to its ``complete`` or ``error``."""
    frames = []
    while True:
        frame = json.loads(ws.recv())
        frames.append(frame)
        if stop_on_first_token and frame["type"] == "text_delta" and len(frames_of(frames)) == 1:
            ws.send(json.dumps({"type": "stop"}))
        if frame["type"] in ("complete", "error"):
            return frames


def frames_of(frames: list[dict], kind: str = "text_delta") -> list[dict]:
    return [f for f in frames if f["type"] == kind]


def test_a_turn_streams_every_token_in_the_contract_order(chat):
    ws = connect(chat)
    try:
        assert ws.getsubprotocol() == "chat"
        start(ws, chat.fast_agent)
        frames = frames_until_end(ws)
        assert [f["type"] for f in frames] == TURN_FRAMES
        text = "".join(f["data"]["content"] for f in frames_of(frames))
        assert text == frames_of(frames, "final_result")[0]["data"]["output"]
        complete = frames[-1]["data"]
        assert complete["usage"]["output_tokens"] == FAST_STUB_TOKENS
        assert "stopped" not in complete
        conversation_id = complete["conversation_id"]
        start(ws, chat.fast_agent, conversation_id)
        again = frames_until_end(ws)
        assert again[-1]["type"] == "complete"
        assert again[-1]["data"]["conversation_id"] == conversation_id
    finally:
        ws.close()
    conversations = chat.client.get("/conversations", limit=100)["items"]
    assert conversation_id in [c["id"] for c in conversations]
    runs = [r for r in chat.client.get("/runs", limit=100)["items"] if r["surface"] == "web"]
    assert sum(r["conversation_id"] == conversation_id for r in runs) == 2


def test_stop_after_the_first_token_ends_with_stopped(chat):
    ws = connect(chat)
    try:
        start(ws, chat.slow_agent)
        began = time.monotonic()
        frames = frames_until_end(ws, stop_on_first_token=True)
        took = time.monotonic() - began
    finally:
        ws.close()
    assert frames[-1]["type"] == "complete"
    assert frames[-1]["data"]["stopped"] is True
    # The unstopped answer takes 10 s; a stop honoured within a few tokens ends far sooner.
    # Tolerance: 5 s leaves room for a busy machine while still failing an ignored stop.
    assert len(frames_of(frames)) < SLOW_TOKENS and took < 5
    run_id = frames[-1]["data"]["run_id"]
    runs = {r["id"]: r for r in chat.client.get("/runs", limit=100)["items"]}
    assert runs[run_id]["status"] == "stopped"


def test_a_message_during_a_turn_is_ignored(chat):
    ws = connect(chat)
    try:
        start(ws, chat.slow_agent)
        frames = []
        while not frames_of(frames):
            frames.append(json.loads(ws.recv()))
        start(ws, chat.fast_agent)
        ws.send(json.dumps({"type": "stop"}))
        frames += frames_until_end(ws)
        created = frames_of(frames, "conversation_created")
        assert len(created) == 1
        start(ws, chat.fast_agent)
        after = frames_until_end(ws)
        # A turn naming no conversation continues the socket's, as on AgenticOS: not created.
        assert [f["type"] for f in after] == TURN_FRAMES[1:]
        assert after[-1]["data"]["conversation_id"] == created[0]["data"]["conversation_id"]
    finally:
        ws.close()


def test_a_model_failure_ends_the_turn_with_an_error_frame(chat):
    ws = connect(chat)
    try:
        start(ws, chat.dead_agent)
        frames = frames_until_end(ws)
        assert frames[-1]["type"] == "error" and "unreachable" in frames[-1]["data"]["message"]
        assert not frames_of(frames, "complete")
        start(ws, chat.fast_agent)
        assert frames_until_end(ws)[-1]["type"] == "complete"
    finally:
        ws.close()


def test_clients_that_close_on_complete_leave_no_error_in_the_platforms_log(chat):
    # The turn gives its connection back before `complete`: closing on that frame once
    # cancelled the turn mid-rollback, and each such close logged a CancelledError traceback.
    for turn in range(CLOSING_CLIENTS):
        ws = connect(chat)
        try:
            start(ws, chat.fast_agent)
            frames = frames_until_end(ws, stop_on_first_token=turn % 2 == 1)
        finally:
            ws.close()
        assert frames[-1]["type"] == "complete"
    statuses = [r["status"] for r in chat.client.get("/runs", limit=100)["items"]]
    assert "stopped" in statuses and "completed" in statuses
    assert [line for line in chat.target.output().splitlines() if " ERROR " in line] == []


def test_a_bad_token_is_refused_at_the_handshake(chat):
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        connect(chat, token="forged.token")
    assert refused.value.status_code == 403
