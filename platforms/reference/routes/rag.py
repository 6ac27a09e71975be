"""Retrieval: search a collection, upload into it, and watch its documents get indexed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Query, Request, UploadFile
from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from platforms.reference.deps import CallerDep, SessionDep, app_state
from platforms.reference.errors import APIError
from platforms.reference.ingest import MAX_UPLOAD_BYTES, SUPPORTED_SUFFIXES, is_supported
from platforms.reference.models import Chunk, Collection, Document
from platforms.reference.provider import ProviderError
from platforms.reference.retrieval import StoredChunk, rank
from platforms.reference.routes.paging import PageDep, iso, page_of

router = APIRouter()


class SearchRequest(BaseModel):
    query: str = Field(min_length=1)
    collection_name: str = Field(min_length=1)
    limit: int = Field(4, ge=1, le=50)


async def collection_named(session: AsyncSession, org_id: str, name: str) -> Collection:
    """The organisation's collection called ``name``, or 404."""
    collection = await session.scalar(
        select(Collection).where(Collection.org_id == org_id, Collection.collection_name == name)
    )
    if collection is None:
        raise APIError(404, f"collection {name!r} not found")
    return collection


def document_json(doc: Document, collection: Collection) -> dict:
    """A document's indexing state as AgenticOS shows it (named by ``id`` alone): the failure
    in ``error_message``, and ``completed_at`` once indexing ended either way."""
    settled = doc.status in ("done", "error")
    return {
        "id": doc.id,
        "filename": doc.filename,
        "collection": collection.collection_name,
        "status": doc.status,
        "error_message": doc.error,
        "chunks": doc.chunk_count,
        "created_at": iso(doc.created_at),
        "updated_at": iso(doc.updated_at),
        "completed_at": iso(doc.updated_at) if settled else None,
    }


@router.post("/rag/search")
async def search(
    body: SearchRequest,
    request: Request,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """Embed the query through the embedder, rank the collection's vectors by cosine."""
    collection = await collection_named(session, caller.org.id, body.collection_name)
    try:
        [vector] = await app_state(request).provider.embed(collection.embedding_model, [body.query])
    except ProviderError as exc:
        raise APIError(500, f"the query could not be embedded: {exc}") from exc
    rows = await session.execute(
        select(Chunk.content, Chunk.vector, Chunk.meta, Chunk.document_id).where(
            Chunk.collection_id == collection.id
        )
    )
    chunks = [StoredChunk(*row) for row in rows]
    try:
        hits = rank(vector, chunks, body.limit)
    except ValueError as exc:
        raise APIError(500, f"the query vector does not fit the collection: {exc}") from exc
    return {
        "results": [
            {
                "content": hit.chunk.content,
                "score": round(hit.score, 6),
                "metadata": hit.chunk.meta,
                "parent_doc_id": hit.chunk.document_id,
            }
            for hit in hits
        ]
    }


@router.post("/rag/collections/{name}/ingest", status_code=202)
async def ingest(
    name: str,
    request: Request,
    file: Annotated[UploadFile, File()],
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """Store the upload and queue it for the worker; 202 before any indexing happens."""
    collection = await collection_named(session, caller.org.id, name)
    filename = file.filename or "upload"
    if not is_supported(filename):
        raise APIError(
            400,
            f"unsupported file type {filename!r}; upload one of {', '.join(SUPPORTED_SUFFIXES)}",
        )
    raw = await file.read(MAX_UPLOAD_BYTES + 1)
    if len(raw) > MAX_UPLOAD_BYTES:
        raise APIError(413, f"file larger than {MAX_UPLOAD_BYTES} bytes")
    doc = Document(
        collection_id=collection.id,
        filename=filename,
        content_type=file.content_type or "application/octet-stream",
        raw=raw,
        status="processing",
    )
    session.add(doc)
    await session.commit()
    app_state(request).worker.enqueue("ingest", doc.id)
    # AgenticOS answers the upload with the tracked document's ``id``, ``document_id`` null.
    return {
        "id": doc.id,
        "document_id": None,
        "status": "processing",
        "filename": filename,
        "collection": collection.collection_name,
        "message": "accepted; indexing in the background",
    }


@router.get("/rag/documents")
async def list_documents(
    collection_name: Annotated[str, Query(min_length=1)],
    page: PageDep,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """The collection's documents with their indexing status, newest first."""
    collection = await collection_named(session, caller.org.id, collection_name)
    query = (
        select(Document)
        .where(Document.collection_id == collection.id)
        .order_by(Document.created_at.desc(), Document.id)
    )
    return await page_of(session, query, page, lambda doc: document_json(doc, collection))


@router.get("/rag/collections/{name}/info")
async def collection_info(
    name: str,
    caller: CallerDep,
    session: SessionDep,
) -> dict:
    """How many vectors the collection holds and whether documents are still being indexed."""
    collection = await collection_named(session, caller.org.id, name)
    total = await session.scalar(
        select(func.count()).select_from(Chunk).where(Chunk.collection_id == collection.id)
    )
    processing = await session.scalar(
        select(func.count())
        .select_from(Document)
        .where(Document.collection_id == collection.id, Document.status == "processing")
    )
    return {
        "name": collection.collection_name,
        "total_vectors": total,
        "dim": collection.embedding_dim,
        "indexing_status": "indexing" if processing else "idle",
    }
