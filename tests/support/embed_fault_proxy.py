"""``python -m tests.support.embed_fault_proxy``: an embedder that fails a run's uploads by index.

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
import json
import re
import threading

from tests.support.passthrough import PassThrough, serve

FAULTS_PATH = "/__faults__"
# A run's upload, as both dialects write its first line; group 1 is the arrival index.
UPLOAD = re.compile(r"Load test document \S+-(\d+)\.")
# The provider's answer to a failed call, in OpenAI's error shape.
ERROR_BODY = json.dumps(
    {
        "error": {
            "message": "embedder outage (tests.support.embed_fault_proxy)",
            "type": "server_error",
        }
    }
).encode()


class _State:
    """The fault rule and the indexes failed so far, shared by handler threads."""

    def __init__(self, every: int):
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


class _Handler(PassThrough):
    state: _State

    def intercept(self, body: bytes) -> tuple[int, bytes] | None:
        """The failed indexes at FAULTS_PATH; a 500 for an upload's embedding chosen to fail."""
        if self.path == FAULTS_PATH:
            with self.state.lock:
                failed = sorted(self.state.failed)
            return 200, json.dumps({"failed": failed}).encode()
        if self.command == "POST" and self.state.fails(self.path, body):
            return 500, ERROR_BODY
        return None


def main() -> None:
    """Serve on 127.0.0.1 until terminated."""
    parser = argparse.ArgumentParser(prog="python -m tests.support.embed_fault_proxy")
    parser.add_argument("--upstream", required=True, help="the stub's URL")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--every", type=int, default=2, help="fail uploads whose index k %% N == 0")
    args = parser.parse_args()
    _Handler.state = _State(args.every)
    serve(_Handler, args.upstream, args.port)


if __name__ == "__main__":
    main()
