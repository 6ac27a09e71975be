"""``python -m workloads.agno.seed``: the run's fixture for an agno AgentOS, through its API.

AgentOS defines agents and knowledge bases in code (platforms/agno/app.py), not
over the API, so seeding checks that the agent is served and fills the
knowledge base the way a user would: each synthetic document uploaded to
``/knowledge/content`` and followed to its final status. It is idempotent by
name: a document already there is not uploaded again. Writes fixture.json:
ids, names and URLs only, no key.
"""

from __future__ import annotations

import sys
import time

from inputs.fixture import Fixture
from workloads.agno.client import AgnoClient
from workloads.agno.fixture import DEFAULT_WHATSAPP_PREFIX, AgnoSeeded
from workloads.corpus import document_name, document_text
from workloads.seed import SeedError, SeedOptions, seed_command, seeded_fixture, wait_for_api
from workloads.setup_client import APIError, APIUnreachable

PLATFORM = "agno"
AGENT_ID = "loadkit-agent"
KNOWLEDGE_NAME = "loadkit-docs"
WHATSAPP_PREFIX = DEFAULT_WHATSAPP_PREFIX
DEFAULT_API_URL = "http://127.0.0.1:7777"
# Seconds to wait for agno's background tasks to embed the uploads: generous for a busy
# machine, bounded so a platform that never finishes is refused, not waited on.
INDEX_WAIT_S = 120.0
POLL_S = 0.25
# Final content states (agno.knowledge.content.ContentStatus); anything else is still working.
DONE, FAILED_STATES = "completed", ("failed", "partial")


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


def seed(options: SeedOptions, key: str) -> Fixture:
    """Check the agent is served, fill its knowledge, and return the fixture; SeedError if not."""
    api_url, stub_url, documents = options.api_url, options.stub_url, options.documents
    with AgnoClient(api_url, key) as client:
        wait_for_api(client.health, api_url, options.wait_s, "make agno")
        try:
            agents = {a.get("id") for a in client.agents()}
        except APIUnreachable as exc:
            raise SeedError(
                f"AgentOS at {api_url} does not answer ({exc}): start it (make agno) or pass "
                "--api-url"
            ) from None
        except APIError as exc:
            raise SeedError(
                f"{exc}: export LOAD_PASSWORD with the server's OS_SECURITY_KEY"
            ) from None
        if AGENT_ID not in agents:
            raise SeedError(
                f"agent {AGENT_ID!r} is not served at {api_url} (found "
                f"{sorted(agents, key=str)}): run platforms/agno (make agno), which defines it"
            )
        uploaded = fill_knowledge(client, documents)
    print(f"seed: agno agent {AGENT_ID}; knowledge {KNOWLEDGE_NAME!r} ({uploaded} uploaded)")
    own = AgnoSeeded(AGENT_ID, KNOWLEDGE_NAME, documents, WHATSAPP_PREFIX)
    return seeded_fixture(api_url, stub_url, PLATFORM, own)


main = seed_command(
    platform=PLATFORM,
    description="Fill an agno AgentOS's knowledge and write the fixture (security key from "
    "LOAD_PASSWORD).",
    api_url=DEFAULT_API_URL,
    stub_help="the stub as AgentOS reaches it, for the record",
    seed=seed,
)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
