"""The proxy's keys: the master key (the admin's, generated at every start) and one client key,
the one the kit's run signs in with, allowed the one model.

LiteLLM's own virtual keys (``/key/generate``) live in Postgres through Prisma, whose query
engine LiteLLM fetches from Prisma's servers at run time: not reachable here, and not what
a load test of the proxy's request path needs. What a virtual key does on every request
(a key other than the master key, checked, limited to its models) is what this hook does,
through LiteLLM's documented custom-auth setting, with LiteLLM's own model check after it
(``custom_auth_run_common_checks``). Without a database LiteLLM answers any key but the
master key with HTTP 400 "No connected db."; with this hook a wrong key is a 401, as a
virtual-key deployment answers it.
"""

from __future__ import annotations

import hmac
import os

from fastapi import Request
from litellm.proxy._types import LitellmUserRoles, ProxyException, UserAPIKeyAuth

from platforms.litellm.settings import CLIENT_KEY_ENV, MASTER_KEY_ENV, MODEL


def _is(given: str | None, env: str) -> bool:
    expected = os.environ.get(env, "")
    return bool(given and expected) and hmac.compare_digest(str(given).encode(), expected.encode())


async def user_api_key_auth(request: Request, api_key: str | None) -> UserAPIKeyAuth:
    """The key's identity: the admin for the master key, the client limited to MODEL for the
    client key; any other key, or none, is refused with 401 in OpenAI's error body."""
    del request
    if _is(api_key, MASTER_KEY_ENV):
        return UserAPIKeyAuth(api_key=api_key, user_role=LitellmUserRoles.PROXY_ADMIN)
    if _is(api_key, CLIENT_KEY_ENV):
        return UserAPIKeyAuth(api_key=api_key, key_alias="loadkit", models=[MODEL])
    raise ProxyException(
        message="Authentication Error: " + ("invalid key" if api_key else "no key given"),
        type="auth_error",
        param="api_key",
        code=401,
    )
