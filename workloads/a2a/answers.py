"""What A2A servers answer, as typed Structs: the agent card, tasks, messages and stream events
of both protocol lines, and the one normal form the dialect reads them in.

Written against what three real servers put on the wire (platforms/a2a/WIRE.md: a2a-sdk
1.3.0, agno 3.1.10 on a2a-sdk 0.3, langgraph-api 0.16.7) rather than a2a-sdk's own types:
those are protobuf messages for 1.x and pydantic models for 0.3, a different library for
each line, and decoding an event through either costs a load process more than msgspec's
one C pass. Every shape here accepts both lines and LangGraph's hybrid of them: 1.0's
``{"task": ...}``/``{"statusUpdate": ...}`` wrappers and enum states
(``TASK_STATE_COMPLETED``), 0.3's ``kind`` discriminator and lowercase states
(``completed``), and LangGraph's first event wrapped with the rest bare. Only the fields
the kit reads are named; servers add others.
"""

from __future__ import annotations

from typing import Any

import msgspec

from workloads.answers import decoder

# The task states that end a task (the turn ends there), and those that pause it for the
# user (an agent asking for input or auth: the kit's turn ends without an answer).
TERMINAL = frozenset({"completed", "canceled", "failed", "rejected"})
INTERRUPTED = frozenset({"input-required", "auth-required"})


class Part(msgspec.Struct, rename="camel"):
    """A message or artifact part: text, else something the kit does not read (data, a file)."""

    text: str | None = None


class Message(msgspec.Struct, rename="camel"):
    """A message (the agent's text, or a status message)."""

    role: str = ""
    parts: list[Part] = []
    # 0.3's objects carry ``kind``; a status message of LangGraph's does too.
    kind: str | None = None
    task_id: str | None = None
    context_id: str | None = None


class Status(msgspec.Struct, rename="camel"):
    """A task's status: its state, and what the agent said with it."""

    state: str = ""
    message: Message | None = None


class Artifact(msgspec.Struct, rename="camel"):
    """What the task produced (a2a-sdk and LangGraph put the answer's text here)."""

    parts: list[Part] = []


class Task(msgspec.Struct, rename="camel"):
    """A task as a send, a GetTask or a stream's first event answers it."""

    id: str = ""
    context_id: str = ""
    status: Status = msgspec.field(default_factory=Status)
    artifacts: list[Artifact] | None = None
    history: list[Message] | None = None
    kind: str | None = None


class StatusUpdate(msgspec.Struct, rename="camel"):
    """A task's state changed (``statusUpdate`` in 1.0, ``kind: status-update`` in 0.3)."""

    task_id: str = ""
    context_id: str = ""
    status: Status = msgspec.field(default_factory=Status)


class ArtifactUpdate(msgspec.Struct, rename="camel"):
    """More of an artifact (``artifactUpdate``, ``kind: artifact-update``)."""

    task_id: str = ""
    context_id: str = ""
    artifact: Artifact = msgspec.field(default_factory=Artifact)


class Streamed(msgspec.Struct, rename="camel"):
    """One StreamResponse (or a send's result), in any of the shapes the servers send: 1.0
    wraps it (``task``, ``message``, ``statusUpdate``, ``artifactUpdate``), 0.3 names it by
    ``kind`` with its own fields beside."""

    task: Task | None = None
    message: Message | None = None
    status_update: StatusUpdate | None = None
    artifact_update: ArtifactUpdate | None = None
    kind: str | None = None
    # A bare 0.3 object's own fields (a task, a message or an update).
    id: str = ""
    task_id: str = ""
    context_id: str = ""
    status: Status | None = None
    artifact: Artifact | None = None
    parts: list[Part] | None = None
    role: str = ""
    artifacts: list[Artifact] | None = None
    history: list[Message] | None = None

    @property
    def bare_task(self) -> bool:
        """Whether this is a task itself: 0.3's ``kind: task``, or 1.0's GetTask result (a
        Task with no wrapper and no kind)."""
        return self.kind == "task" or (
            self.kind is None and bool(self.id) and self.status is not None
        )

    def as_task(self) -> Task | None:
        """The task this answer is (1.0's ``task`` wrapper, or a bare task), else None."""
        if self.task is not None:
            return self.task
        if not self.bare_task:
            return None
        return Task(self.id, self.context_id, self.status or Status(), self.artifacts, self.history)


class RpcError(msgspec.Struct):
    """A JSON-RPC error: its code and message (``data`` may carry google.rpc.ErrorInfo)."""

    code: int = 0
    message: str = ""


class Envelope(msgspec.Struct):
    """A JSON-RPC 2.0 answer: a result, or an error."""

    result: Streamed | None = None
    error: RpcError | None = None


class TaskList(msgspec.Struct, rename="camel"):
    """ListTasks' result: the page of tasks."""

    tasks: list[Task]


class ListEnvelope(msgspec.Struct):
    """ListTasks' JSON-RPC answer."""

    result: TaskList | None = None
    error: RpcError | None = None


class StatusError(msgspec.Struct):
    """The HTTP+JSON binding's error: google.rpc.Status under ``error``."""

    code: int = 0
    status: str = ""
    message: str = ""


class RestError(msgspec.Struct):
    """An HTTP+JSON error body."""

    error: StatusError | None = None


class Interface(msgspec.Struct, rename="camel"):
    """One interface a 1.0 card lists: where, by which binding, at which protocol version."""

    url: str
    protocol_binding: str = ""
    protocol_version: str = ""


class Capabilities(msgspec.Struct):
    """What the agent says it can do; ``streaming`` is a claim, not a measurement."""

    streaming: bool | None = None


class Scheme(msgspec.Struct, rename="camel"):
    """A security scheme as 1.0 (``httpAuthSecurityScheme``, ``apiKeySecurityScheme``) or 0.3
    (``type: http``, ``type: apiKey``) declares it."""

    type: str = ""
    scheme: str = ""
    name: str = ""
    location: str = msgspec.field(default="", name="in")
    http_auth_security_scheme: dict[str, Any] | None = None
    api_key_security_scheme: dict[str, Any] | None = None


class Card(msgspec.Struct, rename="camel"):
    """The agent card: its interfaces (1.0's list, or 0.3's ``url`` with its transport and
    version), whether it streams, and the security it declares."""

    name: str = ""
    supported_interfaces: list[Interface] | None = None
    url: str = ""
    preferred_transport: str = ""
    protocol_version: str = ""
    capabilities: Capabilities = msgspec.field(default_factory=Capabilities)
    security_schemes: dict[str, Scheme] | None = None


class Event(msgspec.Struct):
    """What one answer or stream event says, whatever its shape: which task and context, the
    state it is now in (normalised: ``completed``, ``input-required``...; "" when it says
    none), the text the agent sent with it, and of which kind of event that text is."""

    kind: str
    task_id: str
    context_id: str
    state: str
    text: str


CARD = decoder(Card)
ENVELOPE = decoder(Envelope)
STREAMED = decoder(Streamed)
LIST_ENVELOPE = decoder(ListEnvelope)
TASK_LIST = decoder(TaskList)
REST_ERROR = decoder(RestError)


def state(raw: str) -> str:
    """A task state in 0.3's spelling, whatever the server wrote: ``TASK_STATE_INPUT_REQUIRED``
    and ``input-required`` are both ``input-required``."""
    return raw.lower().removeprefix("task_state_").replace("_", "-")


def _text(parts: list[Part] | None) -> str:
    return "".join(p.text for p in parts or () if p.text)


def event(answer: Streamed) -> Event:
    """The normal form of one result or stream event (a 1.0 wrapper, a 0.3 object by kind)."""
    if answer.task is not None:
        return _task(answer.task)
    if answer.status_update is not None:
        update = answer.status_update
        said = update.status.message
        return Event(
            "status",
            update.task_id,
            update.context_id,
            state(update.status.state),
            _text(said.parts) if said else "",
        )
    if answer.artifact_update is not None:
        update_a = answer.artifact_update
        return Event(
            "artifact", update_a.task_id, update_a.context_id, "", _text(update_a.artifact.parts)
        )
    if answer.message is not None:
        message = answer.message
        text = _text(message.parts)
        return Event("message", message.task_id or "", message.context_id or "", "", text)
    kind = answer.kind or ""
    status = answer.status
    if answer.bare_task:
        task_id = answer.id
        return Event("task", task_id, answer.context_id, state(status.state) if status else "", "")
    if kind == "status-update":
        said = status.message if status else None
        return Event(
            "status",
            answer.task_id,
            answer.context_id,
            state(status.state) if status else "",
            _text(said.parts) if said else "",
        )
    if kind == "artifact-update":
        parts = answer.artifact.parts if answer.artifact else None
        return Event("artifact", answer.task_id, answer.context_id, "", _text(parts))
    if kind == "message":
        return Event("message", answer.task_id, answer.context_id, "", _text(answer.parts))
    return Event("", "", "", "", "")


def _task(task: Task) -> Event:
    return Event("task", task.id, task.context_id, state(task.status.state), "")


def answer_text(task: Task) -> str:
    """The agent's answer in a finished task: its artifacts' text, else its last agent message."""
    text = "".join(_text(a.parts) for a in task.artifacts or ())
    if text:
        return text
    agents = [m for m in task.history or () if role(m.role) == "agent"]
    return _text(agents[-1].parts) if agents else ""


def role(raw: str) -> str:
    """A message's role in 0.3's spelling: ``ROLE_AGENT`` and ``agent`` are both ``agent``."""
    return raw.lower().removeprefix("role_")
