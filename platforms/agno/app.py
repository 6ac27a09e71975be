"""An AgentOS with one agent, its knowledge, its WhatsApp, A2A and AG-UI interfaces, on loopback.

What runs is agno's own code, configured the way a small deployment would be:
the agent's model is agno's OpenAI-compatible model pointed at the stub, its
sessions live in a SQLite file, its knowledge in a LanceDB directory with
embeddings from the stub's ``/v1/embeddings``, and the WhatsApp interface
(the one agno interface that verifies an HMAC, ``X-Hub-Signature-256``) sends
its replies to the stub instead of Meta's Graph API. The same agent is served
over A2A too (agno's A2A interface, under ``/a2a/agents/<id>/``) and over AG-UI (agno's
AG-UI interface, ``POST /agui``), so the kit can reach one agent natively and through both
protocols. Telemetry is off. The agent
has one function tool, ``lookup``, as an agno user gives one (a Python function in
``tools``): it waits the ``wait_ms`` it is asked to, asleep on the event loop, so a
loop's tool costs what the scenario states and the platform's share is the rest.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
from dataclasses import dataclass
from pathlib import Path

# The names the seed and the dialect find things by; prefixed so they are obviously the kit's.
AGENT_ID = "loadkit-agent"
KNOWLEDGE_NAME = "loadkit-docs"
# The stub ignores keys and echoes any model name; these only have to be present.
STUB_API_KEY = "loadkit-stub-no-real-key"
STUB_MODEL = "loadkit-stub-model"
# The stub's default embedding width; LanceDB's schema is fixed to it at creation.
EMBEDDING_DIM = 768
# WhatsApp's Cloud API wants an access token and a phone number id; the stub accepts any.
WHATSAPP_PHONE_ID = "loadkit-phone"
INSTRUCTIONS = "You are agent-loadkit's test agent. Answer briefly."
HISTORY_MESSAGES = 200


class AppSettingsError(ValueError):
    """A setting the app cannot start without; one line naming the variable and the fix."""


@dataclass(frozen=True)
class AppSettings:
    """Where the stub is, where the data goes, and the one secret the operator provides."""

    stub_url: str
    data_dir: Path
    security_key: str
    embedding_dim: int = EMBEDDING_DIM
    # Where the knowledge's embeddings come from, when not the model's stub (a test puts a
    # faulty embedder there, so uploads fail after agno's 202 while chat runs stay healthy).
    embed_url: str | None = None


def webhook_secret(password: str, agent_id: str) -> str:
    """The WhatsApp app secret, derived as the kit derives webhook secrets (inputs/fixture.py).

    Duplicated rather than imported: this package runs in agno's environment and
    must not import the kit. tests/test_two_platforms.py checks the two agree.
    """
    digest = hmac.new(
        password.encode(), f"agent-loadkit webhook {agent_id}".encode(), hashlib.sha256
    )
    return digest.hexdigest()[:48]


def settings_from_env() -> AppSettings:
    """AGNO_STUB_URL, AGNO_EMBED_URL, AGNO_DATA_DIR and OS_SECURITY_KEY, or AppSettingsError."""
    key = os.environ.get("OS_SECURITY_KEY", "")
    if not key:
        raise AppSettingsError(
            "OS_SECURITY_KEY: not set; export it (the kit uses LOAD_PASSWORD's value) so the API "
            "is not open"
        )
    dim = os.environ.get("AGNO_EMBEDDING_DIM", str(EMBEDDING_DIM))
    if not dim.isdigit() or int(dim) < 1:
        raise AppSettingsError(f"AGNO_EMBEDDING_DIM: {dim!r} is not a positive integer")
    return AppSettings(
        stub_url=os.environ.get("AGNO_STUB_URL", "http://127.0.0.1:4020").rstrip("/"),
        data_dir=Path(os.environ.get("AGNO_DATA_DIR", "agno-data")),
        security_key=key,
        embedding_dim=int(dim),
        embed_url=os.environ.get("AGNO_EMBED_URL", "").rstrip("/") or None,
    )


async def lookup(topic: str, wait_ms: float = 0) -> str:
    """Look a topic up in the team's notes.

    Args:
        topic: What to look up.
        wait_ms: How long the lookup takes, in milliseconds.
    """
    if wait_ms > 0:
        await asyncio.sleep(wait_ms / 1000.0)
    return f"{topic}: nothing more to report"


def quiet_agno(settings: AppSettings) -> None:
    """Telemetry off and every outside address replaced by the stub, before agno is imported."""
    os.environ["AGNO_TELEMETRY"] = "false"
    os.environ["WHATSAPP_APP_SECRET"] = webhook_secret(settings.security_key, AGENT_ID)
    os.environ.setdefault("WHATSAPP_ACCESS_TOKEN", STUB_API_KEY)
    os.environ.setdefault("WHATSAPP_PHONE_NUMBER_ID", WHATSAPP_PHONE_ID)
    os.environ.setdefault("WHATSAPP_VERIFY_TOKEN", "loadkit-verify")


def create_app(settings: AppSettings):
    """The FastAPI app of an AgentOS with the kit's agent, knowledge and its interfaces."""
    quiet_agno(settings)
    from agno.agent import Agent
    from agno.db.sqlite import SqliteDb
    from agno.knowledge.embedder.openai import OpenAIEmbedder
    from agno.knowledge.knowledge import Knowledge
    from agno.models.openai.like import OpenAILike
    from agno.os import AgentOS
    from agno.os.interfaces.a2a import A2A
    from agno.os.interfaces.agui import AGUI
    from agno.os.interfaces.whatsapp import Whatsapp
    from agno.os.interfaces.whatsapp import helpers as whatsapp_helpers
    from agno.vectordb.lancedb import LanceDb

    # Replies and typing indicators go to the stub's Graph-API-shaped sink, never to Meta.
    whatsapp_helpers._BASE_URL = settings.stub_url
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    base_url = f"{settings.stub_url}/v1"
    db = SqliteDb(db_file=str(settings.data_dir / "agno.db"))
    embedder = OpenAIEmbedder(
        id=STUB_MODEL,
        api_key=STUB_API_KEY,
        base_url=f"{settings.embed_url}/v1" if settings.embed_url else base_url,
        dimensions=settings.embedding_dim,
    )
    knowledge = Knowledge(
        name=KNOWLEDGE_NAME,
        contents_db=db,
        vector_db=LanceDb(
            uri=str(settings.data_dir / "lancedb"),
            table_name=KNOWLEDGE_NAME,
            embedder=embedder,
        ),
    )
    agent = Agent(
        id=AGENT_ID,
        name=AGENT_ID,
        model=OpenAILike(id=STUB_MODEL, api_key=STUB_API_KEY, base_url=base_url),
        db=db,
        knowledge=knowledge,
        instructions=INSTRUCTIONS,
        tools=[lookup],
        # A continued conversation's earlier turns go to the model, as a chat agent's would;
        # bounded as AgenticOS bounds them (200 messages).
        add_history_to_context=True,
        num_history_messages=HISTORY_MESSAGES,
        telemetry=False,
    )
    agent_os = AgentOS(
        id="loadkit-agentos",
        agents=[agent],
        knowledge=[knowledge],
        interfaces=[Whatsapp(agent=agent), A2A(agents=[agent]), AGUI(agent=agent)],
        telemetry=False,
    )
    return agent_os.get_app()
