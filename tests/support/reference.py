"""Sign in to the reference target, make an agent on it and run it, as its tests do (the
servers themselves start from stack/reference_servers.py).
"""

from __future__ import annotations

import uuid

from platforms.reference.settings import DEFAULT_ADMIN_EMAIL, DEFAULT_ADMIN_PASSWORD
from workloads.agenticos.client import AgenticOSClient
from workloads.setup_client import RUN_TIMEOUT_S


def signed_in(api_url: str) -> AgenticOSClient:
    """A client signed in as the target's default admin, in their personal organisation."""
    client = AgenticOSClient(api_url)
    client.sign_in(DEFAULT_ADMIN_EMAIL, DEFAULT_ADMIN_PASSWORD)
    return client


def make_agent(client: AgenticOSClient, base_url: str, publish: bool = True) -> tuple[str, str]:
    """A model profile at ``base_url`` and an agent on it: (profile id, agent id)."""
    label = f"profile-{uuid.uuid4().hex[:8]}"
    profile = client.post(
        "/providers/model-profiles",
        {"label": label, "provider": "openai", "model": "m", "base_url": base_url},
    )
    agent = client.post(
        "/agents",
        {
            "spec": {
                "name": f"agent-{label}",
                "instructions": "Be brief.",
                "model_profile_id": profile["id"],
            }
        },
    )
    if publish:
        client.post(f"/agents/{agent['id']}/publish", {})
    return profile["id"], agent["id"]


def run_raw(client: AgenticOSClient, agent_id: str, prompt: str) -> dict:
    """POST /agents/{id}/run as the target answers it, every field (the setup client's own
    run_agent holds the answer to the dialect's shape, which names only what the kit reads)."""
    return client.post(f"/agents/{agent_id}/run", {"prompt": prompt}, timeout=RUN_TIMEOUT_S)
