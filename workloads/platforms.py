"""Which platforms the kit speaks, by name: the one place the engine learns of a platform.

The engine imports this registry, never a platform package, so adding a
platform is a package under ``workloads/`` and one line here. The fixture
names its platform, so a run speaks the dialect of the deployment it was
seeded against without being told twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module

from workloads.dialect import Dialect
from workloads.preflight import RunPreflight

# Name -> package; each has dialect.py exporting DIALECT and preflight.py exporting
# run_preflight, and may have followup.py exporting follow_up; imported only when that
# platform is asked for.
PLATFORMS = {
    "agenticos": "workloads.agenticos",
    "agno": "workloads.agno",
    "langgraph": "workloads.langgraph",
}
DEFAULT_PLATFORM = "agenticos"


@dataclass(frozen=True)
class Platform:
    """One platform's load-time parts: how it is spoken to and how it is checked first."""

    name: str
    dialect: type[Dialect]
    # (fixture, email, password) -> what preflight saw, whose ``skipped`` maps workload ->
    # reason; raises workloads.preflight.PreflightError when the deployment cannot do the work.
    run_preflight: RunPreflight
    # After the run, what became of the work it accepted with 202: called as
    # follow_up(fixture, email, password, run_id=, start_epoch=, accepted=, grace_s=)
    # with accepted as (index, workload, ref) and returning engine.followups.FollowUp
    # rows; None when the platform shows nothing (accepted work is "not verifiable").
    follow_up: Callable[..., list] | None = None
    # What each workload becomes on this platform, for the report's mix (dialect.REQUESTS).
    requests: dict[str, str] = field(default_factory=dict)


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
