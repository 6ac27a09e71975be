"""The agent: a function-tool loop on the stub, streamed into an A2A task through TaskUpdater.

What runs per turn, as a2a-sdk's ``AgentExecutor`` contract has it: the task is
enqueued (``submitted``, the user's message in its history), then ``working``;
the conversation goes to the model (the official ``openai`` SDK against the
stub's Chat Completions, streamed) with one tool offered, ``lookup``; each text
delta becomes an artifact update (one artifact, ``append`` after the first
chunk, a ``lastChunk`` with one empty text part closing it), and while the model answers with
tool calls they run, concurrently, and the model is called again with the
history grown. Then ``completed``; a model error ends the task ``failed`` with
the error's text in the status message.

The user's text reaches the model unchanged (the stub plans the loop from the
kit's ``<loadkit>`` marker in it). A continued conversation (the same
``contextId``) sends the model its earlier turns, tool calls included, bounded
as AgenticOS bounds history (200 messages, whole turns dropped oldest first).

``cancel`` writes ``canceled`` into the task's event queue while it is still
open, so a client streaming the turn sees it, and then closes the model's
stream, so the stub sees its client leave rather than finishing an answer nobody
reads. The SDK then cancels ``execute`` itself (it cancels the producer task
after ``cancel`` returns), which also ends a tool's wait or a model call that
has not answered yet.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Part, Task, TaskState, TaskStatus
from openai import APIError, AsyncOpenAI, AsyncStream

# The stub ignores keys and echoes any model name; these only have to be present.
STUB_API_KEY = "loadkit-stub-no-real-key"
STUB_MODEL = "loadkit-stub-model"
INSTRUCTIONS = "You are agent-loadkit's test agent. Answer briefly."
# A continued conversation's history, bounded as AgenticOS bounds it.
HISTORY_MESSAGES = 200
# Conversations remembered at once; the oldest untouched one is forgotten first, so a long
# load test's one-turn conversations cannot grow the process without bound.
CONTEXTS = 10_000
ARTIFACT_NAME = "answer"

LOOKUP_TOOL = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look a topic up in the team's notes; wait_ms is how long the lookup takes.",
        "parameters": {
            "type": "object",
            "properties": {
                "topic": {"type": "string", "description": "What to look up."},
                "wait_ms": {
                    "type": "number",
                    "description": "How long the lookup takes, in milliseconds.",
                },
            },
            "required": ["topic"],
        },
    },
}


TOOLS: list[Any] = [LOOKUP_TOOL]


async def lookup(topic: str, wait_ms: float = 0) -> str:
    """The one tool: waits ``wait_ms`` asleep on the event loop (so a loop's tool costs what
    the scenario states and the platform's share is the rest), then answers."""
    if wait_ms > 0:
        await asyncio.sleep(wait_ms / 1000.0)
    return f"{topic}: nothing more to report"


async def run_tool(name: str, arguments: str) -> str:
    """One tool call's result, as the model reads it; a bad call is answered, not raised, as
    an agent framework answers it."""
    if name != "lookup":
        return f"error: there is no tool named {name!r}"
    try:
        args = json.loads(arguments or "{}")
        return await lookup(str(args.get("topic", "")), float(args.get("wait_ms") or 0))
    except (json.JSONDecodeError, AttributeError, TypeError, ValueError) as exc:
        return f"error: bad arguments for lookup ({exc})"


@dataclass
class Turn:
    """One running turn, as cancel finds it: the model stream being read, and whether the turn
    was cancelled (execute then writes nothing more)."""

    stream: AsyncStream[Any] | None = None
    cancelled: bool = False


@dataclass
class ToolCall:
    """A tool call being joined from streamed deltas."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StubAgentExecutor(AgentExecutor):
    """The kit's A2A agent: the stub as its model, ``lookup`` as its tool."""

    def __init__(self, stub_url: str) -> None:
        self.client = AsyncOpenAI(base_url=f"{stub_url}/v1", api_key=STUB_API_KEY)
        # contextId -> its earlier turns, each the list of messages it added.
        self._history: OrderedDict[str, list[list[dict[str, Any]]]] = OrderedDict()
        self._turns: dict[str, Turn] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        updater = TaskUpdater(event_queue, task_id, context_id)
        # Registered first: a cancel may come as soon as the task below is stored, and from
        # then on nothing may be written after its ``canceled``.
        turn = self._turns[task_id] = Turn()
        try:
            if context.current_task is None and context.message is not None:
                await event_queue.enqueue_event(
                    Task(
                        id=task_id,
                        context_id=context_id,
                        status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                        history=[context.message],
                    )
                )
            if turn.cancelled:
                return
            await updater.start_work()
            await self._answer(context.get_user_input(), context_id, updater, turn)
        except APIError as exc:
            if not turn.cancelled:
                await updater.failed(
                    updater.new_agent_message([Part(text=f"the model call failed: {exc}")])
                )
        except Exception:
            # Reading a stream that cancel closed fails; the task is already canceled.
            if not turn.cancelled:
                raise
        finally:
            self._turns.pop(task_id, None)

    async def _answer(self, text: str, context_id: str, updater: TaskUpdater, turn: Turn) -> None:
        """The tool loop, streamed into the task's artifact, then ``completed``."""
        earlier = [m for past in self._history.get(context_id, []) for m in past]
        added: list[dict[str, Any]] = [{"role": "user", "content": text}]
        artifact_id = uuid.uuid4().hex
        answer: list[str] = []
        while not turn.cancelled:
            messages: list[Any] = [{"role": "system", "content": INSTRUCTIONS}, *earlier, *added]
            stream = await self.client.chat.completions.create(
                model=STUB_MODEL, messages=messages, tools=TOOLS, stream=True
            )
            turn.stream = stream
            calls: dict[int, ToolCall] = {}
            async with stream:
                async for chunk in stream:
                    if turn.cancelled:
                        return
                    if not chunk.choices:
                        continue
                    delta = chunk.choices[0].delta
                    if delta.content:
                        await updater.add_artifact(
                            [Part(text=delta.content)],
                            artifact_id=artifact_id,
                            name=ARTIFACT_NAME,
                            append=bool(answer),
                            last_chunk=False,
                        )
                        answer.append(delta.content)
                    for piece in delta.tool_calls or []:
                        call = calls.setdefault(piece.index, ToolCall())
                        if piece.id:
                            call.id = piece.id
                        if piece.function and piece.function.name:
                            call.name = piece.function.name
                        if piece.function and piece.function.arguments:
                            call.arguments.append(piece.function.arguments)
            turn.stream = None
            if turn.cancelled:
                return
            if not calls:
                break
            ordered = [calls[i] for i in sorted(calls)]
            added.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": "".join(c.arguments)},
                        }
                        for c in ordered
                    ],
                }
            )
            results = await asyncio.gather(
                *(run_tool(c.name, "".join(c.arguments)) for c in ordered)
            )
            added.extend(
                {"role": "tool", "tool_call_id": c.id, "content": result}
                for c, result in zip(ordered, results, strict=True)
            )
        if turn.cancelled:
            return
        # The closing chunk: Artifact.parts is required in 1.0, so it carries one empty text part
        # (holding each delta back until the next arrives would delay every token by one).
        await updater.add_artifact(
            [Part(text="")],
            artifact_id=artifact_id,
            name=ARTIFACT_NAME,
            append=True,
            last_chunk=True,
        )
        added.append({"role": "assistant", "content": "".join(answer)})
        self._remember(context_id, added)
        await updater.complete()

    def _remember(self, context_id: str, turn_messages: list[dict[str, Any]]) -> None:
        """Keep the turn for the conversation's next one: whole turns, newest last, at most
        HISTORY_MESSAGES messages, at most CONTEXTS conversations."""
        turns = self._history.setdefault(context_id, [])
        self._history.move_to_end(context_id)
        turns.append(turn_messages)
        while len(turns) > 1 and sum(len(t) for t in turns) > HISTORY_MESSAGES:
            turns.pop(0)
        while len(self._history) > CONTEXTS:
            self._history.popitem(last=False)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """``canceled`` into the still-open queue first (a streaming client sees it), then the
        model stream closed (the stub sees its client leave)."""
        task_id = context.task_id or ""
        turn = self._turns.get(task_id)
        if turn is not None:
            turn.cancelled = True
        await TaskUpdater(event_queue, task_id, context.context_id or "").cancel()
        if turn is not None and turn.stream is not None:
            await turn.stream.close()
