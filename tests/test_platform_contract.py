"""Every built-in platform keeps the contract engine/seam.py declares, checked in seconds, and
the check itself (``loadkit check-platform``, workloads/check.py) refuses what breaks it.

mypy holds each built-in ``PLATFORM`` record to the seam's types when ``make lint`` runs;
this holds the record the registry actually hands the runner to the same at run time,
through the command an author runs on a package of their own. No server is started: the
checks against running platforms are the platforms' own tests and tests/test_plugin.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from importlib import import_module

import pytest

from engine.http import HttpCall
from engine.samples import Result
from engine.seam import Attempt, Dialect, Platform
from inputs.fixture import FixtureError
from inputs.workload import WORKLOADS
from stack.processes import ROOT
from workloads.check import contract_problems, shaped_fixture
from workloads.platforms import BUILT_IN, PlatformError, names, platform, stated_problem

NAMES = sorted(BUILT_IN)


@pytest.mark.parametrize("name", NAMES)
def test_each_built_in_platform_holds_the_contract(name: str) -> None:
    record = platform(name)
    assert isinstance(record, Platform) and record.name == name
    assert contract_problems(record) == []


@pytest.mark.parametrize("name", NAMES)
def test_a_fixture_missing_a_field_of_the_platform_is_refused_naming_it(name: str) -> None:
    """The load process reads the platform's part before it builds the dialect and refuses on
    a FixtureError: a fixture short of a required field stops there, naming it."""
    record = platform(name)
    fixture = shaped_fixture(record)
    required = [
        f.name
        for f in dataclasses.fields(record.seeded)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    assert required, "a platform's part names at least what it runs against"
    for field in required:
        short = {k: v for k, v in fixture.seeded.items() if k != field}
        with pytest.raises(FixtureError, match=rf"seeded\.{field}\b.* missing"):
            record.seeded_from(dataclasses.replace(fixture, seeded=short))


def test_every_platform_package_is_registered() -> None:
    """A package under workloads/ exporting a record is in the registry, by its record's name
    (a package's directory is a Python name: ``ag_ui`` registers ``ag-ui``)."""
    modules = [
        f"workloads.{p.parent.name}.platform" for p in (ROOT / "workloads").glob("*/platform.py")
    ]
    assert {import_module(m).PLATFORM.name: m for m in modules} == BUILT_IN
    assert set(BUILT_IN) <= set(names())


def test_an_unknown_platform_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(PlatformError, match=f"use one of {', '.join(names())}"):
        platform("openhands")


class _Serves(Dialect):
    """A dialect that serves every plain-HTTP workload with one request."""

    def call(self, workload: str, k: int) -> HttpCall:
        return HttpCall("GET", f"/{workload}")

    def chat_turn(self, attempt: Attempt, timeout_s: float) -> Result:
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class _Nothing:
    """A seeded part with nothing in it."""


def _record(
    offers: Mapping[str, str], not_offered: Mapping[str, str], dialect: type = _Serves
) -> Platform:
    return Platform(
        name="broken",
        dialect=dialect,
        seeded=_Nothing,
        offers=offers,
        not_offered=not_offered,
    )


def test_a_platform_that_does_not_state_every_workload_is_refused_naming_them() -> None:
    record = _record({"api_read": "GET /x"}, {"ingest": "no uploads"})
    problem = stated_problem(record)
    assert problem is not None
    assert "chat_stream, agent_run, rag_query, trigger_fire neither offered nor not_offered" in (
        problem
    )
    both = _record(dict.fromkeys(WORKLOADS, "x"), {"ingest": "no"})
    assert stated_problem(both) == "ingest both offered and not offered"
    silent = _record({w: "x" for w in WORKLOADS if w != "ingest"}, {"ingest": " "})
    assert stated_problem(silent) == "not_offered.ingest gives no reason; the report shows it"


def test_a_dialect_that_serves_what_it_says_it_does_not_offer_is_refused() -> None:
    offers = {w: "x" for w in WORKLOADS if w != "ingest"}
    problems = contract_problems(_record(offers, {"ingest": "no uploads"}))
    assert problems == [
        "dialect: serves ingest, which the record says it does not offer; raise ValueError in "
        "call() for it, or offer it"
    ]


def test_a_dialect_that_refuses_what_it_offers_is_refused() -> None:
    class Refuses(_Serves):
        def call(self, workload: str, k: int) -> HttpCall:
            if workload == "rag_query":
                raise ValueError(workload)
            return super().call(workload, k)

    problems = contract_problems(_record(dict.fromkeys(WORKLOADS, "x"), {}, Refuses))
    assert problems == ["dialect: offers rag_query but call() refuses it (ValueError)"]


def test_a_seeded_field_of_a_type_the_fixture_cannot_hold_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Listed:
        ids: list[str]

    record = dataclasses.replace(_record(dict.fromkeys(WORKLOADS, "x"), {}), seeded=Listed)
    assert contract_problems(record)[0].startswith("seeded.ids: list[str] is not str, int or bool")
