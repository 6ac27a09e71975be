"""What AG-UI servers answer, as typed Structs: one event of a run's stream, and FastAPI's 422.

Written against the protocol's schema (ag-ui-protocol 1.0.0, ``ag_ui/_generated/models.py``)
and what two real servers put on the wire (WIRE.md: agno 3.1.10's AG-UI interface,
ag-ui-langgraph 0.0.47), not with ag-ui-protocol's own types: those are pydantic models,
and validating every event through them would cost a load process far more than msgspec's
one C pass (workloads/answers.py says why the load path decodes with msgspec). One Struct
reads every event type, naming only the fields the kit reads: ``type`` always, a text or
argument ``delta`` (a JSON Patch list on STATE_DELTA, so either), RUN_ERROR's ``message``
and ``code``, RUN_FINISHED's ``outcome``, and a tool call's id and name. Every other field
(ag-ui-langgraph's ``rawEvent`` copy on nearly every event, snapshots, RAW payloads) is
skipped unread; an event type the kit does not know is read past, as a client must.
"""

from __future__ import annotations

from typing import Any

import msgspec

from workloads.answers import decoder

# The event types the kit reads (the schema's EventType values).
RUN_FINISHED = "RUN_FINISHED"
RUN_ERROR = "RUN_ERROR"
TEXT_CONTENT = "TEXT_MESSAGE_CONTENT"
# The shorthand for a start, content and end, for producers that cannot tell a message's start.
TEXT_CHUNK = "TEXT_MESSAGE_CHUNK"
TOOL_CALL_START = "TOOL_CALL_START"
TOOL_CALL_RESULT = "TOOL_CALL_RESULT"
# RUN_FINISHED's outcomes (absent: success).
SUCCESS, INTERRUPT, CANCELLED = "success", "interrupt", "cancelled"


class Interrupt(msgspec.Struct):
    """What an interrupted run waits for."""

    reason: str = ""


class Outcome(msgspec.Struct):
    """Why a run ended (the schema's RunFinishedOutcome, discriminated by ``type``)."""

    type: str = SUCCESS
    interrupts: list[Interrupt] = []


class Event(msgspec.Struct, rename="camel"):
    """One event of a run's stream, whatever its type."""

    type: str
    delta: str | list[Any] | None = None
    message: str | None = None
    # An open string in the schema; a number is read as a server's slip, not a bad frame.
    code: str | int | None = None
    # An object since the schema named outcomes; a bare word on servers before it.
    outcome: Outcome | str | None = None
    tool_call_id: str | None = None
    tool_call_name: str | None = None

    @property
    def outcome_type(self) -> str:
        """The outcome's type, whichever way it was written (success when absent)."""
        if isinstance(self.outcome, Outcome):
            return self.outcome.type
        return self.outcome or SUCCESS


class Issue(msgspec.Struct):
    """One of FastAPI's validation errors: where in the request, and what."""

    loc: list[str | int] = []
    msg: str = ""


class Unprocessable(msgspec.Struct):
    """FastAPI's 422: the request did not validate as RunAgentInput (both servers are FastAPI)."""

    detail: list[Issue]


EVENT = decoder(Event)
UNPROCESSABLE = decoder(Unprocessable)
