"""Which chat turns continue an earlier conversation: a pure function of the run's chat turns.

Conversations grow by open arrivals continuing earlier ones (issue 28; docs/DESIGN.md
"Agents that act" argues it). Counting the run's chat turns n = 0, 1, 2, ... in
arrival order, turn n *continues* when frac(n x CONTINUE_STEP) < ``continuing`` (a
low-discrepancy sequence, like the mix, so the share holds over short runs) and
turn n - ``gap`` is in a conversation of fewer than ``turns`` turns; it then joins
that conversation, one turn deeper. Otherwise it starts one of its own. So every
arrival's conversation and history are known before the run, on any number of
load processes, and each conversation is a chain n, n + gap, n + 2 gap, ...

A conversation's id is the platform's (AgenticOS and opencode create it with the
first turn), so all of its turns are served by one load process, the one its
first turn's global index falls to (index mod W), as every other arrival is; each
process walks every arrival in order and takes those that are its own
(``ConversationCursor``). The conversation's state (the id the platform gave it)
travels in a ``Conversation`` (engine/seam.py), the record users mode gives a user,
which the process forgets once no later turn can continue it.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from engine.mix import Mix
from engine.schedule import Plan, Segment
from engine.seam import Conversation
from inputs.agent import Conversations

# sqrt(7) - 2 is rationally independent of the mix's golden step and the cancels' sqrt(2) - 1,
# so which turns continue does not track which are cancelled or which workload is next.
CONTINUE_STEP = math.sqrt(7) - 2
CHAT = "chat_stream"


@dataclass(frozen=True)
class Turn:
    """Chat turn n's place: the global index of its conversation's first turn, and its depth
    (1 for a new conversation: the history the platform should send is ``depth`` user turns)."""

    head: int
    depth: int


class ConversationWalk:
    """Turns chat turn by chat turn, in order; keeps the last ``gap`` turns' places only."""

    def __init__(self, shape: Conversations) -> None:
        self.shape = shape
        self.n = 0
        self._recent: deque[Turn] = deque(maxlen=shape.gap)

    def next(self, index: int) -> Turn:
        """The place of the next chat turn, arrival ``index`` of the run."""
        shape, recent = self.shape, self._recent
        earlier = recent[0] if len(recent) == shape.gap else None
        continues = (self.n * CONTINUE_STEP) % 1.0 < shape.continuing
        if continues and earlier is not None and earlier.depth < shape.turns:
            turn = Turn(earlier.head, earlier.depth + 1)
        else:
            turn = Turn(index, 1)
        recent.append(turn)
        self.n += 1
        return turn

    def ends(self, turn: Turn) -> bool:
        """Whether no later turn can continue ``turn``'s conversation past this turn (the one
        ``gap`` later will not, or it is as long as conversations get)."""
        if turn.depth >= self.shape.turns:
            return True
        after = self.n - 1 + self.shape.gap  # the only turn that could continue this one
        return (after * CONTINUE_STEP) % 1.0 >= self.shape.continuing


def planned_depths(chat_indexes: list[int], shape: Conversations) -> list[int]:
    """The history each of a run's chat turns (their global indexes, in order) was planned
    with: the reports' view of the same walk."""
    walk = ConversationWalk(shape)
    return [walk.next(k).depth for k in chat_indexes]


class ConversationCursor:
    """Walks every arrival of a plan in order and stops at this process's own: every arrival
    but a continuing chat turn by index mod W (as SlotCursor does), a continuing chat turn
    by its conversation's first turn's. Each own chat turn comes with its ``conversation``,
    shared by the turns of one conversation.

    Arrivals are walked by global index, which a plan change keeps (a rate change closes
    the open segment and numbers the next one on), so the walk survives one.
    """

    def __init__(self, slot: int, workers: int, mix: Mix, shape: Conversations) -> None:
        self.slot, self.workers, self.mix = slot, workers, mix
        self.walk = ConversationWalk(shape)
        self.segment = 0
        self._next = 0  # the next global index to walk
        self._pending: tuple[int, Conversation | None] | None = None
        self._conversations: dict[int, Conversation] = {}
        self.conversation: Conversation | None = None

    def peek(self, plan: Plan) -> tuple[int, int, float] | None:
        """(segment number, global index, due_s) of this process's next arrival, None when
        the plan has no more; ``conversation`` is that arrival's (None if not chat)."""
        while True:
            if self._pending is None:
                located = self._locate(plan, self._next)
                if located is None:
                    return None
                number, segment = located
                k = self._next
                self._next += 1
                self._pending = self._own(segment, k)
                if self._pending is None:
                    continue
            k, conversation = self._pending
            located = self._locate(plan, k)
            if located is None:
                return None
            number, segment = located
            self.conversation = conversation
            return number, k, segment.due_s(k - segment.first_index)

    def advance(self) -> None:
        """Move past the arrival ``peek`` returned."""
        assert self._pending is not None
        self._pending = None

    def _own(self, segment: Segment, k: int) -> tuple[int, Conversation | None] | None:
        """(k, its conversation) if arrival k is this process's, else None; every chat turn is
        walked here, once, in order, whoever serves it."""
        if self.mix.pick_in(segment, k) != CHAT:
            return (k, None) if k % self.workers == self.slot else None
        turn = self.walk.next(k)
        mine = turn.head % self.workers == self.slot
        if not mine:
            return None
        ends = self.walk.ends(turn)
        if turn.depth == 1:
            conversation = Conversation()
            if not ends:
                self._conversations[turn.head] = conversation
        else:
            conversation = self._conversations.get(turn.head) or Conversation()
            if ends:
                self._conversations.pop(turn.head, None)
        return k, conversation

    def _locate(self, plan: Plan, k: int) -> tuple[int, Segment] | None:
        """The segment holding global index k (its number), None past a closed plan's end."""
        while self.segment < len(plan.segments):
            segment = plan.segments[self.segment]
            count = segment.count()
            if k < segment.first_index:  # a changed plan: look again from its start
                self.segment = 0
                continue
            if count is None or k < segment.first_index + count:
                return self.segment, segment
            self.segment += 1
        return None
