"""Webhook routines: triggers on an agent, and the signed delivery endpoint that fires them.

A delivery is answered 202 with an empty body once its signature checks out
and its routine run is queued; the worker runs it against the model. An
unknown trigger also gets 202, so the endpoint never says which ids exist.
As on AgenticOS 0.0.247, every fire appends its run to the trigger's run-log
conversation (``conversation_id`` in the trigger list, ``GET /runs?conversation_id=``),
so what became of each accepted delivery can be seen afterwards; and as there,
there is no GET of one trigger (the path has only DELETE, so a GET answers 405),
and the list is the agent's every trigger at once (``{items, total}``, no paging).
A divergence here once let every test pass while the follow-up failed on the
real platform.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Literal

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from platforms.reference.deps import CallerDep, SessionDep, app_state
from platforms.reference.errors import APIError
from platforms.reference.models import Conversation, Run, Trigger, WebhookDelivery
from platforms.reference.routes.paging import iso
from platforms.reference.runs import agent_in_org

router = APIRouter()


class TriggerCreate(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    prompt: str = Field(min_length=1)
    trigger_type: Literal["event"]
    event_source: str = Field("webhook", pattern=r"^[a-z0-9_-]{1,50}$")
    event_secret: str = Field(min_length=16, max_length=255)


def webhook_path(trigger: Trigger) -> str:
    """Where deliveries for the trigger are posted."""
    return f"/api/v1/webhooks/triggers/{trigger.event_source}/{trigger.id}"


async def run_log(session: AsyncSession, trigger: Trigger) -> str | None:
    """The trigger's run-log conversation id. It has the trigger's own id, so a database made
    before run logs existed needs no new column (its old triggers simply show none)."""
    conversation = await session.get(Conversation, trigger.id)
    return conversation.id if conversation is not None else None


def trigger_json(
    trigger: Trigger, request: Request, conversation_id: str | None, last: Run | None
) -> dict:
    """A trigger as AgenticOS's TriggerRead shows it, never its secret: its run log and its
    last fire (stamped, as there, when a fire's run has ended)."""
    return {
        "id": trigger.id,
        "agent_id": trigger.agent_id,
        "name": trigger.name,
        "prompt": trigger.prompt,
        "is_active": trigger.enabled,
        "trigger_type": trigger.trigger_type,
        "event_source": trigger.event_source,
        "event_config": {},
        "webhook_url": str(request.base_url).rstrip("/") + webhook_path(trigger),
        "next_fire_at": None,
        "last_fired_at": iso(last.finished_at) if last else None,
        "last_run_id": last.id if last else None,
        "conversation_id": conversation_id,
        "created_at": iso(trigger.created_at),
    }


async def last_fire(session: AsyncSession, trigger: Trigger) -> Run | None:
    """The trigger's latest run that has ended, if any."""
    query = (
        select(Run)
        .where(Run.trigger_id == trigger.id, Run.finished_at.is_not(None))
        .order_by(Run.finished_at.desc())
        .limit(1)
    )
    return await session.scalar(query)


@router.post("/agents/{agent_id}/triggers", status_code=201)
async def create_trigger(
    agent_id: str,
    body: TriggerCreate,
    request: Request,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """An event trigger whose deliveries must be signed with ``event_secret``."""
    agent = await agent_in_org(session, caller.org.id, agent_id)
    trigger = Trigger(
        org_id=caller.org.id,
        agent_id=agent.id,
        name=body.name,
        prompt=body.prompt,
        trigger_type=body.trigger_type,
        event_source=body.event_source,
        event_secret=body.event_secret,
    )
    session.add(trigger)
    await session.flush()
    session.add(
        Conversation(
            id=trigger.id,
            org_id=caller.org.id,
            agent_id=agent.id,
            user_id=caller.user.id,
            title=f"Routine log: {body.name}"[:200],
        )
    )
    await session.commit()
    return trigger_json(trigger, request, trigger.id, None)


@router.get("/agents/{agent_id}/triggers")
async def list_triggers(
    agent_id: str,
    request: Request,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """Every trigger on the agent, oldest first, all at once (AgenticOS does not page it)."""
    agent = await agent_in_org(session, caller.org.id, agent_id)
    query = (
        select(Trigger).where(Trigger.agent_id == agent.id).order_by(Trigger.created_at, Trigger.id)
    )
    triggers = (await session.execute(query)).scalars().all()
    items = [
        trigger_json(t, request, await run_log(session, t), await last_fire(session, t))
        for t in triggers
    ]
    return {"items": items, "total": len(items)}


@router.delete("/agents/{agent_id}/triggers/{trigger_id}", status_code=204)
async def delete_trigger(
    agent_id: str,
    trigger_id: str,
    caller: CallerDep,
    session: SessionDep,
) -> Response:
    """Remove the trigger; later deliveries to it are accepted and dropped."""
    agent = await agent_in_org(session, caller.org.id, agent_id)
    trigger = await session.get(Trigger, trigger_id)
    if trigger is None or trigger.agent_id != agent.id:
        raise APIError(404, f"trigger {trigger_id} not found")
    await session.delete(trigger)
    await session.commit()
    return Response(status_code=204)


def webhook_context(event: dict) -> str:
    """The delivery as AgenticOS appends it to the trigger's prompt: its body, indented."""
    return f"A webhook delivery arrived.\n\n{json.dumps(event, indent=2, ensure_ascii=False)}"


def signature_valid(secret: str, raw: bytes, header: str | None) -> bool:
    """True when the header is ``sha256=<hex HMAC-SHA256(secret, raw body)>``."""
    expected = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    return header is not None and hmac.compare_digest(header.strip(), expected)


@router.post("/webhooks/triggers/{source}/{trigger_id}", status_code=202)
async def deliver(
    source: str,
    trigger_id: str,
    request: Request,
    session: SessionDep,
) -> Response:
    """Check the signature, de-duplicate by ``X-Delivery-Id``, queue the routine run."""
    accepted = Response(status_code=202)
    raw = await request.body()
    trigger = await session.get(Trigger, trigger_id)
    if trigger is None or trigger.event_source != source or not trigger.enabled:
        return accepted
    if not signature_valid(trigger.event_secret, raw, request.headers.get("x-signature-256")):
        raise APIError(403, "bad or missing X-Signature-256")
    try:
        event = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        event = None
    if not isinstance(event, dict):
        raise APIError(400, "the body must be a JSON object")
    delivery_id = request.headers.get("x-delivery-id")
    if delivery_id:
        seen = await session.get(WebhookDelivery, (trigger.id, delivery_id))
        if seen is not None:
            return accepted
    run = Run(
        org_id=trigger.org_id,
        agent_id=trigger.agent_id,
        conversation_id=await run_log(session, trigger),
        trigger_id=trigger.id,
        source="trigger",
        status="queued",
        prompt=f"{trigger.prompt}\n\n{webhook_context(event)}",
    )
    session.add(run)
    await session.flush()
    if delivery_id:
        session.add(WebhookDelivery(trigger_id=trigger.id, delivery_id=delivery_id, run_id=run.id))
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        return accepted
    app_state(request).worker.enqueue("routine", run.id)
    return accepted
