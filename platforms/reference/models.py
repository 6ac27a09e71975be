"""The tables: every list the API answers is read from these rows.

Ids are UUID strings so the same schema works on SQLite and PostgreSQL, and
times are stored in UTC. Vectors are float32 bytes: compact on both databases,
and ranked in the process with numpy.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def new_id() -> str:
    """A fresh UUID string: unguessable, and portable across both databases."""
    return str(uuid.uuid4())


def utcnow() -> datetime:
    """Now, in UTC, for created/updated columns."""
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """Common base so one ``create_all`` builds the schema."""


def _id() -> Mapped[str]:
    return mapped_column(String(36), primary_key=True, default=new_id)


def _created() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), default=utcnow)


class User(Base):
    __tablename__ = "users"
    id: Mapped[str] = _id()
    email: Mapped[str] = mapped_column(String(320), unique=True)
    password_hash: Mapped[str] = mapped_column(String(300))
    created_at: Mapped[datetime] = _created()


class Org(Base):
    __tablename__ = "orgs"
    id: Mapped[str] = _id()
    name: Mapped[str] = mapped_column(String(200))
    slug: Mapped[str] = mapped_column(String(200), unique=True)
    is_personal: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = _created()


class Membership(Base):
    __tablename__ = "memberships"
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id"), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    role: Mapped[str] = mapped_column(String(20))


class Secret(Base):
    __tablename__ = "secrets"
    __table_args__ = (UniqueConstraint("org_id", "name"),)
    id: Mapped[str] = _id()
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    purpose: Mapped[str] = mapped_column(String(50))
    kind: Mapped[str] = mapped_column(String(50))
    api_key: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = _created()


class ModelProfile(Base):
    __tablename__ = "model_profiles"
    __table_args__ = (UniqueConstraint("org_id", "label"),)
    id: Mapped[str] = _id()
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id"), index=True)
    label: Mapped[str] = mapped_column(String(200))
    provider: Mapped[str] = mapped_column(String(50))
    model: Mapped[str] = mapped_column(String(200))
    base_url: Mapped[str | None] = mapped_column(String(2000))
    secret_id: Mapped[str | None] = mapped_column(ForeignKey("secrets.id"))
    created_at: Mapped[datetime] = _created()


class Agent(Base):
    __tablename__ = "agents"
    id: Mapped[str] = _id()
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    instructions: Mapped[str] = mapped_column(Text)
    model_profile_id: Mapped[str] = mapped_column(ForeignKey("model_profiles.id"))
    status: Mapped[str] = mapped_column(String(20), default="draft")
    publish_note: Mapped[str | None] = mapped_column(Text)
    published_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # Loaded with the agent (one more SELECT), as AgenticOS reads its spec with it.
    capabilities: Mapped[list[AgentCapability]] = relationship(lazy="selectin")


class AgentCapability(Base):
    """A capability the agent's spec binds (platforms/reference/tools.py): its tools. A table
    of its own, so a database made before tools existed gets it from create_all."""

    __tablename__ = "agent_capabilities"
    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id"), primary_key=True)
    capability: Mapped[str] = mapped_column(String(50), primary_key=True)


class ToolCallRow(Base):
    """One tool call of a chat turn, journalled with the turn's answer, as AgenticOS does."""

    __tablename__ = "tool_calls"
    id: Mapped[str] = _id()
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id"), index=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"))
    tool_call_id: Mapped[str] = mapped_column(String(200))
    tool_name: Mapped[str] = mapped_column(String(200))
    args: Mapped[str] = mapped_column(Text)
    result: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20))
    duration_ms: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = _created()


class Conversation(Base):
    __tablename__ = "conversations"
    id: Mapped[str] = _id()
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id"), index=True)
    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id"))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    title: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Message(Base):
    __tablename__ = "messages"
    id: Mapped[str] = _id()
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"), index=True)
    role: Mapped[str] = mapped_column(String(20))
    content: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = _created()


class Run(Base):
    __tablename__ = "runs"
    id: Mapped[str] = _id()
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id"), index=True)
    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id"))
    user_id: Mapped[str | None] = mapped_column(ForeignKey("users.id"))
    conversation_id: Mapped[str | None] = mapped_column(ForeignKey("conversations.id"))
    trigger_id: Mapped[str | None] = mapped_column(String(36))
    source: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(20))
    prompt: Mapped[str] = mapped_column(Text)
    output: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = _created()
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Collection(Base):
    __tablename__ = "collections"
    __table_args__ = (UniqueConstraint("org_id", "collection_name"),)
    id: Mapped[str] = _id()
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    collection_name: Mapped[str] = mapped_column(String(200))
    scope: Mapped[str] = mapped_column(String(20))
    embedding_model: Mapped[str] = mapped_column(String(200))
    embedding_dim: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = _created()


class Document(Base):
    __tablename__ = "documents"
    id: Mapped[str] = _id()
    collection_id: Mapped[str] = mapped_column(ForeignKey("collections.id"), index=True)
    filename: Mapped[str] = mapped_column(String(500))
    content_type: Mapped[str] = mapped_column(String(200))
    raw: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    status: Mapped[str] = mapped_column(String(20), default="processing")
    error: Mapped[str | None] = mapped_column(Text)
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Chunk(Base):
    __tablename__ = "chunks"
    id: Mapped[str] = _id()
    collection_id: Mapped[str] = mapped_column(ForeignKey("collections.id"), index=True)
    document_id: Mapped[str] = mapped_column(ForeignKey("documents.id"))
    ordinal: Mapped[int] = mapped_column(Integer)
    content: Mapped[str] = mapped_column(Text)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    meta: Mapped[dict] = mapped_column(JSON)


class Trigger(Base):
    __tablename__ = "triggers"
    id: Mapped[str] = _id()
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id"), index=True)
    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    prompt: Mapped[str] = mapped_column(Text)
    trigger_type: Mapped[str] = mapped_column(String(20))
    event_source: Mapped[str] = mapped_column(String(50))
    event_secret: Mapped[str] = mapped_column(String(255))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = _created()


class WebhookDelivery(Base):
    """A delivery id seen for a trigger: a repeat of it is accepted and not run again."""

    __tablename__ = "webhook_deliveries"
    trigger_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    delivery_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(36))
    received_at: Mapped[datetime] = _created()
