"""How an AG-UI run is asked for, for one deployment: where its agent answers, the header its key
goes in, and the ``RunAgentInput`` body, in one place for the dialect and the seed.

AG-UI has one request: a ``POST`` of ``RunAgentInput`` (camelCase: ``threadId``, ``runId``,
``messages``, ``tools``, ``context``, ``state``, ``forwardedProps``) to a URL the server's
framework chooses (agno ``/agui``, ag-ui-langgraph ``/`` by default), answered with
server-sent events. The kit sends the user's one new message and no tools of its own (an
AG-UI ``tools`` entry is a *frontend* tool the client would run; the agent's own tools are
its server's), the empty state and context a fresh client sends, and continues a
conversation by naming its thread again: both servers keep a thread's history themselves
(platforms' WIRE.md, workloads/ag_ui/WIRE.md). ``protocolVersion`` is not sent: nothing
either server did depends on it, and a server on an older ag-ui-protocol need not know it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import msgspec

from engine.http import HttpCall

# Where agno's AG-UI interface answers (``make agno``), the demo's server.
DEFAULT_PATH = "/agui"
# The header a key goes in when the seed is not told another: a bearer token.
DEFAULT_KEY_HEADER = "Authorization"


@dataclass(frozen=True)
class AGUISeeded:
    """What the seed found, as the fixture keeps it: the header the agent's key goes in and where
    the agent answers, never the key."""

    # Decided by the seed's run: "" for an agent that answered without a key.
    key_header: str
    # The agent's path under the API's URL (agno: /agui; ag-ui-langgraph: what its app chose).
    path: str = DEFAULT_PATH


class Wire:
    """Runs for one deployment: its agent's path and the headers every run carries."""

    def __init__(self, run_id: str, path: str, auth: Mapping[str, str]):
        self.run_id = run_id
        self.path = path
        self.headers = {
            **auth,
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
        }

    def thread(self, k: int) -> str:
        """The thread arrival k opens (the client names AG-UI threads)."""
        return f"loadkit-{self.run_id}-t{k}"

    def run(self, k: int, text: str, thread: str) -> HttpCall:
        """Arrival k's run: the user's ``text`` as the one new message on ``thread``."""
        body = {
            "threadId": thread,
            "runId": f"loadkit-{self.run_id}-r{k}",
            "messages": [{"id": f"loadkit-{self.run_id}-m{k}", "role": "user", "content": text}],
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {},
        }
        return HttpCall("POST", self.path, msgspec.json.encode(body), self.headers)
