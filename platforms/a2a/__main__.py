"""``python -m platforms.a2a``: the a2a-sdk server on the stub, bound to loopback unless told.

Run it with ``.venv-a2a/bin/python`` (``make a2a`` creates that environment).
A bad setting or a taken port is one line on stderr and exit 2, before anything
is served.
"""

from __future__ import annotations

import argparse
import sys

from platforms.a2a.settings import PROTOCOLS, AppSettingsError, settings_from_env
from platforms.listening import CannotListen, listening_socket

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9999


def main(argv: list[str]) -> int:
    """Serve until SIGINT/SIGTERM; 2 on a startup error."""
    parser = argparse.ArgumentParser(
        prog="python -m platforms.a2a",
        description="An A2A server on a2a-sdk 1.3.0 with one agent on the stub (A2A_STUB_URL, "
        "A2A_PROTOCOL, A2A_STREAMING, A2A_PUBLIC_URL, A2A_API_KEY).",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"default {DEFAULT_HOST}")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    parser.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        help="the A2A versions served: both (default, or A2A_PROTOCOL), or only 1.0 or 0.3",
    )
    args = parser.parse_args(argv)
    try:
        settings = settings_from_env(args.protocol)
        sock = listening_socket(args.host, args.port)
    except AppSettingsError as exc:
        print(f"platforms.a2a: {exc}", file=sys.stderr)
        return 2
    except CannotListen as exc:
        print(f"platforms.a2a: --port: {exc}; pick a free port", file=sys.stderr)
        return 2
    import uvicorn

    from platforms.a2a.app import create_app

    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    app = create_app(settings, f"http://{shown}:{port}")
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
