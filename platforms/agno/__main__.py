"""``python -m platforms.agno``: agno's AgentOS on the stub, bound to loopback unless told.

Run it with ``.venv-agno/bin/python`` (``make agno`` creates that environment).
A missing setting or a taken port is one line on stderr and exit 2, before
anything is served.
"""

from __future__ import annotations

import argparse
import sys

from platforms.agno.app import AppSettingsError, create_app, settings_from_env
from platforms.listening import CannotListen, listening_socket

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7777


def main(argv: list[str]) -> int:
    """Serve until SIGINT/SIGTERM; 2 on a startup error."""
    parser = argparse.ArgumentParser(
        prog="python -m platforms.agno",
        description="agno's AgentOS on the stub (AGNO_STUB_URL, AGNO_DATA_DIR, OS_SECURITY_KEY).",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"default {DEFAULT_HOST}")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    args = parser.parse_args(argv)
    try:
        settings = settings_from_env()
        sock = listening_socket(args.host, args.port)
    except AppSettingsError as exc:
        print(f"platforms.agno: {exc}", file=sys.stderr)
        return 2
    except CannotListen as exc:
        print(f"platforms.agno: --port: {exc}; pick a free port", file=sys.stderr)
        return 2
    import uvicorn

    config = uvicorn.Config(create_app(settings), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
