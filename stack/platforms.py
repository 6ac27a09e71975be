"""Which platforms have a local stack the kit starts, and how to start one, by name.

A local stack is optional: a platform found by the registry (workloads/platforms.py),
the kit's or a team's, is run against the URL it was seeded at; the ones listed here can
also be started on loopback by ``make demo``, ``make ui`` and the tests. Each has a module
here exporting ``start_stack(options)`` (a context manager yielding the started, seeded
LocalStack) and ``WHAT`` (how the demo names it); adding one is that module and its line.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from importlib import import_module
from types import ModuleType

from stack.local import LocalStack, StackOptions

# Name -> the module that starts that platform's local stack.
STACKS = {
    "agenticos": "stack.agenticos",
    "agno": "stack.agno",
    "langgraph": "stack.langgraph",
    "opencode": "stack.opencode",
    "a2a": "stack.a2a",
    "ag-ui": "stack.ag_ui",
    "openai": "stack.openai",
}


def platform_stack(name: str) -> ModuleType:
    """The stack module of the platform called ``name``, or ValueError naming the ones there
    are (a platform without one is run against its own URL: loadkit seed, then loadkit run)."""
    if name not in STACKS:
        known = ", ".join(sorted(STACKS))
        raise ValueError(
            f"platform: {name!r} has no local stack here (there are {known}); seed it at its "
            "own URL with loadkit seed and run loadkit run"
        )
    return import_module(STACKS[name])


def local_stack(options: StackOptions) -> AbstractContextManager[LocalStack]:
    """Start stub and the options' platform, seed the fixture; stop both when the block ends."""
    return platform_stack(options.platform).start_stack(options)
