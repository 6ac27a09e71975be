"""One load process's share of a run: what the thing that offers its requests works with.

The open-arrival dispatcher and the users driver take the same share and expose
the same interface (start, update_plan, drain, close, offered, in_flight, clock),
so a load process builds one of these and runs either driver the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from engine.clock import RunClock
from engine.http import HttpTransport
from engine.mix import Mix
from engine.samples import Sample
from engine.schedule import Plan
from engine.seam import Dialect
from inputs.agent import Conversations
from inputs.timeouts import Timeouts


@dataclass(frozen=True)
class Share:
    """This process's slot among ``workers``, the plan as it starts, the mix and timeouts, the
    platform's dialect and transport, the run's clock, its connection bound, and where each
    sample goes."""

    slot: int
    workers: int
    plan: Plan
    mix: Mix
    timeouts: Timeouts
    dialect: Dialect
    http: HttpTransport
    clock: RunClock
    connections: int
    on_sample: Callable[[Sample], None]
    # Chat turns that continue earlier conversations (engine/conversations.py); none by default.
    conversations: Conversations = field(default_factory=Conversations)
