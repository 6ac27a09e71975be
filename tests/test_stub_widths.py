"""The stub answers each known embedding model at its real width, so a platform that checks
its vectors (AgenticOS: "Embedding dimension mismatch") is fed what its real model would send.

A stub that answered 768 to ``text-embedding-3-large`` made every upload to a default
AgenticOS fail, and nothing said why; these pin the widths, ``dimensions`` and the override.
"""

from __future__ import annotations

import json

import pytest

from tests.test_stub_repeatable import _post, _stub

pytestmark = pytest.mark.system


def _width(url: str, path: str, body: dict) -> int:
    status, raw = _post(url + path, body)
    assert status == 200, raw
    answer = json.loads(raw)
    if path == "/v1/embeddings":
        return len(answer["data"][0]["embedding"])
    if path == "/api/embed":
        return len(answer["embeddings"][0])
    return len(answer["embedding"])


def test_known_models_at_their_real_width_and_dimensions_honoured(tmp_path):
    with _stub(tmp_path, "widths") as server:
        url = server.url
        openai = "/v1/embeddings"
        assert _width(url, openai, {"model": "text-embedding-3-large", "input": "x"}) == 3072
        assert _width(url, openai, {"model": "text-embedding-3-small", "input": "x"}) == 1536
        assert _width(url, openai, {"model": "text-embedding-ada-002", "input": "x"}) == 1536
        assert _width(url, openai, {"model": "bge-base-en-v1.5", "input": "x"}) == 768
        assert _width(url, openai, {"input": "x"}) == 768
        shortened = {"model": "text-embedding-3-large", "input": "x", "dimensions": 256}
        assert _width(url, openai, shortened) == 256
        ollama = {"model": "text-embedding-3-small", "input": "x"}
        assert _width(url, "/api/embed", ollama) == 1536
        legacy = {"model": "text-embedding-3-large", "prompt": "x"}
        assert _width(url, "/api/embeddings", legacy) == 3072


def test_embedding_dim_overrides_every_model(tmp_path):
    with _stub(tmp_path, "override", "--embedding-dim", "64") as server:
        url = server.url
        large = {"model": "text-embedding-3-large", "input": "x", "dimensions": 256}
        assert _width(url, "/v1/embeddings", large) == 64
        assert _width(url, "/api/embed", {"model": "text-embedding-3-large", "input": "x"}) == 64
