"""Which platforms the kit speaks, by name: the one place the runner learns of a platform.

The runner and the stack import this registry, never a platform package, so adding a
platform is a package under ``workloads/`` whose ``platform.py`` exports one
``PLATFORM`` record (engine.seam.Platform: its dialect, fixture part, seed,
preflight, follow-up and what each workload becomes), one line here and its local
stack (``stack/<name>.py``). The fixture names its platform, so a run speaks the
dialect of the deployment it was seeded against without being told twice.

A platform's module is named here, not imported: it is imported only when that
platform is asked for (a run against AgenticOS never loads LangGraph's parts), and
the platform's seed module, which reads this registry, can be imported by it.
"""

from __future__ import annotations

from importlib import import_module

from engine.seam import Platform

# Name -> the module exporting that platform's PLATFORM record.
PLATFORMS = {
    "agenticos": "workloads.agenticos.platform",
    "agno": "workloads.agno.platform",
    "langgraph": "workloads.langgraph.platform",
    "opencode": "workloads.opencode.platform",
}
DEFAULT_PLATFORM = "agenticos"


def platform(name: str) -> Platform:
    """The platform called ``name``, or ValueError naming the ones there are."""
    if name not in PLATFORMS:
        known = ", ".join(sorted(PLATFORMS))
        raise ValueError(f"platform: {name!r} is not one this kit speaks; use one of {known}")
    record = import_module(PLATFORMS[name]).PLATFORM
    if not isinstance(record, Platform) or record.name != name:
        raise TypeError(f"{PLATFORMS[name]}.PLATFORM is not the Platform record named {name!r}")
    return record
