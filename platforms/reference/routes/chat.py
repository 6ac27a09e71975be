"""The chat WebSocket: one turn runs the agent's loop and streams it as AgenticOS does.

Each model call opens with ``model_request_start``; a tool call is a ``part_start``
(ToolCallPart) and its arguments' ``tool_call_delta`` pieces, then the step's
``call_tools_start``, a ``tool_call`` per call and, once they ran, a ``tool_result``
each; the answer is a ``part_start`` (TextPart) and its ``text_delta`` tokens, so a
turn's first token comes in its last step. Its tool calls are journalled with its
answer, at the end (/work/helpers/agenticos-tools.md).

The token arrives as a subprotocol (``["chat", "access_token.<token>"]``) and a
bad one is refused at the handshake with HTTP 403. A turn holds its database
session from the conversation lookup to the run's end, model stream included,
and gives it back before ``message_saved`` and ``complete``, as AgenticOS does
(its run session closes before it sends those frames). Sending them inside the
session would let a client that closes on ``complete`` have the socket's
cleanup cancel the turn while the pool rolls the connection back, and each
such close logged a ``CancelledError`` traceback. ``{"type": "stop"}`` cancels
the stream and ends the turn with ``complete`` carrying ``stopped: true``; a
provider failure ends it with an ``error`` frame. A turn that names no
conversation continues the one the socket's last turn was in, and
``conversation_created`` is sent only when the turn made one, as AgenticOS does.
Frame order follows shared/contract/agenticos-api.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.ext.asyncio import AsyncSession

from platforms.reference.deps import resolve_caller
from platforms.reference.errors import APIError, error_response
from platforms.reference.models import Agent, Conversation, Message, Run, ToolCallRow, utcnow
from platforms.reference.provider import Completion, ModelTarget, ProviderError, ToolCall, ToolDelta
from platforms.reference.runs import (
    ToolResult,
    abandon_run,
    agent_in_org,
    agent_loop,
    agent_tools,
    finish_run,
    model_target,
    prompt_messages,
    start_run,
)
from platforms.reference.state import AppState

log = logging.getLogger("platforms.reference")
router = APIRouter()

TOKEN_PREFIX = "access_token."
# Characters of the first message used as a new conversation's title.
TITLE_CHARS = 60


@dataclass(frozen=True)
class TurnRequest:
    """One client message that starts a turn."""

    message: str
    agent_id: str
    conversation_id: str | None


class TurnFailed(Exception):
    """The turn cannot go on; the message is sent as the ``error`` frame."""


class ChatSocket:
    """One accepted socket: sends frames one at a time, runs at most one turn at once."""

    def __init__(self, websocket: WebSocket, state: AppState, user_id: str, org_id: str) -> None:
        self.websocket = websocket
        self.state = state
        self.user_id = user_id
        self.org_id = org_id
        self._send_lock = asyncio.Lock()
        self.turn: asyncio.Task | None = None
        # True from a turn's start until just before its last frame, so a client
        # that answers that frame with a new message is never ignored.
        self.busy = False
        self.stop_requested = asyncio.Event()
        # The conversation this socket's last turn was in: a turn naming none continues it.
        self.conversation_id: str | None = None

    async def send(self, frame_type: str, **data: object) -> None:
        """Send one ``{"type", "data"}`` frame; the turn and the loop never interleave frames."""
        async with self._send_lock:
            await self.websocket.send_text(json.dumps({"type": frame_type, "data": data}))

    async def serve(self) -> None:
        """Read client messages until the socket closes; start turns and stop them."""
        try:
            while True:
                message = await self.websocket.receive_text()
                self.handle(message)
        except WebSocketDisconnect:
            pass
        finally:
            if self.turn is not None and not self.turn.done():
                self.turn.cancel()
                await asyncio.gather(self.turn, return_exceptions=True)

    def handle(self, text: str) -> None:
        """Act on one client message: a stop, a new turn, or something to ignore."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return
        if not isinstance(data, dict):
            return
        if data.get("type") == "stop":
            if self.busy:
                self.stop_requested.set()
            return
        if self.busy or "message" not in data:
            return
        self.busy = True
        self.stop_requested = asyncio.Event()
        self.turn = asyncio.create_task(self.run_turn(data))

    async def run_turn(self, data: dict) -> None:
        """One turn; any failure becomes an ``error`` frame instead of a dropped socket."""
        try:
            await self.stream_turn(_turn_request(data))
        except TurnFailed as exc:
            await self._report(str(exc))
        except PoolTimeoutError:
            await self._report("no database connection available (pool timeout)")
        except WebSocketDisconnect:
            return
        except Exception as exc:
            log.error("chat turn failed: %s: %s", type(exc).__name__, exc)
            await self._report("internal error")

    async def _report(self, message: str) -> None:
        """The turn's ``error`` frame, unless the client has already gone."""
        self.busy = False
        with contextlib.suppress(WebSocketDisconnect):
            await self.send("error", message=message)

    async def stream_turn(self, request: TurnRequest) -> None:
        """The turn proper: its work in one database session, its last two frames after it."""
        async with self.state.db.session() as session:
            saved_id, finish = await self._answer(session, request)
        await self.send("message_saved", message_id=saved_id)
        self.busy = False
        await self.send("complete", **finish)

    async def _answer(self, session: AsyncSession, request: TurnRequest) -> tuple[str, dict]:
        """Stream the answer and save it; (the saved message's id, ``complete``'s data)."""
        state = self.state
        try:
            agent = await _published_agent(session, self.org_id, request.agent_id)
        except APIError as exc:
            raise TurnFailed(exc.message) from None
        conversation, created = await self._conversation(session, request, agent.id)
        self.conversation_id = conversation.id
        if created:
            await self.send(
                "conversation_created", conversation_id=conversation.id, agent_id=agent.id
            )
        messages = await prompt_messages(session, agent, request.message, conversation.id)
        session.add(Message(conversation_id=conversation.id, role="user", content=request.message))
        conversation.updated_at = utcnow()
        await session.commit()
        await self.send("user_prompt", content=request.message)
        await self.send("user_prompt_processed")
        run = Run(
            org_id=self.org_id,
            agent_id=agent.id,
            user_id=self.user_id,
            conversation_id=conversation.id,
            source="chat",
            status="queued",
            prompt=request.message,
        )
        await start_run(session, run, state.counts)
        run_id = run.id
        try:
            target = await model_target(session, agent)
            tools = agent_tools(agent)
            completion, ran, stopped = await self._loop(target, messages, tools, run_id)
        except ProviderError as exc:
            await finish_run(session, run, state.counts, "failed", error=str(exc))
            raise TurnFailed(str(exc)) from None
        except BaseException:
            await abandon_run(session, run_id, state.counts)
            raise
        usage = {
            "input_tokens": completion.input_tokens,
            "output_tokens": completion.output_tokens,
            "total_tokens": completion.input_tokens + completion.output_tokens,
        }
        if not stopped:
            await self.send("final_result_start", tool_name=None)
            await self.send("call_tools_start")
            await self.send("final_result", output=completion.text)
        saved = Message(conversation_id=conversation.id, role="assistant", content=completion.text)
        session.add(saved)
        await session.flush()
        # The turn's tool calls are journalled with its answer, never per step (AgenticOS).
        session.add_all(
            ToolCallRow(
                message_id=saved.id,
                run_id=run_id,
                tool_call_id=r.call.id,
                tool_name=r.call.name,
                args=r.call.arguments,
                result=r.result,
                status="completed",
                duration_ms=r.duration_ms,
            )
            for r in ran
        )
        status = "stopped" if stopped else "completed"
        await finish_run(session, run, state.counts, status, completion)
        finish: dict[str, object] = {
            "conversation_id": conversation.id,
            "run_id": run.id,
            "usage": usage,
        }
        if stopped:
            finish["stopped"] = True
        return saved.id, finish

    async def _conversation(
        self, session: AsyncSession, request: TurnRequest, agent_id: str
    ) -> tuple[Conversation, bool]:
        """(the conversation, whether this turn created it): the named one (the caller's, in
        this organisation), else the one this socket's last turn was in, else a new one, as
        AgenticOS picks it."""
        wanted = request.conversation_id or self.conversation_id
        if wanted:
            conversation = await session.get(Conversation, wanted)
            if (
                conversation is None
                or conversation.org_id != self.org_id
                or conversation.user_id != self.user_id
            ):
                raise TurnFailed(f"conversation {wanted} not found")
            return conversation, False
        conversation = Conversation(
            org_id=self.org_id,
            agent_id=agent_id,
            user_id=self.user_id,
            title=request.message[:TITLE_CHARS],
        )
        session.add(conversation)
        await session.commit()
        return conversation, True

    async def _loop(
        self, target: ModelTarget, messages: list[dict], tools: list[dict], run_id: str
    ) -> tuple[Completion, list[ToolResult], bool]:
        """The agent's loop, each model call streamed, until its answer or a stop arrives:
        (the answer, or what of it came before the stop; the tools it ran; stopped)."""
        pieces: list[str] = []
        ran: list[ToolResult] = []

        async def step(grown: list[dict]) -> Completion:
            pieces.clear()
            return await self._model_call(target, grown, tools, run_id, pieces)

        async def tools_start(calls: list[ToolCall]) -> None:
            await self.send("call_tools_start")
            for call in calls:
                await self.send(
                    "tool_call",
                    tool_call_id=call.id,
                    tool_name=call.name,
                    args=_arguments(call.arguments),
                )

        async def tools_done(results: list[ToolResult]) -> None:
            ran.extend(results)
            for result in results:
                await self.send("tool_result", tool_call_id=result.call.id, content=result.result)

        loop = asyncio.create_task(agent_loop(step, messages, tools_start, tools_done))
        stop = asyncio.create_task(self.stop_requested.wait())
        try:
            await asyncio.wait({loop, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not loop.done():
                loop.cancel()
            await asyncio.gather(loop, stop, return_exceptions=True)
        if not loop.cancelled():
            completion, _ = loop.result()
            return completion, ran, False
        return Completion("".join(pieces), 0, len(pieces)), ran, True

    async def _model_call(
        self,
        target: ModelTarget,
        messages: list[dict],
        tools: list[dict],
        run_id: str,
        pieces: list[str],
    ) -> Completion:
        """One model call, streamed: a part per tool call and for the text, each piece relayed
        as it arrives (``tool_call_delta``, ``text_delta``), as AgenticOS frames them."""
        await self.send("model_request_start", run_id=run_id)
        calls: dict[int, dict[str, str]] = {}
        usage: dict = {}
        async for item in self.state.provider.stream(target, messages, tools):
            if isinstance(item, dict):
                usage.update(item)
            elif isinstance(item, ToolDelta):
                call = calls.get(item.index)
                if call is None:
                    call = calls[item.index] = {"id": "", "name": "", "arguments": ""}
                    await self.send("part_start", index=item.index, part_type="ToolCallPart")
                call["id"] = item.id or call["id"]
                call["name"] = item.name or call["name"]
                if item.arguments:
                    call["arguments"] += item.arguments
                    await self.send("tool_call_delta", index=item.index, args_delta=item.arguments)
            else:
                if not pieces:
                    await self.send("part_start", index=len(calls), part_type="TextPart")
                pieces.append(item)
                await self.send("text_delta", index=len(calls), content=item)
        return Completion(
            text="".join(pieces),
            input_tokens=int(usage.get("prompt_tokens", 0)),
            output_tokens=int(usage.get("completion_tokens", len(pieces))),
            tool_calls=[
                ToolCall(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items())
            ],
        )


def _arguments(arguments: str) -> object:
    """A call's arguments as the ``tool_call`` frame shows them: parsed, or as sent."""
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _turn_request(data: dict) -> TurnRequest:
    message, agent_id = data.get("message"), data.get("agent_id")
    conversation_id = data.get("conversation_id")
    if not isinstance(message, str) or not message.strip():
        raise TurnFailed("message: required, a non-empty string")
    if not isinstance(agent_id, str) or not agent_id:
        raise TurnFailed("agent_id: required, the agent's id")
    if conversation_id is not None and not isinstance(conversation_id, str):
        raise TurnFailed("conversation_id: must be a string or null")
    return TurnRequest(message, agent_id, conversation_id)


async def _published_agent(session: AsyncSession, org_id: str, agent_id: str) -> Agent:
    agent = await agent_in_org(session, org_id, agent_id)
    if agent.status != "published":
        raise APIError(400, f"agent {agent_id} is not published")
    return agent


def _offered_token(websocket: WebSocket) -> tuple[str | None, bool]:
    """(the token offered as ``access_token.<token>``, whether ``chat`` was offered)."""
    offered = websocket.scope.get("subprotocols") or []
    token = next((p[len(TOKEN_PREFIX) :] for p in offered if p.startswith(TOKEN_PREFIX)), None)
    return token, "chat" in offered


@router.websocket("/ws/agent")
async def chat(websocket: WebSocket, organization_id: str | None = None) -> None:
    """Authenticate at the handshake (403 if refused), then serve turns until the socket closes."""
    state: AppState = websocket.app.state.target
    token, wants_chat = _offered_token(websocket)
    try:
        async with state.db.session() as session:
            caller = await resolve_caller(session, state, token, organization_id)
    except APIError:
        await websocket.close(code=1008)
        return
    except PoolTimeoutError:
        await websocket.send_denial_response(
            error_response(500, "no database connection available (pool timeout)")
        )
        return
    await websocket.accept(subprotocol="chat" if wants_chat else None)
    state.counts.websockets_open += 1
    try:
        await ChatSocket(websocket, state, caller.user.id, caller.org.id).serve()
    finally:
        state.counts.websockets_open -= 1
