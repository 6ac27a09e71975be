"""The run and conversation lists: what ``api_read`` reads besides agents."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query
from sqlalchemy import select

from reference_platform.deps import CallerDep, SessionDep
from reference_platform.errors import APIError
from reference_platform.models import Conversation, Run
from reference_platform.routes.paging import PageDep, iso, page_of

router = APIRouter()


def run_json(run: Run) -> dict:
    """A run row as the API shows it (the prompt and output included)."""
    return {
        "id": run.id,
        "agent_id": run.agent_id,
        "conversation_id": run.conversation_id,
        "trigger_id": run.trigger_id,
        "source": run.source,
        "status": run.status,
        "prompt": run.prompt,
        "output": run.output,
        "error": run.error,
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "cost_usd": run.cost_usd,
        "created_at": iso(run.created_at),
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
    }


def conversation_json(conversation: Conversation) -> dict:
    """A conversation as the API shows it."""
    return {
        "id": conversation.id,
        "agent_id": conversation.agent_id,
        "title": conversation.title,
        "created_at": iso(conversation.created_at),
        "updated_at": iso(conversation.updated_at),
    }


def _moment(text: str) -> datetime:
    """An ISO 8601 query parameter as UTC (a time without zone is taken as UTC), else 422."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise APIError(
            422, "the request is not valid", {"fields": {"started_from": "not an ISO 8601 time"}}
        ) from None
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


@router.get("/runs")
async def list_runs(
    page: PageDep,
    caller: CallerDep,
    session: SessionDep,
    conversation_id: Annotated[str | None, Query()] = None,
    status: Annotated[str | None, Query()] = None,
    started_from: Annotated[str | None, Query()] = None,
) -> dict:
    """The organisation's runs, newest first; filtered by conversation (a trigger's run log),
    status, and creation from a time, as AgenticOS filters them."""
    query = select(Run).where(Run.org_id == caller.org.id)
    if conversation_id is not None:
        query = query.where(Run.conversation_id == conversation_id)
    if status is not None:
        query = query.where(Run.status == status)
    if started_from is not None:
        query = query.where(Run.created_at >= _moment(started_from))
    query = query.order_by(Run.created_at.desc(), Run.id)
    return await page_of(session, query, page, run_json)


@router.get("/conversations")
async def list_conversations(
    page: PageDep,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """The caller's conversations in the organisation, most recently active first."""
    query = (
        select(Conversation)
        .where(Conversation.org_id == caller.org.id, Conversation.user_id == caller.user.id)
        .order_by(Conversation.updated_at.desc(), Conversation.id)
    )
    return await page_of(session, query, page, conversation_json)
