"""``python -m tests.support.refusing_proxy``: a platform on which one list read is not offered.

It stands in front of the reference target and passes every request through,
except GETs whose path starts with ``--refuse``: those it answers 405, as
FastAPI answers a path that exists only with other methods (AgenticOS 0.0.247's
``GET /agents/{id}/triggers/{tid}``). The follow-up's tests use it to show that a
read the platform does not offer costs only the accepted work that depended on it.
"""

from __future__ import annotations

import argparse

from tests.support.passthrough import PassThrough, serve


class _Handler(PassThrough):
    refused = ""

    def intercept(self, body: bytes) -> tuple[int, bytes] | None:
        """405 for a GET of the refused path, else None (passed through)."""
        if self.command == "GET" and self.path.startswith(self.refused):
            return 405, b'{"detail": "Method Not Allowed"}'
        return None


def main() -> None:
    """Serve on 127.0.0.1 until terminated."""
    parser = argparse.ArgumentParser(prog="python -m tests.support.refusing_proxy")
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--refuse", required=True, help="path prefix whose GETs answer 405")
    args = parser.parse_args()
    _Handler.refused = args.refuse
    serve(_Handler, args.upstream, args.port)


if __name__ == "__main__":
    main()
