"""What an embedding costs the stub to compute, and what its memory does as texts pile up.

The stub keeps no vectors (stub/README.md): this prints the figures that decision
rests on. Per width, the time to compute one vector beside the time to encode it for
the answer (JSON floats, base64); then a real stub on 127.0.0.1 is sent distinct
3,072-wide texts, as an upload's chunks are, and its RSS is printed before and after.

    .venv/bin/python -m bench.stub_vectors              # 2,000 distinct texts
    .venv/bin/python -m bench.stub_vectors --texts 5000
"""

from __future__ import annotations

import argparse
import json
import tempfile
import timeit
import urllib.request
from pathlib import Path

import psutil

from stack.processes import free_port, running
from stub.vectors import MODEL_WIDTHS, as_base64, embed

# Timing repeats per figure: enough for a stable mean on a shared machine, seconds in all.
REPEATS = 200
# Texts per request: an upload's chunks arrive in batches like this.
BATCH = 10
DEFAULT_TEXTS = 2000
WIDEST_MODEL = "text-embedding-3-large"


def per_call_ms(call, repeats: int = REPEATS) -> float:
    """Mean milliseconds of one call over ``repeats``."""
    return timeit.timeit(call, number=repeats) / repeats * 1000


def cost_lines() -> list[str]:
    """Per width: compute one vector, encode it as JSON floats, encode it as base64 (ms)."""
    lines = []
    for width in sorted(set(MODEL_WIDTHS.values()) | {768}):
        vector = embed("a measured text", width)
        compute = per_call_ms(lambda w=width: embed("a measured text", w))
        as_json = per_call_ms(lambda v=vector: json.dumps({"embedding": list(v)}))
        as_b64 = per_call_ms(lambda v=vector: as_base64(v))
        lines.append(
            f"{width:>5} wide: compute {compute:.3f} ms, encode JSON {as_json:.3f} ms, "
            f"base64 {as_b64:.3f} ms"
        )
    return lines


def rss_after_distinct_texts(texts: int) -> tuple[float, float]:
    """A fresh stub's RSS (MiB) after one request and after ``texts`` distinct 3,072-wide texts."""
    port = free_port()
    with (
        tempfile.TemporaryDirectory() as tmp,
        running(["-m", "stub", "--port", str(port)], "/health", port, Path(tmp) / "stub.log") as s,
    ):
        stub = psutil.Process(s.pid)

        def post(first: int) -> None:
            body = {
                "model": WIDEST_MODEL,
                "input": [f"chunk {k}" for k in range(first, first + BATCH)],
                "encoding_format": "base64",
            }
            request = urllib.request.Request(
                s.url + "/v1/embeddings",
                json.dumps(body).encode(),
                {"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request) as answer:
                answer.read()

        post(-BATCH)
        before = stub.memory_info().rss / 2**20
        for first in range(0, texts, BATCH):
            post(first)
        return before, stub.memory_info().rss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--texts", type=int, default=DEFAULT_TEXTS)
    args = parser.parse_args()
    print("\n".join(cost_lines()))
    before, after = rss_after_distinct_texts(args.texts)
    print(
        f"stub RSS after {args.texts} distinct {MODEL_WIDTHS[WIDEST_MODEL]}-wide texts: "
        f"{before:.1f} -> {after:.1f} MiB"
    )


if __name__ == "__main__":
    main()
