"""``python -m tests.embed_fault_proxy``: an embedder that fails the uploads a run makes, by index.

It stands in front of the stub as a platform's embedding provider and passes
every request through, except an embeddings request whose input is a run's
upload (the dialects' ``Load test document <run>-<k>.``) with ``k`` a multiple
of ``--every``: that one is answered 500, as a provider's outage is, on every
retry. Seeding's documents, preflight's upload and retrieval's queries carry
no such line, so they pass, and the uploads that fail are known by index before
the run: ``GET /__faults__`` lists the indexes it failed.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

FAULTS_PATH = "/__faults__"
# A run's upload, as both dialects write its first line; group 1 is the arrival index.
UPLOAD = re.compile(r"Load test document \S+-(\d+)\.")
# The provider's answer to a failed call, in OpenAI's error shape.
ERROR_BODY = json.dumps(
    {"error": {"message": "embedder outage (tests.embed_fault_proxy)", "type": "server_error"}}
).encode()
# Headers not forwarded: hop-by-hop, or recomputed for the body actually sent.
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class _State:
    """The upstream, the fault rule and the indexes failed so far, shared by handler threads."""

    def __init__(self, upstream: str, every: int):
        parts = urlsplit(upstream)
        self.host, self.port = parts.hostname, parts.port
        self.every = every
        self.lock = threading.Lock()
        self.failed: set[int] = set()

    def fails(self, path: str, body: bytes) -> bool:
        """Whether this request is an upload's embedding to fail; noted when it is."""
        if not path.endswith("/embeddings"):
            return False
        try:
            given = json.loads(body).get("input")
        except (ValueError, AttributeError):
            return False
        texts = [given] if isinstance(given, str) else given or []
        indexes = {int(m.group(1)) for t in texts for m in UPLOAD.finditer(str(t))}
        chosen = {k for k in indexes if k % self.every == 0}
        if chosen:
            with self.lock:
                self.failed |= chosen
        return bool(chosen)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: _State

    def log_message(self, *_args) -> None:
        """Quiet: only the faults matter, and /__faults__ says them."""

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
        json_type = [("Content-Type", "application/json")]
        if self.path == FAULTS_PATH:
            with self.state.lock:
                failed = sorted(self.state.failed)
            self._answer(200, json_type, json.dumps({"failed": failed}).encode())
            return
        if self.command == "POST" and self.state.fails(self.path, body):
            self._answer(500, json_type, ERROR_BODY)
            return
        upstream = http.client.HTTPConnection(self.state.host, self.state.port, timeout=60)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
            upstream.request(self.command, self.path, body=body, headers=headers)
            answer = upstream.getresponse()
            self._answer(answer.status, answer.getheaders(), answer.read())
        finally:
            upstream.close()

    do_GET = do_POST = _proxy


def main() -> None:
    """Serve on 127.0.0.1 until terminated."""
    parser = argparse.ArgumentParser(prog="python -m tests.embed_fault_proxy")
    parser.add_argument("--upstream", required=True, help="the stub's URL")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--every", type=int, default=2, help="fail uploads whose index k %% N == 0")
    args = parser.parse_args()
    _Handler.state = _State(args.upstream, args.every)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), _Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
