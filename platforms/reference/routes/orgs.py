"""The organisations the caller belongs to."""

from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy import select

from platforms.reference.deps import CallerDep, SessionDep
from platforms.reference.models import Membership, Org
from platforms.reference.routes.paging import iso

router = APIRouter()


@router.get("/orgs")
async def list_orgs(caller: CallerDep, session: SessionDep) -> dict:
    """Every organisation the caller is a member of, with their role, personal first."""
    query = (
        select(Org, Membership.role)
        .join(Membership, Membership.org_id == Org.id)
        .where(Membership.user_id == caller.user.id)
        .order_by(Org.is_personal.desc(), Org.name)
    )
    rows = (await session.execute(query)).all()
    items = [
        {
            "id": org.id,
            "name": org.name,
            "slug": org.slug,
            "is_personal": org.is_personal,
            "role": role,
            "created_at": iso(org.created_at),
        }
        for org, role in rows
    ]
    return {"items": items, "total": len(items)}
