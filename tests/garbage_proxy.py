"""``python -m tests.garbage_proxy``: a hostile platform that answers 200 with the wrong body.

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
import http.client
import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

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
# Headers not forwarded: hop-by-hop, or recomputed for the body actually sent.
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class _State:
    """Counts shared by the handler threads."""

    def __init__(self, upstream: str, every: int):
        parts = urlsplit(upstream)
        self.host, self.port = parts.hostname, parts.port
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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: _State

    def log_message(self, *_args) -> None:
        """Quiet: a run sends thousands of requests."""

    def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in HOP_HEADERS:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _proxy(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path == STATS_PATH:
            with self.state.lock:
                served = dict(self.state.served)
            stats = {"garbage": sum(served.values()), "by_kind": served}
            self._answer(200, [("Content-Type", "application/json")], json.dumps(stats).encode())
            return
        garbage = self.state.garbage_for(self.command, self.path)
        if garbage is not None:
            self._answer(200, [("Content-Type", "application/json")], garbage)
            return
        upstream = http.client.HTTPConnection(self.state.host, self.state.port, timeout=60)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
            upstream.request(self.command, self.path, body=body, headers=headers)
            answer = upstream.getresponse()
            self._answer(answer.status, answer.getheaders(), answer.read())
        finally:
            upstream.close()

    do_GET = do_POST = do_DELETE = _proxy


def main() -> None:
    """Serve on 127.0.0.1 until terminated."""
    parser = argparse.ArgumentParser(prog="python -m tests.garbage_proxy")
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--every", type=int, default=3)
    args = parser.parse_args()
    _Handler.state = _State(args.upstream, args.every)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), _Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
