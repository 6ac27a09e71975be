"""What seeding makes on an agno AgentOS: the agent checked, its knowledge filled.

AgentOS defines agents and knowledge bases in code (platforms/agno/app.py), not
over the API, so seeding checks that the agent is served and fills the
knowledge base the way a user would: each synthetic document uploaded to
``/knowledge/content`` and followed to its final status. It is idempotent by
name: a document already there is not uploaded again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from engine.seam import SeedError, SeedSetup
from workloads.agno.client import AgnoClient
from workloads.corpus import document_name, document_text
from workloads.setup_client import APIError

AGENT_ID = "loadkit-agent"
KNOWLEDGE_NAME = "loadkit-docs"
# Where agno mounts the WhatsApp interface unless the deployment says otherwise.
WHATSAPP_PREFIX = "/whatsapp"
DEFAULT_API_URL = "http://127.0.0.1:7777"
# Seconds to wait for agno's background tasks to embed the uploads: generous for a busy
# machine, bounded so a platform that never finishes is refused, not waited on.
INDEX_WAIT_S = 120.0
POLL_S = 0.25
# Final content states (agno.knowledge.content.ContentStatus); anything else is still working.
DONE, FAILED_STATES = "completed", ("failed", "partial")


@dataclass(frozen=True)
class AgnoSeeded:
    """What the seed found or filled: names and a path, never the key. A fixture written
    before this record kept the WhatsApp path in ``extra``; it reads the same."""

    agent_id: str
    # The knowledge base the seed filled (its name in AgentOS).
    collection_name: str
    documents: int
    whatsapp_prefix: str = WHATSAPP_PREFIX


def follow(client: AgnoClient, content_id: str, deadline: float) -> tuple[str, str]:
    """Poll one upload's status until it is final or the deadline passes: (status, message)."""
    while True:
        status, message = client.content_status(content_id)
        if status == DONE or status in FAILED_STATES or time.monotonic() >= deadline:
            return status, message
        time.sleep(POLL_S)


def fill_knowledge(client: AgnoClient, documents: int) -> int:
    """Upload the documents not there yet and follow each to completed; how many were new."""
    present = client.content_names()
    missing = [i for i in range(documents) if present.get(document_name(i)) != DONE]
    ids = [client.upload_text(document_name(i), document_text(i)) for i in missing]
    deadline = time.monotonic() + INDEX_WAIT_S
    for index, content_id in zip(missing, ids, strict=True):
        status, message = follow(client, content_id, deadline)
        if status != DONE:
            raise SeedError(
                f"document {document_name(index)} ended {status!r} ({message or 'no message'}): "
                "check that AgentOS reaches its embedder (the stub), then run the seed again"
            )
    return len(missing)


def make(setup: SeedSetup) -> AgnoSeeded:
    """Check the agent is served and fill its knowledge; SeedError if not."""
    with AgnoClient(setup.api_url, setup.auth) as client:
        try:
            agents = {a.id for a in client.agents()}
        except APIError as exc:
            raise SeedError(
                f"{exc}: export LOAD_PASSWORD with the server's OS_SECURITY_KEY"
            ) from None
        if AGENT_ID not in agents:
            raise SeedError(
                f"agent {AGENT_ID!r} is not served at {setup.api_url} (found "
                f"{sorted(agents, key=str)}): run platforms/agno (make agno), which defines it"
            )
        uploaded = fill_knowledge(client, setup.documents)
    print(f"seed: agno agent {AGENT_ID}; knowledge {KNOWLEDGE_NAME!r} ({uploaded} uploaded)")
    return AgnoSeeded(AGENT_ID, KNOWLEDGE_NAME, setup.documents, WHATSAPP_PREFIX)
