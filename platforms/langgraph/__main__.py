"""``python -m platforms.langgraph``: LangGraph's Agent Server on the stub, on loopback unless told.

Run it with ``.venv-langgraph/bin/python`` (``make langgraph`` creates that
environment). It serves ``langgraph_api.server:app`` with the in-memory runtime
under uvicorn, which is what ``langgraph dev`` does, but on a socket bound here:
``langgraph dev`` answers a taken port by serving on another one with a warning,
and a kit that then talks to the old port measures someone else's server. A
missing setting or a taken port is one line on stderr and exit 2, before
anything is served.
"""

from __future__ import annotations

import argparse
import os
import sys

from platforms.langgraph.settings import (
    N_JOBS_PER_WORKER,
    AppSettingsError,
    server_environment,
    settings_from_env,
)
from platforms.listening import CannotListen, listening_socket

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8123
# Variables that would send traces to LangSmith or switch on its control-plane features;
# dropped so that an operator's shell cannot make the server talk to anything but the stub.
OUTSIDE = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGSMITH_CONTROL_PLANE_API_KEY")


def main(argv: list[str]) -> int:
    """Serve until SIGINT/SIGTERM; 2 on a startup error."""
    parser = argparse.ArgumentParser(
        prog="python -m platforms.langgraph",
        description="LangGraph's Agent Server on the stub (LANGGRAPH_STUB_URL, LANGGRAPH_DATA_DIR, "
        "LOADKIT_API_KEY).",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"default {DEFAULT_HOST}")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    parser.add_argument(
        "--n-jobs-per-worker",
        type=int,
        default=N_JOBS_PER_WORKER,
        help=f"runs executed at once by the in-memory queue (default {N_JOBS_PER_WORKER})",
    )
    args = parser.parse_args(argv)
    try:
        settings = settings_from_env(args.n_jobs_per_worker)
        sock = listening_socket(args.host, args.port)
    except AppSettingsError as exc:
        print(f"platforms.langgraph: {exc}", file=sys.stderr)
        return 2
    except CannotListen as exc:
        print(f"platforms.langgraph: --port: {exc}; pick a free port", file=sys.stderr)
        return 2
    for name in OUTSIDE:
        os.environ.pop(name, None)
    os.environ.update(server_environment(settings))
    # The in-memory runtime pickles its state under the working directory every 10 s.
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    os.chdir(settings.data_dir)
    import uvicorn

    config = uvicorn.Config(
        "langgraph_api.server:app", log_level="warning", access_log=False, lifespan="on"
    )
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
