"""Agents: list, create (draft), read, publish, and the synchronous run.

Shaped as AgenticOS shapes them: the list names agents and carries no spec; one agent
read whole carries its spec as ``draft_spec``; a name's handle is unique in the
organisation (a second agent of it is refused 409).
"""

from __future__ import annotations

import re
import time
from typing import Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field
from sqlalchemy import select

from platforms.reference.deps import CallerDep, SessionDep, app_state, run_rate_limit
from platforms.reference.errors import APIError
from platforms.reference.models import (
    Agent,
    AgentCapability,
    Conversation,
    Message,
    ModelProfile,
    Run,
    utcnow,
)
from platforms.reference.routes.paging import PageDep, iso, page_of
from platforms.reference.runs import agent_in_org, execute_run

router = APIRouter()


class Capability(BaseModel):
    """A capability bound in the spec (its tools); ``config`` is accepted and not used."""

    id: Literal["code_execution"]
    config: dict = Field(default_factory=dict)


class AgentSpec(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    instructions: str = ""
    model_profile_id: str
    capabilities: list[Capability] = Field(default_factory=list)


class AgentCreate(BaseModel):
    spec: AgentSpec


class PublishRequest(BaseModel):
    note: str | None = None


class RunRequest(BaseModel):
    prompt: str = Field(min_length=1)
    conversation_id: str | None = None


def agent_json(agent: Agent) -> dict:
    """An agent as the API lists it: no spec (AgenticOS's list has none)."""
    return {
        "id": agent.id,
        "name": agent.name,
        "slug": handle(agent.name),
        "status": agent.status,
        "org_id": agent.org_id,
        "published_at": iso(agent.published_at),
        "created_at": iso(agent.created_at),
        "updated_at": iso(agent.updated_at),
    }


def agent_read(agent: Agent) -> dict:
    """One agent read whole: the listed fields and its spec, as ``draft_spec``."""
    spec = {
        "name": agent.name,
        "instructions": agent.instructions,
        "model_profile_id": agent.model_profile_id,
        "capabilities": [{"id": c.capability, "config": {}} for c in agent.capabilities],
    }
    return {**agent_json(agent), "draft_spec": spec}


def handle(name: str) -> str:
    """The agent's @handle, derived from its name as AgenticOS derives it."""
    return (
        re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]+", "-", name.strip().lower())).strip("-")[:64]
        or "agent"
    )


async def _profile_in_org(session: SessionDep, org_id: str, profile_id: str) -> ModelProfile:
    profile = await session.get(ModelProfile, profile_id)
    if profile is None or profile.org_id != org_id:
        raise APIError(
            422,
            "the model profile does not exist in this organisation",
            {"fields": {"body.spec.model_profile_id": "no such model profile"}},
        )
    return profile


@router.get("/agents")
async def list_agents(
    page: PageDep,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """The organisation's agents, newest first."""
    query = (
        select(Agent)
        .where(Agent.org_id == caller.org.id)
        .order_by(Agent.created_at.desc(), Agent.id)
    )
    return await page_of(session, query, page, agent_json)


@router.post("/agents", status_code=201)
async def create_agent(
    body: AgentCreate,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """A new draft agent on one of the organisation's model profiles; a taken handle is 409."""
    profile = await _profile_in_org(session, caller.org.id, body.spec.model_profile_id)
    names = await session.scalars(select(Agent.name).where(Agent.org_id == caller.org.id))
    if handle(body.spec.name) in {handle(n) for n in names}:
        raise APIError(409, f"The handle @{handle(body.spec.name)} is already taken")
    agent = Agent(
        org_id=caller.org.id,
        name=body.spec.name,
        instructions=body.spec.instructions,
        model_profile_id=profile.id,
        capabilities=[AgentCapability(capability=c.id) for c in body.spec.capabilities],
    )
    session.add(agent)
    await session.commit()
    return agent_json(agent)


@router.get("/agents/{agent_id}")
async def get_agent(
    agent_id: str,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """One agent, its spec included."""
    return agent_read(await agent_in_org(session, caller.org.id, agent_id))


@router.post("/agents/{agent_id}/publish")
async def publish_agent(
    agent_id: str,
    caller: CallerDep,
    session: SessionDep,
    body: PublishRequest | None = None,
) -> dict:
    """Publish the agent so it can be run; publishing again only refreshes the note."""
    agent = await agent_in_org(session, caller.org.id, agent_id)
    agent.status = "published"
    agent.publish_note = body.note if body else None
    agent.published_at = agent.updated_at = utcnow()
    await session.commit()
    return agent_json(agent)


@router.post("/agents/{agent_id}/run", dependencies=[Depends(run_rate_limit)])
async def run_agent(
    agent_id: str,
    body: RunRequest,
    request: Request,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """Run the agent once and answer when it has finished (synchronous, as on AgenticOS)."""
    began = time.monotonic()
    agent = await agent_in_org(session, caller.org.id, agent_id)
    if agent.status != "published":
        raise APIError(400, f"agent {agent_id} is not published; publish it first")
    if body.conversation_id:
        conversation = await session.get(Conversation, body.conversation_id)
        if conversation is None or conversation.org_id != caller.org.id:
            raise APIError(404, f"conversation {body.conversation_id} not found")
    state = app_state(request)
    run = Run(
        org_id=caller.org.id,
        agent_id=agent.id,
        user_id=caller.user.id,
        conversation_id=body.conversation_id,
        source="api",
        status="queued",
        prompt=body.prompt,
    )
    await execute_run(session, state.provider, state.counts, run, agent)
    if run.status != "completed":
        raise APIError(500, f"the run failed: {run.error}", {"run_id": run.id})
    if body.conversation_id:
        session.add_all(
            [
                Message(conversation_id=body.conversation_id, role="user", content=body.prompt),
                Message(conversation_id=body.conversation_id, role="assistant", content=run.output),
            ]
        )
        await session.commit()
    return {
        "run_id": run.id,
        "agent_id": agent.id,
        "conversation_id": run.conversation_id,
        "output": run.output,
        "status": run.status,
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "cost_usd": run.cost_usd,
        "duration_ms": round((time.monotonic() - began) * 1000, 1),
    }
