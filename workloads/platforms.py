"""Which platforms the kit speaks, by name: the one place the runner learns of a platform.

The runner and the stack import this registry, never a platform package, so adding a
platform is a package under ``workloads/``, one line here and its local stack
(``stack/<name>.py``). The fixture names its platform, so a run speaks the dialect
of the deployment it was seeded against without being told twice.
"""

from __future__ import annotations

from importlib import import_module

from engine.seam import Platform

# Name -> package; each has dialect.py exporting DIALECT and preflight.py exporting
# run_preflight, and may have followup.py exporting follow_up; imported only when that
# platform is asked for.
PLATFORMS = {
    "agenticos": "workloads.agenticos",
    "agno": "workloads.agno",
    "langgraph": "workloads.langgraph",
}
DEFAULT_PLATFORM = "agenticos"


def platform(name: str) -> Platform:
    """The platform called ``name``, or ValueError naming the ones there are."""
    if name not in PLATFORMS:
        known = ", ".join(sorted(PLATFORMS))
        raise ValueError(f"platform: {name!r} is not one this kit speaks; use one of {known}")
    package = PLATFORMS[name]
    dialect_module = import_module(f"{package}.dialect")
    preflight = import_module(f"{package}.preflight").run_preflight
    try:
        follow_up = import_module(f"{package}.followup").follow_up
    except ModuleNotFoundError:
        follow_up = None
    return Platform(
        name, dialect_module.DIALECT, preflight, follow_up, dict(dialect_module.REQUESTS)
    )
