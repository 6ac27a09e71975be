"""Run in a process of its own (it imports Locust, which patches the standard library):
the turns of a short and a long run of bench/streams.py's load-process path against the
chat server at argv[1] over argv[2] (ws or sse), argv[3] turns in flight, its first token
argv[4] ms after each message; and the objects the collector alone freed after each run,
printed as JSON."""

from __future__ import annotations

import gc
import json
import os
import sys

from bench.streams import measure


def garbage_after(
    url: str, protocol: str, in_flight: int, first_token_ms: float, seconds: float
) -> dict[str, int]:
    """The turns one run of ``seconds`` made, and the objects only the collector then freed."""
    gc.collect()
    gc.disable()
    try:
        turns = measure(url, protocol, in_flight, first_token_ms, seconds)["turns"]
        return {"turns": turns, "garbage": gc.collect()}
    finally:
        gc.enable()


if __name__ == "__main__":
    os.environ.setdefault("LOAD_PASSWORD", "bench")
    url, protocol, in_flight, first_token_ms = sys.argv[1:5]
    runs = [garbage_after(url, protocol, int(in_flight), float(first_token_ms), s) for s in (2, 6)]
    print(json.dumps(runs))
