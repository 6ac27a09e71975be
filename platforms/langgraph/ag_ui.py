"""``python -m platforms.langgraph.ag_ui``: the kit's graph over AG-UI, served by ag-ui-langgraph.

The second way a LangGraph team puts its agent in front of a user: not the Agent Server
(``python -m platforms.langgraph``) but CopilotKit's AG-UI integration, ``ag-ui-langgraph``
(pinned in requirements-langgraph.txt), whose ``add_langgraph_fastapi_endpoint`` serves a
compiled graph as one ``POST`` answered with AG-UI's server-sent events. What runs is its
own code over the same graph (graph.py's ``builder``: the model on the stub, the
``lookup`` tool node), compiled with LangGraph's in-memory checkpointer, since
ag-ui-langgraph reads a thread's state before every run (without one, every run ends
``RUN_ERROR: No checkpointer set``) and continues a conversation by its ``threadId``.

The agent answers at ``/`` (``GET /health`` beside it, as the integration adds it); the
run route needs ``x-api-key: <LOADKIT_API_KEY>`` (a FastAPI dependency, the way the
integration takes one), as the Agent Server's routes do. Bound to 127.0.0.1 unless told;
a missing setting or a taken port is one line and exit 2, before anything is served.
"""

from __future__ import annotations

import argparse
import hmac
import os
import sys

from platforms.langgraph.settings import (
    KEY_HEADER,
    AppSettings,
    AppSettingsError,
    server_environment,
    settings_from_env,
)
from platforms.listening import CannotListen, listening_socket

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8124
# Where the agent answers (the integration's default); its health is <path>health.
AGENT_PATH = "/"
AGENT_NAME = "loadkit-agent"


def create_app(settings: AppSettings):
    """The FastAPI app: the graph behind ag-ui-langgraph's endpoint, guarded by the key."""
    # graph.py reads the stub's address and the embedding width from the environment.
    os.environ.update(
        {k: v for k, v in server_environment(settings).items() if k.startswith("LANGGRAPH_")}
    )
    from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
    from fastapi import Depends, FastAPI, Header, HTTPException
    from langgraph.checkpoint.memory import InMemorySaver

    from platforms.langgraph.graph import builder

    key = settings.key.encode()

    def keyed(x_api_key: str = Header(default="")) -> None:
        """401 unless the request carries the key in x-api-key (KEY_HEADER)."""
        if not hmac.compare_digest(x_api_key.encode(), key):
            raise HTTPException(status_code=401, detail=f"invalid {KEY_HEADER}")

    app = FastAPI(title="loadkit AG-UI (ag-ui-langgraph)")
    agent = LangGraphAgent(name=AGENT_NAME, graph=builder.compile(checkpointer=InMemorySaver()))
    add_langgraph_fastapi_endpoint(app, agent, AGENT_PATH, dependencies=[Depends(keyed)])
    return app


def main(argv: list[str]) -> int:
    """Serve until SIGINT/SIGTERM; 2 on a startup error."""
    parser = argparse.ArgumentParser(
        prog="python -m platforms.langgraph.ag_ui",
        description="The kit's LangGraph graph over AG-UI (ag-ui-langgraph) on the stub "
        "(LANGGRAPH_STUB_URL, LOADKIT_API_KEY).",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"default {DEFAULT_HOST}")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    args = parser.parse_args(argv)
    try:
        settings = settings_from_env()
        sock = listening_socket(args.host, args.port)
    except AppSettingsError as exc:
        print(f"platforms.langgraph.ag_ui: {exc}", file=sys.stderr)
        return 2
    except CannotListen as exc:
        print(f"platforms.langgraph.ag_ui: --port: {exc}; pick a free port", file=sys.stderr)
        return 2
    import uvicorn

    config = uvicorn.Config(create_app(settings), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
