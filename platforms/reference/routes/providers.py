"""Model profiles: which provider, model, address and key an agent's runs use."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field
from sqlalchemy import select

from platforms.reference.deps import CallerDep, SessionDep
from platforms.reference.errors import APIError
from platforms.reference.models import ModelProfile, Secret
from platforms.reference.routes.paging import PageDep, iso, page_of

router = APIRouter()


class ProfileCreate(BaseModel):
    label: str = Field(min_length=1, max_length=200)
    provider: str = Field(min_length=1, max_length=50)
    model: str = Field(min_length=1, max_length=200)
    secret_id: str | None = None
    base_url: str = Field(pattern=r"^https?://")


def profile_json(profile: ModelProfile) -> dict:
    """A model profile as the API shows it."""
    return {
        "id": profile.id,
        "label": profile.label,
        "provider": profile.provider,
        "model": profile.model,
        "base_url": profile.base_url,
        "secret_id": profile.secret_id,
        "created_at": iso(profile.created_at),
    }


@router.post("/providers/model-profiles", status_code=201)
async def create_profile(
    body: ProfileCreate,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """A profile whose label is unique in the organisation (409 if taken)."""
    taken = await session.scalar(
        select(ModelProfile.id).where(
            ModelProfile.org_id == caller.org.id, ModelProfile.label == body.label
        )
    )
    if taken:
        raise APIError(
            409, f"a model profile labelled {body.label!r} already exists", {"id": taken}
        )
    if body.secret_id:
        secret = await session.get(Secret, body.secret_id)
        if secret is None or secret.org_id != caller.org.id:
            raise APIError(
                422,
                "the secret does not exist in this organisation",
                {"fields": {"body.secret_id": "no such secret"}},
            )
    profile = ModelProfile(
        org_id=caller.org.id,
        label=body.label,
        provider=body.provider,
        model=body.model,
        base_url=body.base_url.rstrip("/"),
        secret_id=body.secret_id,
    )
    session.add(profile)
    await session.commit()
    return profile_json(profile)


@router.get("/providers/model-profiles")
async def list_profiles(
    page: PageDep,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """The organisation's model profiles, by label."""
    query = (
        select(ModelProfile)
        .where(ModelProfile.org_id == caller.org.id)
        .order_by(ModelProfile.label)
    )
    return await page_of(session, query, page, profile_json)
