"""Secrets: provider keys stored for model profiles; their values are never answered."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field
from sqlalchemy import select

from platforms.reference.deps import CallerDep, SessionDep
from platforms.reference.errors import APIError
from platforms.reference.models import Secret
from platforms.reference.routes.paging import PageDep, iso, page_of

router = APIRouter()


class ApiKeyValue(BaseModel):
    kind: Literal["api_key"]
    api_key: str = Field(min_length=1)


class SecretCreate(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    purpose: str = Field(min_length=1, max_length=50)
    value: ApiKeyValue


def secret_json(secret: Secret) -> dict:
    """A secret's metadata: never its value."""
    return {
        "id": secret.id,
        "name": secret.name,
        "purpose": secret.purpose,
        "kind": secret.kind,
        "created_at": iso(secret.created_at),
    }


@router.post("/secrets", status_code=201)
async def create_secret(
    body: SecretCreate,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """Store a key under a name unique in the organisation (409 if taken)."""
    taken = await session.scalar(
        select(Secret.id).where(Secret.org_id == caller.org.id, Secret.name == body.name)
    )
    if taken:
        raise APIError(409, f"a secret named {body.name!r} already exists", {"id": taken})
    secret = Secret(
        org_id=caller.org.id,
        name=body.name,
        purpose=body.purpose,
        kind=body.value.kind,
        api_key=body.value.api_key,
    )
    session.add(secret)
    await session.commit()
    return secret_json(secret)


@router.get("/secrets")
async def list_secrets(
    page: PageDep,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """The organisation's secrets (metadata only), by name."""
    query = select(Secret).where(Secret.org_id == caller.org.id).order_by(Secret.name)
    return await page_of(session, query, page, secret_json)
