"""Deterministic embedding vectors: the same text always maps to the same unit vector.

Retrieval over the stub's vectors must be reproducible between runs and
between processes, so a vector is derived from a hash of its text, never from
a random state. Different texts get unrelated directions, which is all a load
test's vector search needs.

Nothing is cached: a vector is computed again for each request. Computing one
costs under a millisecond at 3,072 wide, less than encoding it as JSON floats,
while a cache of them grows with every new text (an upload's chunks are new
every time): 2,000 such vectors in the ``lru_cache`` it had took 236 MiB
(stub/README.md has the measurements, from bench/stub_vectors.py).
"""

from __future__ import annotations

import base64
import hashlib
import math
import struct

# Widths of the embedding models platforms default to (AgenticOS: text-embedding-3-large),
# so a platform checking its vectors against its collection gets what the real model sends.
MODEL_WIDTHS = {
    "text-embedding-3-large": 3072,
    "text-embedding-3-small": 1536,
    "text-embedding-ada-002": 1536,
}
# Any other model (nomic-embed-text, bge-base-en-v1.5, ...): the common 768.
DEFAULT_WIDTH = 768


def width(model: object, dimensions: object, override: int | None) -> int:
    """How wide this request's vectors are: ``--embedding-dim`` when given, else the
    request's ``dimensions`` (OpenAI's way to shorten a vector), else the model's own width."""
    if override is not None:
        return override
    if isinstance(dimensions, int) and not isinstance(dimensions, bool) and dimensions > 0:
        return dimensions
    return MODEL_WIDTHS.get(str(model or ""), DEFAULT_WIDTH)


def embed(text: str, dim: int) -> tuple[float, ...]:
    """A unit vector of width dim from the SHAKE-256 stream of the text, as float32 values."""
    raw = struct.unpack(f"<{dim}h", hashlib.shake_256(text.encode()).digest(2 * dim))
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    # Rounded through float32 so the float and base64 encodings carry the same numbers.
    packed = struct.pack(f"<{dim}f", *(v / norm for v in raw))
    return struct.unpack(f"<{dim}f", packed)


def as_base64(vector: tuple[float, ...]) -> str:
    """Little-endian float32 bytes, base64: what OpenAI sends for encoding_format=base64."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
