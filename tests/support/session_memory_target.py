"""The reference platform holding a known amount of memory per chat conversation, for a while.

A sweep's memory-per-session fit needs a platform whose cost per session is
known: this one is the real reference target, plus ``SESSION_MB`` of written
(so resident) memory held for each conversation a chat turn uses, released
``SESSION_TTL_S`` after its last turn, like the Agent OS seed's session TTL.
Run as ``python -m tests.support.session_memory_target`` with the target's own options.
"""

from __future__ import annotations

import mmap
import os
import sys
import threading
import time

from platforms.reference.__main__ import main
from platforms.reference.routes import chat

MB = 1024 * 1024
SESSION_BYTES = int(float(os.environ.get("SESSION_MB", "8")) * MB)
TTL_S = float(os.environ.get("SESSION_TTL_S", "2"))
# How often expired sessions are looked for.
SWEEP_EVERY_S = 0.2

_held: dict[str, list] = {}
_lock = threading.Lock()
_original = chat.ChatSocket._conversation


async def _conversation_with_memory(self, session, request, agent_id):
    """The platform's own conversation lookup (conversation, created), then its block kept warm."""
    conversation, created = await _original(self, session, request, agent_id)
    with _lock:
        entry = _held.get(conversation.id)
        if entry is None:
            _held[conversation.id] = [_block(), time.monotonic()]
        else:
            entry[1] = time.monotonic()
    return conversation, created


def _block() -> mmap.mmap:
    """SESSION_BYTES of its own mapping, written so every page is resident.

    A mapping of its own, because malloc keeps freed blocks for reuse and memory
    would not be seen to go back; closing the mapping unmaps it at once.
    """
    block = mmap.mmap(-1, SESSION_BYTES)
    block.write(b"\x01" * SESSION_BYTES)
    return block


def _expire() -> None:
    while True:
        time.sleep(SWEEP_EVERY_S)
        now = time.monotonic()
        with _lock:
            for key in [k for k, (_, last) in _held.items() if now - last > TTL_S]:
                _held.pop(key)[0].close()


chat.ChatSocket._conversation = _conversation_with_memory

if __name__ == "__main__":
    threading.Thread(target=_expire, daemon=True).start()
    sys.exit(main(sys.argv[1:]))
