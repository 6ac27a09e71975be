"""An agent run: a row written before its loop and updated after it.

The same path serves ``POST /agents/{id}/run``, a webhook's routine run and a
chat turn (which streams). The loop is AgenticOS's (pydantic-ai's agent graph):
call the model with the agent's tools; if it asks for tools, run them (a step's
calls concurrently), add its answer and their results to the messages and call
it again, until it answers with text, at most MAX_STEPS model calls. The
caller's session, and so its pooled connection, is held across the whole loop,
every model call and tool included, and nothing is written per step: the run
row is updated when the loop ends, as AgenticOS does (/work/helpers/agenticos-tools.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from platforms.reference.errors import APIError
from platforms.reference.metrics import Counts
from platforms.reference.models import (
    Agent,
    Message,
    ModelProfile,
    Run,
    Secret,
    utcnow,
)
from platforms.reference.provider import Completion, ModelTarget, Provider, ProviderError, ToolCall
from platforms.reference.state import AppState
from platforms.reference.tools import run_tool, tools_for

# Earlier messages of a conversation sent with a new prompt, at most: AgenticOS's bound.
HISTORY_MESSAGES = 200
# Model calls a run may make: AgenticOS's default (its UsageLimits request_limit).
MAX_STEPS = 100


@dataclass(frozen=True)
class ToolResult:
    """A call the loop ran: the call, what it returned, how long it took."""

    call: ToolCall
    result: str
    duration_ms: float


def agent_tools(agent: Agent) -> list[dict]:
    """The tools the agent's capabilities give it, as the model request offers them."""
    return tools_for([c.capability for c in agent.capabilities])


async def run_tools(calls: list[ToolCall]) -> list[ToolResult]:
    """Run one step's calls, concurrently as pydantic-ai does, each timed."""

    async def one(call: ToolCall) -> ToolResult:
        began = time.monotonic()
        result = run_tool(call.name, call.arguments)
        return ToolResult(call, result, (time.monotonic() - began) * 1000.0)

    return list(await asyncio.gather(*(one(call) for call in calls)))


def after_step(messages: list[dict], completion: Completion, results: list[ToolResult]) -> None:
    """The history grown by one step: the model's answer asking for tools, then each result."""
    messages.append(
        {
            "role": "assistant",
            "content": completion.text or None,
            "tool_calls": [call.as_message_part() for call in completion.tool_calls],
        }
    )
    messages += [{"role": "tool", "tool_call_id": r.call.id, "content": r.result} for r in results]


async def agent_loop(
    call_model: Callable[[list[dict]], Awaitable[Completion]],
    messages: list[dict],
    tools_start: Callable[[list[ToolCall]], Awaitable[None]] | None = None,
    tools_done: Callable[[list[ToolResult]], Awaitable[None]] | None = None,
) -> tuple[Completion, list[ToolResult]]:
    """Call the model until it answers with text: (the answer with the usage of every call,
    every tool result). ``tools_start`` sees each step's calls before they run, ``tools_done``
    their results (a chat turn's frames)."""
    ran: list[ToolResult] = []
    input_tokens = output_tokens = 0
    for _ in range(MAX_STEPS):
        completion = await call_model(messages)
        input_tokens += completion.input_tokens
        output_tokens += completion.output_tokens
        if not completion.tool_calls:
            completion.input_tokens, completion.output_tokens = input_tokens, output_tokens
            return completion, ran
        if tools_start is not None:
            await tools_start(completion.tool_calls)
        results = await run_tools(completion.tool_calls)
        ran += results
        if tools_done is not None:
            await tools_done(results)
        after_step(messages, completion, results)
    raise ProviderError(f"the agent made {MAX_STEPS} model calls without answering")


async def agent_in_org(session: AsyncSession, org_id: str, agent_id: str) -> Agent:
    """The organisation's agent, or 404."""
    agent = await session.get(Agent, agent_id)
    if agent is None or agent.org_id != org_id:
        raise APIError(404, f"agent {agent_id} not found")
    return agent


async def model_target(session: AsyncSession, agent: Agent) -> ModelTarget:
    """Where the agent's model profile says to call, with its secret's key."""
    profile = await session.get(ModelProfile, agent.model_profile_id)
    if profile is None or not profile.base_url:
        raise ProviderError(f"agent {agent.id} has no usable model profile")
    secret = await session.get(Secret, profile.secret_id) if profile.secret_id else None
    return ModelTarget(
        base_url=profile.base_url, model=profile.model, api_key=secret.api_key if secret else None
    )


async def prompt_messages(
    session: AsyncSession, agent: Agent, prompt: str, conversation_id: str | None
) -> list[dict]:
    """System instructions, the conversation so far (bounded), then the new prompt."""
    messages = [{"role": "system", "content": agent.instructions}]
    if conversation_id:
        query = (
            select(Message.role, Message.content)
            .where(Message.conversation_id == conversation_id)
            .order_by(Message.created_at.desc())
            .limit(HISTORY_MESSAGES)
        )
        history = (await session.execute(query)).all()
        messages += [{"role": role, "content": content} for role, content in reversed(history)]
    messages.append({"role": "user", "content": prompt})
    return messages


async def start_run(session: AsyncSession, run: Run, counts: Counts) -> None:
    """Mark the run running and commit, so the row exists before the model is called."""
    run.status = "running"
    run.started_at = utcnow()
    run.created_at = run.created_at or run.started_at
    session.add(run)
    await session.commit()
    counts.runs_in_progress += 1


async def finish_run(
    session: AsyncSession,
    run: Run,
    counts: Counts,
    status: str,
    completion: Completion | None = None,
    error: str | None = None,
) -> None:
    """Write the run's outcome and commit: the row after the model call."""
    counts.runs_in_progress -= 1
    counts.runs[status] += 1
    run.status = status
    run.finished_at = utcnow()
    run.error = error
    if completion is not None:
        run.output = completion.text
        run.input_tokens = completion.input_tokens
        run.output_tokens = completion.output_tokens
    await session.commit()


async def abandon_run(session: AsyncSession, run_id: str, counts: Counts) -> None:
    """Best effort when a run is interrupted (cancelled, database error): mark it failed.

    Rolls back first, since the interruption may have broken the transaction,
    and swallows its own errors so the caller can re-raise the interruption
    itself; masking a cancellation would keep a worker alive at shutdown.
    """
    counts.runs_in_progress -= 1
    counts.runs["failed"] += 1
    with contextlib.suppress(Exception):
        await session.rollback()
        await session.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(status="failed", error="interrupted", finished_at=utcnow())
        )
        await session.commit()


async def execute_run(
    session: AsyncSession, provider: Provider, counts: Counts, run: Run, agent: Agent
) -> Run:
    """Run the agent's loop, without streaming; the run row records success or the failure.
    As on AgenticOS, a run's model gets no history, even in a conversation, and its tool
    calls are not journalled."""
    await start_run(session, run, counts)
    run_id = run.id
    try:
        target = await model_target(session, agent)
        tools = agent_tools(agent)
        messages = await prompt_messages(session, agent, run.prompt, None)
        completion, _ = await agent_loop(
            lambda grown: provider.complete(target, grown, tools), messages
        )
    except ProviderError as exc:
        await finish_run(session, run, counts, "failed", error=str(exc))
        return run
    except BaseException:
        await abandon_run(session, run_id, counts)
        raise
    await finish_run(session, run, counts, "completed", completion)
    return run


async def execute_routine(state: AppState, run_id: str) -> None:
    """The worker's job for a webhook delivery: run the queued routine against the model."""
    async with state.db.session() as session:
        run = await session.get(Run, run_id)
        if run is None or run.status != "queued":
            return
        agent = await session.get(Agent, run.agent_id)
        if agent is None or agent.status != "published":
            run.status, run.error, run.finished_at = "failed", "agent not published", utcnow()
            state.counts.runs["failed"] += 1
            await session.commit()
            return
        await execute_run(session, state.provider, state.counts, run, agent)
