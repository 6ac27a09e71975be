"""Text into chunks, vectors into bytes, and a query ranked against stored vectors by cosine.

The target keeps vectors as float32 bytes in an ordinary table and ranks them
with numpy: no vector extension is needed on either database, and a search
still reads every row of the collection, which is the work being measured. It
also means the process's memory follows the collection: a long run that uploads
grows it (README "Memory over a long run"), where AgenticOS ranks in PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Characters per chunk and overlap between neighbours: a paragraph or two, as
# retrieval platforms commonly cut; a short document is one chunk.
CHUNK_CHARS = 1000
CHUNK_OVERLAP = 100


def chunk_text(text: str) -> list[str]:
    """Non-empty chunks of at most CHUNK_CHARS, cut at whitespace where possible."""
    text = text.strip()
    chunks = []
    start = 0
    while start < len(text):
        end = min(len(text), start + CHUNK_CHARS)
        if end < len(text):
            cut = text.rfind(" ", start + CHUNK_CHARS // 2, end)
            end = cut if cut > 0 else end
        piece = text[start:end].strip()
        if piece:
            chunks.append(piece)
        if end >= len(text):
            break
        start = max(end - CHUNK_OVERLAP, start + 1)
    return chunks


def vector_bytes(vector: list[float]) -> bytes:
    """A vector as float32 bytes for the chunks table."""
    return np.asarray(vector, dtype=np.float32).tobytes()


@dataclass(frozen=True)
class StoredChunk:
    """A chunk row as search needs it."""

    content: str
    vector: bytes
    meta: dict
    document_id: str


@dataclass(frozen=True)
class Hit:
    """One search result: the chunk and its cosine similarity to the query."""

    chunk: StoredChunk
    score: float


def rank(query: list[float], chunks: list[StoredChunk], limit: int) -> list[Hit]:
    """The ``limit`` chunks most similar to ``query`` by cosine, best first."""
    if not chunks:
        return []
    matrix = np.stack([np.frombuffer(c.vector, dtype=np.float32) for c in chunks])
    q = np.asarray(query, dtype=np.float32)
    if matrix.shape[1] != q.shape[0]:
        raise ValueError(f"query has {q.shape[0]} dimensions, the collection {matrix.shape[1]}")
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(q) or 1.0)
    scores = matrix @ q / np.where(norms == 0, 1.0, norms)
    best = np.argsort(-scores)[:limit]
    return [Hit(chunks[i], float(scores[i])) for i in best]
