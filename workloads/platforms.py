"""Which platforms the kit speaks, by name: the one place the runner learns of a platform.

Three places name a platform, as pytest and Locust find their plugins: the packages the kit
ships (``BUILT_IN``), every installed distribution's entry point in the group
``loadkit.platforms`` (``name = "pkg.module:PLATFORM"``: a team's own platform, with no
edit of the kit), and ``--platform-module pkg.module`` for one that is not installed,
which the fixture then records (``Fixture.module``) so that a run and every worker find it
again. Each exports one ``PLATFORM`` record (engine.seam.Platform); the fixture names its
platform, so a run speaks the dialect of the deployment it was seeded against without
being told twice.

A platform's module is named here, not imported: it is imported only when that platform is
asked for (a run against AgenticOS never loads LangGraph's parts).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from importlib import import_module, metadata
from types import ModuleType

from engine.seam import Platform
from inputs.fixture import MODULE_CHARS, Fixture
from inputs.workload import WORKLOADS

# Name -> the module exporting that built-in platform's PLATFORM record.
BUILT_IN = {
    "agenticos": "workloads.agenticos.platform",
    "agno": "workloads.agno.platform",
    "langgraph": "workloads.langgraph.platform",
    "opencode": "workloads.opencode.platform",
    "a2a": "workloads.a2a.platform",
    "ag-ui": "workloads.ag_ui.platform",
    "openai": "workloads.openai.platform",
}
DEFAULT_PLATFORM = "agenticos"
# The entry-point group an installed distribution registers its platform in.
ENTRY_POINTS = "loadkit.platforms"


class PlatformError(ValueError):
    """A platform that cannot be found or is not a platform; one line naming the fix."""


@dataclass(frozen=True)
class Found:
    """A platform as the registry found it, before it is imported."""

    name: str
    # "module" or "module:attribute".
    target: str
    # Where it came from, as ``loadkit platforms`` says it.
    origin: str


def found() -> tuple[dict[str, Found], list[str]]:
    """Every platform found by name (the built-ins, then the installed entry points), and one
    line per name found twice (neither is then used: which one would win is not the
    operator's choice to leave to install order)."""
    by_name: dict[str, list[Found]] = {}
    for name, module in BUILT_IN.items():
        by_name.setdefault(name, []).append(Found(name, module, "built-in"))
    for point in metadata.entry_points(group=ENTRY_POINTS):
        dist = point.dist
        origin = f"entry point of {dist.name} {dist.version}" if dist else "entry point"
        by_name.setdefault(point.name, []).append(Found(point.name, point.value, origin))
    platforms = {name: each[0] for name, each in by_name.items() if len(each) == 1}
    twice = [
        f"platform {name!r} is registered twice ({' and '.join(f.origin for f in each)}); "
        "uninstall one"
        for name, each in by_name.items()
        if len(each) > 1
    ]
    return platforms, twice


def names() -> list[str]:
    """The names of every platform found, sorted."""
    return sorted(found()[0])


def platform(name: str, module: str | None = None) -> Platform:
    """The platform called ``name``: from ``module`` when given (--platform-module), else as
    found; PlatformError naming the fix, or the ones there are."""
    if module is not None:
        return _record(name, module, f"--platform-module {module}")
    platforms, twice = found()
    if name not in platforms:
        clash = [line for line in twice if line.startswith(f"platform {name!r}")]
        if clash:
            raise PlatformError(clash[0])
        raise PlatformError(
            f"platform: {name[:80]!r} is not one this kit found; use one of "
            f"{', '.join(sorted(platforms))}, install the platform's package, or name its "
            "module with --platform-module"
        )
    return _record(name, platforms[name].target, platforms[name].origin)


def platform_of(fixture: Fixture) -> Platform:
    """The platform a fixture was seeded for (its module too, where it named one)."""
    return platform(fixture.platform, fixture.module)


def _record(name: str | None, target: str, origin: str) -> Platform:
    """The PLATFORM record ``target`` names ("module" or "module:attribute"), checked to be a
    Platform called ``name`` (any name, for None) that states every workload once."""
    module_name, _, attribute = target.partition(":")
    if not MODULE_CHARS.fullmatch(module_name):
        raise PlatformError(f"{origin}: {module_name[:80]!r} is not a module's dotted name")
    try:
        loaded: ModuleType | object = import_module(module_name)
    except ImportError as exc:
        raise PlatformError(
            f"{origin}: cannot import {module_name} ({exc}); install its package or put it on "
            "PYTHONPATH"
        ) from None
    record = getattr(loaded, attribute or "PLATFORM", None)
    where = f"{module_name}.{attribute or 'PLATFORM'}"
    if not isinstance(record, Platform):
        raise PlatformError(f"{origin}: {where} is not an engine.seam.Platform record")
    if name is not None and record.name != name:
        raise PlatformError(f"{origin}: {where} is named {record.name!r}, not {name!r}")
    if problem := stated_problem(record):
        raise PlatformError(f"{origin}: {where}: {problem}")
    return record


def stated_problem(record: Platform) -> str | None:
    """What is wrong with what a platform says it offers (None: nothing): every workload is
    in ``offers`` or in ``not_offered`` with its reason, once, and it offers one at least."""
    offered, refused = set(record.offers), set(record.not_offered)
    if both := sorted(offered & refused):
        return f"{', '.join(both)} both offered and not offered"
    if unknown := sorted((offered | refused) - set(WORKLOADS)):
        return f"{', '.join(unknown)} not a workload; the workloads are {', '.join(WORKLOADS)}"
    if missing := [w for w in WORKLOADS if w not in offered | refused]:
        return (
            f"{', '.join(missing)} neither offered nor not_offered; say what each becomes, "
            "or why it is not offered"
        )
    if empty := [w for w, why in record.not_offered.items() if not why.strip()]:
        return f"not_offered.{empty[0]} gives no reason; the report shows it"
    if not offered:
        return "offers no workload"
    return None


def main(argv: list[str], prog: str = "loadkit platforms") -> int:
    """``loadkit platforms``: every platform found, where it came from and what it offers."""
    parser = argparse.ArgumentParser(
        prog=prog, description="List every platform the kit finds and where each came from."
    )
    parser.add_argument(
        "--platform-module",
        metavar="MODULE",
        help="also a platform package that is not installed, by its module",
    )
    args = parser.parse_args(argv)
    platforms, twice = found()
    rows = [(f.name, f.origin, f.target) for f in platforms.values()]
    if args.platform_module:
        try:
            record = _record(None, args.platform_module, "--platform-module")
        except PlatformError as exc:
            print(f"{prog}: {exc}", file=sys.stderr)
            return 2
        rows.append((record.name, "--platform-module", args.platform_module))
    status = 0
    for name, origin, target in sorted(rows):
        try:
            record = platform(name, target if origin == "--platform-module" else None)
        except PlatformError as exc:
            print(f"{name}  {origin}  ({target}): refused: {exc}")
            status = 1
            continue
        offered = ", ".join(record.offers)
        print(f"{name}  {origin}  ({target})  offers {offered}")
        for workload, why in record.not_offered.items():
            print(f"    {workload} not offered: {why}")
    for line in twice:
        print(f"{prog}: {line}", file=sys.stderr)
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
