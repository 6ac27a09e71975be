"""Indexing an uploaded document: parse, chunk, embed through the stub, store the vectors.

The upload endpoint only stores the file and answers 202; this job, run by the
background worker, does the work and leaves the document ``done`` or
``error`` with the reason, which is what ``/rag/documents`` shows.
"""

from __future__ import annotations

import json
from pathlib import PurePath

from sqlalchemy import delete
from sqlalchemy.orm import undefer

from platforms.reference.models import Chunk, Collection, Document, utcnow
from platforms.reference.provider import ProviderError
from platforms.reference.retrieval import chunk_text, vector_bytes
from platforms.reference.state import AppState

# File types the parser understands: all text, decoded as UTF-8.
SUPPORTED_SUFFIXES = (".txt", ".md", ".csv", ".json")
# Largest upload accepted (413 above): far above any synthetic document, small for a worker.
MAX_UPLOAD_BYTES = 10 * 1024 * 1024
# Chunks embedded per request to the embedder: one round trip for a typical document.
EMBED_BATCH = 64


def is_supported(filename: str) -> bool:
    """True for the file types this platform parses."""
    return PurePath(filename).suffix.lower() in SUPPORTED_SUFFIXES


def parse(filename: str, raw: bytes) -> str:
    """The document's text; ValueError with the reason when it cannot be read."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{filename} is not UTF-8 text: {exc.reason} at byte {exc.start}"
        ) from None
    if filename.lower().endswith(".json"):
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{filename} is not valid JSON: {exc.msg} at line {exc.lineno}"
            ) from None
    if not text.strip():
        raise ValueError(f"{filename} is empty")
    return text


# What AgenticOS 0.0.247 stores for a document whose vectors are not the collection's width.
WIDTH_MISMATCH = (
    "The document could not be indexed (ValueError) - check the collection's embedding "
    "credential, then retry the upload. The worker log has the full error."
)


async def index_document(state: AppState, doc_id: str) -> None:
    """Index one document and record ``done`` (with its chunk count) or ``error``."""
    async with state.db.session() as session:
        doc = await session.get(Document, doc_id, options=[undefer(Document.raw)])
        if doc is None or doc.status != "processing":
            return
        collection = await session.get(Collection, doc.collection_id)
        if collection is None:
            return
        try:
            chunks = chunk_text(parse(doc.filename, doc.raw))
            vectors = []
            for start in range(0, len(chunks), EMBED_BATCH):
                batch = chunks[start : start + EMBED_BATCH]
                vectors += await state.provider.embed(collection.embedding_model, batch)
            if any(len(v) != collection.embedding_dim for v in vectors):
                # AgenticOS stores only this sentence (the width is in its worker's log).
                raise ValueError(WIDTH_MISMATCH)
        except (ValueError, ProviderError) as exc:
            doc.status, doc.error, doc.updated_at = "error", str(exc), utcnow()
            await session.commit()
            return
        await session.execute(delete(Chunk).where(Chunk.document_id == doc.id))
        session.add_all(
            Chunk(
                collection_id=collection.id,
                document_id=doc.id,
                ordinal=i,
                content=text,
                vector=vector_bytes(vector),
                meta={"filename": doc.filename, "chunk": i},
            )
            for i, (text, vector) in enumerate(zip(chunks, vectors, strict=True))
        )
        doc.status, doc.chunk_count, doc.updated_at = "done", len(chunks), utcnow()
        await session.commit()
