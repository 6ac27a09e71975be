"""Which platform's local stack to start, found by the platform's name in the registry.

Each platform the kit speaks (``workloads/platforms.py``) has a module here named
after it, exporting ``start_stack(options)`` (a context manager yielding the
started, seeded LocalStack) and ``WHAT`` (how the demo names it); adding a
platform's stack is that one module, never a switch here.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from importlib import import_module
from types import ModuleType

from stack.local import LocalStack, StackOptions
from workloads.platforms import PLATFORMS


def platform_stack(name: str) -> ModuleType:
    """The stack module of the platform called ``name``, or ValueError naming the ones there are."""
    if name not in PLATFORMS:
        known = ", ".join(sorted(PLATFORMS))
        raise ValueError(f"platform: {name!r} is not one this kit speaks; use one of {known}")
    return import_module(f"stack.{name}")


def local_stack(options: StackOptions) -> AbstractContextManager[LocalStack]:
    """Start stub and the options' platform, seed the fixture; stop both when the block ends."""
    return platform_stack(options.platform).start_stack(options)
