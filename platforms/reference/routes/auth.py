"""Sign-in: form fields in, bearer tokens out, limited like AgenticOS's."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Form, Request
from sqlalchemy import select

from platforms.reference.auth import check_password
from platforms.reference.deps import SessionDep, app_state
from platforms.reference.errors import APIError
from platforms.reference.models import User

router = APIRouter()


def _login_limit(request: Request, username: str) -> None:
    """429 once this client address or this user name has used the minute's sign-ins."""
    state = app_state(request)
    client = request.client.host if request.client else "unknown"
    waits = [
        state.login_limiter.retry_after(f"ip:{client}"),
        state.login_limiter.retry_after(f"user:{username.lower()}"),
    ]
    wait = max((w for w in waits if w is not None), default=None)
    if wait is not None:
        raise APIError(
            429,
            f"too many sign-ins: {state.settings.rate_limit_login_per_minute} a minute",
            {"retry_after": wait},
            headers={"Retry-After": str(wait)},
        )


@router.post("/auth/login")
async def login(
    request: Request,
    username: Annotated[str, Form()],
    password: Annotated[str, Form()],
    session: SessionDep,
) -> dict:
    """Check the password; answer an access and a refresh token (never stored anywhere)."""
    _login_limit(request, username)
    user = await session.scalar(select(User).where(User.email == username.lower()))
    valid = user is not None and await asyncio.to_thread(
        check_password, password, user.password_hash
    )
    if user is None or not valid:
        raise APIError(401, "wrong user name or password")
    signer = app_state(request).signer
    return {
        "access_token": signer.issue(user.id, "access"),
        "refresh_token": signer.issue(user.id, "refresh"),
        "token_type": "bearer",
    }
