"""The run and conversation lists: what ``api_read`` reads besides agents."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query
from sqlalchemy import select

from platforms.reference.deps import CallerDep, SessionDep
from platforms.reference.errors import APIError
from platforms.reference.models import Conversation, Run
from platforms.reference.routes.paging import PageDep, iso, page_of

router = APIRouter()


# Where a run came from, in AgenticOS's RunSurface words (a routine's fire is "schedule").
SURFACES = {"api": "api", "chat": "web", "trigger": "schedule"}


def run_json(run: Run) -> dict:
    """A run as AgenticOS's run history (AgentRunRead) lists it: status, error and times, but
    neither its prompt nor its output, so nothing in the list says which delivery a routine's
    run came from."""
    return {
        "id": run.id,
        "agent_id": run.agent_id,
        "user_id": run.user_id,
        "surface": SURFACES.get(run.source, run.source),
        "status": run.status,
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "cost_usd": run.cost_usd,
        "error": run.error,
        "conversation_id": run.conversation_id,
        "started_at": iso(run.started_at),
        "ended_at": iso(run.finished_at),
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
    descending: Annotated[bool, Query()] = True,
) -> dict:
    """The organisation's runs that have started, newest first (``descending=false``: oldest);
    filtered by conversation (a trigger's run log), statuses (comma-separated) and start from
    a time, as AgenticOS filters them. A routine's run is listed once the worker starts it,
    as AgenticOS creates its run row only when its runner picks the fire up."""
    query = select(Run).where(Run.org_id == caller.org.id, Run.started_at.is_not(None))
    if conversation_id is not None:
        query = query.where(Run.conversation_id == conversation_id)
    if status is not None:
        query = query.where(Run.status.in_(status.split(",")))
    if started_from is not None:
        query = query.where(Run.started_at >= _moment(started_from))
    started = Run.started_at.desc() if descending else Run.started_at.asc()
    query = query.order_by(started, Run.id)
    return await page_of(session, query, page, run_json)


@router.get("/runs/{run_id}/transcript")
async def run_transcript(
    run_id: str,
    caller: CallerDep,
    session: SessionDep,
    skip: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> dict:
    """One run's turns, as AgenticOS's run transcript answers them (each turn carrying its
    ``run_id``): the prompt it ran, for a routine's fire the trigger's prompt and the
    delivery's body, then its answer. A run of another organisation is 404, as one that
    never existed."""
    run = await session.get(Run, run_id)
    if run is None or run.org_id != caller.org.id:
        raise APIError(404, "run not found")
    turns: list[tuple[str, str, datetime | None]] = [
        ("user", run.prompt, run.started_at or run.created_at)
    ]
    if run.output:
        turns.append(("assistant", run.output, run.finished_at))
    items = [
        {
            "id": f"{run.id}-{n}",
            "conversation_id": run.conversation_id,
            "run_id": run.id,
            "role": role,
            "content": content,
            "created_at": iso(at),
        }
        for n, (role, content, at) in enumerate(turns)
    ]
    return {
        "run_id": run.id,
        "conversation_id": run.conversation_id,
        "items": items[skip : skip + limit],
        "total": len(items),
    }


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
