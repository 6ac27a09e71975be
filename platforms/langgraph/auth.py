"""The server's authentication: one key, checked on every request, through LangGraph's custom auth.

langgraph-api without an auth config lets anyone in (the in-memory server has
no auth of its own); a deployment adds a ``langgraph_sdk.Auth`` handler named in
``langgraph.json``'s ``auth.path``. This one accepts the key the launcher got
from the operator, in the header the official SDK sends its key in
(``x-api-key``), and refuses anything else with 401. The key lives in the
environment only.
"""

from __future__ import annotations

import hmac
import os

from langgraph_sdk import Auth

KEY = os.environ["LOADKIT_API_KEY"].encode()
auth = Auth()


@auth.authenticate
async def authenticate(headers: dict[bytes, bytes]) -> str:
    """The caller's identity when its x-api-key is the key; 401 otherwise."""
    if not hmac.compare_digest(headers.get(b"x-api-key", b""), KEY):
        raise Auth.exceptions.HTTPException(status_code=401, detail="invalid x-api-key")
    return "loadkit"
