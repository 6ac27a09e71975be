"""The pass-through HTTP proxy the misbehaving servers in tests/ are built on.

A hostile proxy is a real process in front of a real server: it forwards every
request as it came and answers a chosen few itself. What differs between them
is only which requests they answer and with what, so each subclasses
``PassThrough`` and overrides ``intercept``.
"""

from __future__ import annotations

import http.client
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

# Headers not forwarded: hop-by-hop, or recomputed for the body actually sent.
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length"}
JSON = [("Content-Type", "application/json")]
# Seconds the upstream may take: a model call behind the proxy is slow on purpose.
UPSTREAM_TIMEOUT_S = 60


class PassThrough(BaseHTTPRequestHandler):
    """Forwards to ``upstream``; ``intercept`` answers instead where the proxy misbehaves."""

    protocol_version = "HTTP/1.1"
    upstream = ""

    def log_message(self, *_args) -> None:
        """Quiet: a run sends thousands of requests; each proxy counts what matters."""

    def intercept(self, body: bytes) -> tuple[int, bytes] | None:
        """(status, JSON body) to answer this request with, or None to forward it."""
        return None

    def answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        """Send one whole answer on the kept-alive connection."""
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in HOP_HEADERS:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        own = self.intercept(body)
        if own is not None:
            self.answer(own[0], JSON, own[1])
            return
        parts = urlsplit(self.upstream)
        upstream = http.client.HTTPConnection(
            parts.hostname, parts.port, timeout=UPSTREAM_TIMEOUT_S
        )
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
            upstream.request(self.command, self.path, body=body, headers=headers)
            reply = upstream.getresponse()
            self.answer(reply.status, reply.getheaders(), reply.read())
        finally:
            upstream.close()

    do_GET = do_POST = do_DELETE = _handle


def serve(handler: type[PassThrough], upstream: str, port: int) -> None:
    """Serve ``handler`` on 127.0.0.1:``port`` in front of ``upstream`` until terminated."""
    handler.upstream = upstream
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    server.serve_forever()
