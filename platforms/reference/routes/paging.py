"""The list shape every collection endpoint answers: ``{items, total}`` with skip/limit.

``limit`` above 100 is 422, and the page is moved with ``skip``, as on AgenticOS
(a client paging with another name would read the first page again and again);
``total`` counts every matching row, not just the page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, Query
from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

# The contract's bound on one page.
MAX_LIMIT = 100


@dataclass(frozen=True)
class Page:
    """Which slice of a list the caller asked for."""

    limit: int
    skip: int


def page_params(
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 20,
    skip: Annotated[int, Query(ge=0)] = 0,
) -> Page:
    """The ``limit`` and ``skip`` query parameters, validated."""
    return Page(limit, skip)


PageDep = Annotated[Page, Depends(page_params)]


async def page_of(
    session: AsyncSession, query: Select, page: Page, render: Callable[[Any], dict]
) -> dict:
    """``{items, total}`` for one page of ``query`` (a select of ORM rows)."""
    total = await session.scalar(select(func.count()).select_from(query.order_by(None).subquery()))
    rows = (await session.execute(query.limit(page.limit).offset(page.skip))).scalars()
    return {"items": [render(row) for row in rows], "total": total}


def iso(moment: datetime | None) -> str | None:
    """A stored time as ISO 8601 UTC (SQLite returns it without a zone)."""
    if moment is None:
        return None
    text = moment.isoformat()
    return text if moment.tzinfo else text + "+00:00"
