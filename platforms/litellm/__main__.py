"""``python -m platforms.litellm``: LiteLLM's proxy in front of the stub, on loopback unless told.

Run it with ``.venv-litellm/bin/python`` (``make litellm-venv`` creates that environment).
Before LiteLLM is imported (it reads some of these at import), its calls home are turned off:
offline mode (no model-price map, release check or blog feed fetched: their bundled copies
are used) and telemetry disabled. The master key is generated here at every start and lives
only in this process's environment; the client key (the run's) is given in
LITELLM_KIT_CLIENT_KEY. A missing setting or a taken port is one line on stderr and exit 2,
before anything is served.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

from platforms.listening import CannotListen, listening_socket
from platforms.litellm.settings import (
    CLIENT_KEY_ENV,
    DEFAULT_STUB_URL,
    MASTER_KEY_ENV,
    MODEL_URL_ENV,
    OFFLINE,
    STUB_URL_ENV,
)

DEFAULT_HOST = "127.0.0.1"
# LiteLLM's own default port.
DEFAULT_PORT = 4000
CONFIG = Path(__file__).resolve().parent / "config.yaml"


def main(argv: list[str]) -> int:
    """Serve until SIGINT/SIGTERM; 2 on a startup error."""
    parser = argparse.ArgumentParser(
        prog="python -m platforms.litellm",
        description=f"LiteLLM's proxy in front of the stub ({STUB_URL_ENV}, {CLIENT_KEY_ENV}).",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"default {DEFAULT_HOST}")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    parser.add_argument(
        "--retries",
        type=int,
        help="how often a failed model call is tried again (default: LiteLLM's, 2, each after "
        "a wait: a failing provider then costs a client seconds per request)",
    )
    args = parser.parse_args(argv)
    if not os.environ.get(CLIENT_KEY_ENV):
        print(
            f"platforms.litellm: {CLIENT_KEY_ENV} is not set; give the key clients use "
            "(make litellm passes LOAD_PASSWORD)",
            file=sys.stderr,
        )
        return 2
    try:
        sock = listening_socket(args.host, args.port)
    except CannotListen as exc:
        print(f"platforms.litellm: --port: {exc}; pick a free port", file=sys.stderr)
        return 2
    stub = os.environ.get(STUB_URL_ENV, DEFAULT_STUB_URL).rstrip("/")
    os.environ.update(
        {
            **OFFLINE,
            MODEL_URL_ENV: f"{stub}/v1",
            "CONFIG_FILE_PATH": str(CONFIG),
            MASTER_KEY_ENV: "sk-" + secrets.token_urlsafe(32),
        }
    )
    import litellm
    import uvicorn
    from litellm.proxy.proxy_server import app

    if args.retries is not None:
        # What litellm_settings' num_retries sets; the config leaves LiteLLM's default.
        litellm.num_retries = args.retries

    config = uvicorn.Config(app, loop="uvloop", log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
