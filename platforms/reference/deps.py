"""Who is calling and in which organisation: FastAPI dependencies shared by the routes.

The session dependency checks a pooled connection out for the whole request
(see platforms/reference/db.py), and authentication runs on it, exactly as a request on
AgenticOS holds its session from the permission check to the response.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from platforms.reference.errors import APIError
from platforms.reference.models import Membership, Org, User
from platforms.reference.state import AppState


def app_state(request: Request) -> AppState:
    """The process's shared state."""
    return request.app.state.target


async def db_session(request: Request) -> AsyncIterator[AsyncSession]:
    """A session holding one pooled connection for the rest of the request."""
    async with app_state(request).db.session() as session:
        yield session


def bearer_token(request: Request) -> str | None:
    """The token from ``Authorization: Bearer ...``, if any."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


@dataclass(frozen=True)
class Caller:
    """The signed-in user, the organisation the request acts in, and their role there."""

    user: User
    org: Org
    role: str


async def resolve_caller(
    session: AsyncSession, state: AppState, token: str | None, org_id: str | None
) -> Caller:
    """The caller for a token and an optional organisation id; 401 or 404 otherwise."""
    user_id = state.signer.user_id(token) if token else None
    user = await session.get(User, user_id) if user_id else None
    if user is None:
        raise APIError(401, "not authenticated: sign in and send Authorization: Bearer <token>")
    query = select(Org, Membership.role).join(Membership, Membership.org_id == Org.id)
    query = query.where(Membership.user_id == user.id)
    chosen = Org.id == org_id if org_id else Org.is_personal.is_(True)
    query = query.where(chosen)
    row = (await session.execute(query)).first()
    if row is None:
        raise APIError(404, f"organisation {org_id or '(personal)'} not found")
    return Caller(user=user, org=row[0], role=row[1])


SessionDep = Annotated[AsyncSession, Depends(db_session)]


async def current_caller(request: Request, session: SessionDep) -> Caller:
    """The caller of this HTTP request, in the organisation ``X-Organization-Id`` names."""
    return await resolve_caller(
        session,
        app_state(request),
        bearer_token(request),
        request.headers.get("x-organization-id"),
    )


def run_rate_limit(request: Request) -> None:
    """429 with Retry-After once this user has used the minute's runs.

    Checked from the token alone, before a database connection is taken, so a
    shed run costs the pool nothing; a bad token is left for authentication.
    """
    state = app_state(request)
    token = bearer_token(request)
    user_id = state.signer.user_id(token) if token else None
    if user_id is None:
        return
    wait = state.run_limiter.retry_after(user_id)
    if wait is not None:
        raise APIError(
            429,
            f"run rate limit: {state.settings.rate_limit_run_per_minute} runs per minute per user",
            {"retry_after": wait},
            headers={"Retry-After": str(wait)},
        )


CallerDep = Annotated[Caller, Depends(current_caller)]
