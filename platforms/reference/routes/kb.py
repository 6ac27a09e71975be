"""Knowledge bases: a named collection of documents with a fixed embedding model and width."""

from __future__ import annotations

import re
from typing import Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from sqlalchemy import select

from platforms.reference.deps import CallerDep, SessionDep, app_state
from platforms.reference.errors import APIError
from platforms.reference.models import Collection
from platforms.reference.provider import ProviderError
from platforms.reference.routes.paging import PageDep, iso, page_of

router = APIRouter()

# The embedding model a collection uses when none is named (Ollama's common default).
DEFAULT_EMBEDDING_MODEL = "nomic-embed-text"


class KBCreate(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    scope: Literal["org"] = "org"
    embedding_model: str = Field(DEFAULT_EMBEDDING_MODEL, min_length=1, max_length=200)


def collection_name_for(name: str) -> str:
    """The vector collection's name: the KB name lower-cased, runs of other characters as _."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "kb"


def kb_json(collection: Collection) -> dict:
    """A knowledge base as the API shows it."""
    return {
        "id": collection.id,
        "name": collection.name,
        "collection_name": collection.collection_name,
        "scope": collection.scope,
        "embedding_model": collection.embedding_model,
        "embedding_dim": collection.embedding_dim,
        "created_at": iso(collection.created_at),
    }


@router.post("/kb", status_code=201)
async def create_kb(
    body: KBCreate,
    request: Request,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """A new knowledge base; its width is what the embedding model answers (503 if unreachable)."""
    collection_name = collection_name_for(body.name)
    taken = await session.scalar(
        select(Collection.id).where(
            Collection.org_id == caller.org.id, Collection.collection_name == collection_name
        )
    )
    if taken:
        raise APIError(409, f"a knowledge base {collection_name!r} already exists", {"id": taken})
    try:
        [probe] = await app_state(request).provider.embed(body.embedding_model, ["dimension probe"])
    except ProviderError as exc:
        raise APIError(503, f"cannot size the collection: {exc}") from exc
    collection = Collection(
        org_id=caller.org.id,
        name=body.name,
        collection_name=collection_name,
        scope=body.scope,
        embedding_model=body.embedding_model,
        embedding_dim=len(probe),
    )
    session.add(collection)
    await session.commit()
    return kb_json(collection)


@router.get("/kb")
async def list_kb(
    page: PageDep,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """The organisation's knowledge bases, by name."""
    query = select(Collection).where(Collection.org_id == caller.org.id).order_by(Collection.name)
    return await page_of(session, query, page, kb_json)
