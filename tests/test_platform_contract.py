"""Every registered platform keeps the contract engine/seam.py declares, checked in seconds.

mypy holds each ``PLATFORM`` record to the seam's types when ``make lint`` runs;
this holds the record the registry actually hands the runner (found by its module
name, at run time) to the same: each part there and of the declared type, each
callable taking what its caller passes, the dialect built as the load process
builds it on a fixture of the platform's own shape, and its ``requests`` naming
exactly the workloads its dialect serves. It loops over the registry, so a new
platform is checked by adding its line there. No server is started: the real
checks against running platforms are tests/test_two_platforms.py and
tests/test_langgraph_platform.py.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
from typing import get_type_hints

import pytest

from engine.http import HttpCall
from engine.seam import (
    Attempt,
    Dialect,
    DialectError,
    FollowUpAccepted,
    Platform,
    RunPreflight,
    SeedCommand,
)
from inputs.fixture import Fixture, FixtureError, read_seeded
from inputs.scenario import WORKLOADS
from stack.platforms import platform_stack
from stack.processes import ROOT
from tests.support.transport import transport
from workloads.platforms import PLATFORMS, platform

# Where the fixture's platform says the deployment is: nothing listens, nothing is sent.
URL = "http://127.0.0.1:9"
# The workloads a dialect serves with ``exchange`` (by default ``call``'s request) without
# signing in first (api_read rotates over the lists sign-in sets up; chat_stream is
# ``chat_turn``, which every dialect must have).
CALLED_UNSIGNED = tuple(w for w in WORKLOADS if w not in ("api_read", "chat_stream"))
# What every dialect serves: a dialect is a Dialect only with these.
ALWAYS = ("api_read", "chat_stream")
# A seeded field's value by its declared type, for a fixture of the platform's shape.
SAMPLE = {str: "loadkit-contract", int: 3, str | None: "loadkit-contract"}

NAMES = sorted(PLATFORMS)


def _mismatches(part: object, protocol: type) -> list[str]:
    """What keeps ``part`` from being called as ``protocol``'s ``__call__`` declares: each
    positional-only parameter in its place and every other one by its name (with a default
    where the protocol's has one), of the declared type, no other parameter without a
    default, and the declared return type."""
    declared = list(inspect.signature(protocol.__call__).parameters.values())[1:]
    want = get_type_hints(protocol.__call__)
    assert callable(part)
    has = get_type_hints(part)
    params = list(inspect.signature(part).parameters.values())
    problems, taken = [], set()
    positional = [p for p in declared if p.kind is inspect.Parameter.POSITIONAL_ONLY]
    for place, wanted in enumerate(positional):
        if place >= len(params) or params[place].kind not in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            problems.append(f"no positional parameter {place + 1} ({wanted.name})")
            continue
        taken.add(params[place].name)
        if has.get(params[place].name) != want[wanted.name]:
            problems.append(f"parameter {place + 1} is {has.get(params[place].name)}")
    for wanted in (p for p in declared if p.kind is not inspect.Parameter.POSITIONAL_ONLY):
        given = next((p for p in params if p.name == wanted.name), None)
        if given is None or given.kind is inspect.Parameter.POSITIONAL_ONLY:
            problems.append(f"no keyword parameter {wanted.name}")
            continue
        taken.add(given.name)
        if has.get(given.name) != want[wanted.name]:
            problems.append(f"{wanted.name} is {has.get(given.name)}")
        if wanted.default is not inspect.Parameter.empty and given.default is given.empty:
            problems.append(f"{wanted.name} has no default, and a caller may leave it out")
    for extra in params:
        if extra.name not in taken and extra.default is inspect.Parameter.empty:
            problems.append(f"{extra.name} is required, and no caller passes it")
    if has.get("return") != want["return"]:
        problems.append(f"returns {has.get('return')}, not {want['return']}")
    return problems


def _required(record: Platform) -> list[str]:
    """The fields of the platform's fixture part that have no default."""
    return [
        f.name
        for f in dataclasses.fields(record.seeded)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]


def _shaped_fixture(record: Platform) -> Fixture:
    """A fixture of the platform's shape: a value of its declared type for every field of the
    platform's part that has no default or may be None (the others read as their defaults)."""
    types = get_type_hints(record.seeded)
    optional = [f.name for f in dataclasses.fields(record.seeded) if f.default is None]
    seeded = {name: SAMPLE[types[name]] for name in [*_required(record), *optional]}
    return Fixture(api_url=URL, stub_url=URL, platform=record.name, seeded=seeded)


def _dialect(record: Platform, fixture: Fixture) -> Dialect:
    """The dialect as runner/load_process.py builds it."""
    return record.dialect(fixture, URL, "contract", transport(URL))


@pytest.mark.parametrize("name", NAMES)
def test_the_registry_hands_each_platform_its_own_record_of_typed_parts(name: str) -> None:
    record = platform(name)
    assert isinstance(record, Platform) and record.name == name
    assert inspect.isclass(record.dialect) and issubclass(record.dialect, Dialect)
    assert not inspect.isabstract(record.dialect), "a method of Dialect is left abstract"
    assert dataclasses.is_dataclass(record.seeded) and isinstance(record.seeded, type)
    assert _mismatches(record.run_preflight, RunPreflight) == []
    assert _mismatches(record.seed, SeedCommand) == []
    assert record.follow_up is None or _mismatches(record.follow_up, FollowUpAccepted) == []
    declared = {f.name for f in dataclasses.fields(Platform)}
    assert set(vars(record)) == declared


@pytest.mark.parametrize("name", NAMES)
def test_the_dialect_is_built_as_the_load_process_builds_it(name: str) -> None:
    record = platform(name)
    wanted = inspect.signature(Dialect.__init__).parameters
    built = inspect.signature(record.dialect.__init__).parameters
    assert [(p.name, p.kind) for p in built.values()] == [(p.name, p.kind) for p in wanted.values()]
    assert get_type_hints(record.dialect.__init__) == get_type_hints(Dialect.__init__)

    fixture = _shaped_fixture(record)
    dialect = _dialect(record, fixture)
    assert isinstance(dialect, record.dialect)
    assert (dialect.fixture, dialect.base_url, dialect.run_id) == (fixture, URL, "contract")
    assert read_seeded(record.seeded, fixture) == record.seeded(**fixture.seeded)


@pytest.mark.parametrize("name", NAMES)
def test_a_fixture_missing_a_field_of_the_platform_stops_the_dialect(name: str) -> None:
    """The load process builds the dialect before sign-in and refuses on a FixtureError: a
    fixture short of a field the platform's part requires must stop there, naming it."""
    record = platform(name)
    fixture = _shaped_fixture(record)
    required = _required(record)
    assert required, "a platform's part names at least what it runs against"
    for field in required:
        short = {k: v for k, v in fixture.seeded.items() if k != field}
        with pytest.raises(FixtureError, match=rf"seeded\.{field}\b.* missing"):
            _dialect(record, dataclasses.replace(fixture, seeded=short))


@pytest.mark.parametrize("name", NAMES)
def test_requests_names_exactly_the_workloads_the_dialect_serves(name: str) -> None:
    record = platform(name)
    assert set(record.requests) <= set(WORKLOADS)
    assert all(isinstance(said, str) and said.strip() for said in record.requests.values())
    assert set(ALWAYS) <= set(record.requests)
    dialect = _dialect(record, _shaped_fixture(record))
    served = set()
    for workload in CALLED_UNSIGNED:
        attempt = Attempt(0, False, time.monotonic, time.monotonic)
        try:
            with dialect.exchange(workload, attempt) as call:
                assert isinstance(call, HttpCall) and call.path.startswith("/"), (workload, call)
        except ValueError:
            continue
        except DialectError:
            # Served on something sign-in makes (opencode's sessions): not before it.
            pass
        served.add(workload)
    assert served == set(record.requests) & set(CALLED_UNSIGNED)


@pytest.mark.parametrize("name", NAMES)
def test_each_platform_has_its_local_stack(name: str) -> None:
    stack = platform_stack(name)
    assert callable(stack.start_stack) and isinstance(stack.WHAT, str) and stack.WHAT


def test_every_platform_package_is_registered() -> None:
    """A package under workloads/ exporting a record is in the registry, by its own name."""
    packages = {p.parent.name for p in (ROOT / "workloads").glob("*/platform.py")}
    assert packages == set(PLATFORMS)
    assert {n: f"workloads.{n}.platform" for n in packages} == PLATFORMS


def test_an_unknown_platform_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=f"use one of {', '.join(NAMES)}"):
        platform("openhands")
