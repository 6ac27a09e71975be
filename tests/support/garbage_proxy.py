"""``python -m tests.support.garbage_proxy``: a hostile platform answering 200 with the wrong body.

It stands in front of the reference target and passes every request through,
except every ``--every``-th list read (``GET ...?limit=20``, the run's api_read)
and retrieval (``POST /rag/search``, after the first, which is preflight's):
those it answers ``200`` with a body the contract does not allow (an HTML page,
a list without ``items`` or without ``total``, JSON cut short, a search without
results). It counts what it served, so a test can hold the run's failed samples
against the faults actually injected. ``GET /__garbage__`` says how many, by kind.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections import Counter

from tests.support.passthrough import PassThrough, serve

# What a list read may get instead of its list: each a 200 the contract forbids.
LIST_GARBAGE = (
    ("html", b"<html><body><h1>502 Bad Gateway</h1></body></html>"),
    ("no items", b'{"data": [], "total": 0}'),
    ("no total", b'{"items": []}'),
    ("cut short", b'{"items": [{"id": "a"'),
)
SEARCH_GARBAGE = (
    ("html", b"<!doctype html><title>maintenance</title>"),
    ("no results", b'{"results": []}'),
)
STATS_PATH = "/__garbage__"


class _State:
    """Counts shared by the handler threads."""

    def __init__(self, every: int):
        self.every = every
        self.lock = threading.Lock()
        self.seen: Counter[str] = Counter()
        self.served: Counter[str] = Counter()

    def garbage_for(self, method: str, path: str) -> bytes | None:
        """The garbage this request gets, or None to pass it through; counted when served."""
        if method == "GET" and path.endswith("?limit=20"):
            kind, table = "list", LIST_GARBAGE
        elif method == "POST" and path.endswith("/rag/search"):
            kind, table = "search", SEARCH_GARBAGE
        else:
            return None
        with self.lock:
            self.seen[kind] += 1
            n = self.seen[kind]
            if kind == "search" and n == 1:
                return None
            if n % self.every:
                return None
            name, body = table[(n // self.every) % len(table)]
            self.served[f"{kind}: {name}"] += 1
            return body


class _Handler(PassThrough):
    state: _State

    def intercept(self, body: bytes) -> tuple[int, bytes] | None:
        """The counts at STATS_PATH; garbage (a 200) for the requests chosen for it."""
        if self.path == STATS_PATH:
            with self.state.lock:
                served = dict(self.state.served)
            return 200, json.dumps({"garbage": sum(served.values()), "by_kind": served}).encode()
        garbage = self.state.garbage_for(self.command, self.path)
        return None if garbage is None else (200, garbage)


def main() -> None:
    """Serve on 127.0.0.1 until terminated."""
    parser = argparse.ArgumentParser(prog="python -m tests.support.garbage_proxy")
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--every", type=int, default=3)
    args = parser.parse_args()
    _Handler.state = _State(args.every)
    serve(_Handler, args.upstream, args.port)


if __name__ == "__main__":
    main()
