"""``loadkit check-platform NAME``: the platform contract as a command an author runs on a package.

First, without a server and in about a second, the record as the registry hands it over
(engine/seam.py's contract, every problem at once, one line each, as k6's configs return
every error): what it offers, its seeded dataclass and the values it may hold, the dialect
built as a load process builds it, signed in, each plain-HTTP workload it offers served
by a request and every other one refused, and each part's shape. mypy holds the kit's
own platforms to the same at ``make lint``; this holds any installed or named one at run
time. Then, given ``--api-url``, the deployment there is seeded as a check (the fixture is
kept in memory, and what seeding makes for a check is its own: a run's fixture on disk
stays good), reached and signed in as a run would, and sent one real request of each
offered workload through the run's own path, each outcome printed with the fix for a
failure.
Exit 0 when all holds, 1 with the problems, 2 for a command line it cannot read.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import sys
import time
from collections.abc import Callable
from typing import get_type_hints

from engine.agent_plan import AgentTool
from engine.http import HttpCall, HttpTransport
from engine.samples import OK
from engine.seam import (
    Attempt,
    Deployment,
    Dialect,
    DialectError,
    Platform,
    PreflightError,
    SeedError,
    Seeding,
    SeedSetup,
)
from engine.sign_in import Credential, SignIn, secret_for
from inputs.fixture import (
    DEFAULT_EMAIL,
    PASSWORD_ENV,
    Fixture,
    FixtureError,
    url_problem,
)
from inputs.workload import WORKLOADS
from workloads.one_arrival import MAX_BODY, fix_for, signed_setup
from workloads.platforms import PlatformError, platform
from workloads.seed import DEFAULT_STUB_URL, add_own_options, own_options, seeded
from workloads.setup_client import APIError, APIUnreachable, add_trust_options, trust_given

# Where the contract's dialect is built to point: nothing listens there, nothing is sent.
NOWHERE = "http://127.0.0.1:9"
# A seeded field's value by its declared type, when the field has no default.
SAMPLE: dict[object, object] = {
    str: "loadkit-contract",
    int: 3,
    bool: False,
    str | None: "loadkit-contract",
    int | None: 3,
    bool | None: False,
}
# The parameters a follower is called with, by keyword (FollowUpAccepted).
FOLLOW_UP_KEYWORDS = ("run_id", "start_epoch", "accepted", "grace_s")


def contract_problems(record: Platform) -> list[str]:
    """Every way ``record`` breaks the contract, one line each (none: it holds)."""
    problems = _part_problems(record)
    if problems:
        return problems
    return _dialect_problems(record)


def _part_problems(record: Platform) -> list[str]:
    """The record's parts, each of the kind the seam declares."""
    problems: list[str] = []
    for workload, said in record.offers.items():
        if not isinstance(said, str) or not said.strip():
            problems.append(f"offers.{workload}: say what it becomes on the wire, in words")
    if not (dataclasses.is_dataclass(record.seeded) and isinstance(record.seeded, type)):
        problems.append("seeded: not a dataclass; declare the seeded part with @dataclass")
    else:
        for name, kind in get_type_hints(record.seeded).items():
            if kind not in SAMPLE:
                problems.append(
                    f"seeded.{name}: {kind} is not str, int or bool (or one | None): the "
                    "fixture holds only those (inputs/fixture.py)"
                )
    dialect = record.dialect
    if not (inspect.isclass(dialect) and issubclass(dialect, Dialect)):
        return [*problems, "dialect: not a subclass of engine.seam.Dialect"]
    if inspect.isabstract(dialect):
        left = ", ".join(sorted(getattr(dialect, "__abstractmethods__", ())))
        problems.append(f"dialect: {left} left abstract; a dialect implements call and chat_turn")
    if _parameters(dialect.__init__) != _parameters(Dialect.__init__):
        problems.append("dialect.__init__: take (deployment, http), as the load process builds it")
    health = dialect.HEALTH
    if health is not None and not (isinstance(health, str) and health.startswith("/")):
        problems.append(f"dialect.HEALTH: {health!r} is not a path from /, nor None")
    if not isinstance(dialect.sign_in, SignIn):
        problems.append("dialect.sign_in: not an engine.sign_in.SignIn (NO_SIGN_IN, KeyHeader...)")
    problems += _seeding_problems(record.seeding)
    if record.probes is not None and not _takes_one(record.probes):
        problems.append("probes: take one Setup and return a context manager of Probes")
    if record.follow_up is not None and not _follows(record.follow_up):
        keywords = ", ".join(FOLLOW_UP_KEYWORDS)
        problems.append(f"follow_up: take (setup, /, *, {keywords})")
    if record.tool is not None and not isinstance(record.tool, AgentTool):
        problems.append("tool: not an engine.agent_plan.AgentTool, nor None")
    return problems


def _seeding_problems(seeding: Seeding | None) -> list[str]:
    if seeding is None:
        return []
    if not isinstance(seeding, Seeding):
        return ["seeding: not an engine.seam.Seeding, nor None"]
    problems = []
    if not _takes_one(seeding.make):
        problems.append("seeding.make: take one SeedSetup and return the seeded dataclass")
    if problem := url_problem(seeding.api_url):
        problems.append(f"seeding.api_url: {problem}")
    return problems


def _dialect_problems(record: Platform) -> list[str]:
    """The dialect built on a fixture of the platform's shape and signed in: each plain-HTTP
    workload it offers served by a request from /, every other one refused (ValueError)."""
    try:
        fixture = shaped_fixture(record)
        seeded_part = record.seeded_from(fixture)
        dialect = record.dialect(
            Deployment(fixture, seeded_part, NOWHERE, "contract"),
            HttpTransport(NOWHERE, max_body=MAX_BODY),
        )
        dialect.signed_in({"Authorization": "Bearer contract"}, "contract-secret")
        subject = record.subject(seeded_part)
    except Exception as exc:
        return [f"dialect: building it on a fixture of its shape raised {_said(exc)}"]
    problems = [] if isinstance(subject, str) else ["subject: return the line's words, a str"]
    for workload in WORKLOADS:
        if workload == "chat_stream":
            continue
        offered = workload in record.offers
        served, said = _served(dialect, workload)
        if offered and not served:
            problems.append(f"dialect: offers {workload} but {said}")
        elif not offered and served:
            problems.append(
                f"dialect: serves {workload}, which the record says it does not offer; raise "
                "ValueError in call() for it, or offer it"
            )
    return problems


def _served(dialect: Dialect, workload: str) -> tuple[bool, str]:
    """Whether the dialect serves ``workload`` (a request from /, or one it needs the network
    for first, as opencode makes a session), and if not, why, in the problem's words."""
    attempt = Attempt(0, False, time.monotonic, time.monotonic)
    try:
        with dialect.exchange(workload, attempt) as call:
            if isinstance(call, HttpCall) and call.path.startswith("/"):
                return True, ""
            return False, f"its request is {call!r}, not an HttpCall to a path from /"
    except ValueError:
        return False, "call() refuses it (ValueError)"
    except (OSError, DialectError):
        # It went to the network for something of its own first: it serves it.
        return True, ""
    except Exception as exc:
        return False, f"call() raised {_said(exc)}"


def shaped_fixture(record: Platform) -> Fixture:
    """A fixture of the platform's shape: each field of its seeded part at its default (a path,
    say), else (or when its default is None: nothing seeded) a value of its declared type."""
    types = get_type_hints(record.seeded)
    seeded_part: dict[str, object] = {}
    for spec in dataclasses.fields(record.seeded):
        if spec.default not in (dataclasses.MISSING, None):
            seeded_part[spec.name] = spec.default
        else:
            seeded_part[spec.name] = SAMPLE.get(types[spec.name], "loadkit-contract")
    return Fixture(api_url=NOWHERE, stub_url=NOWHERE, platform=record.name, seeded=seeded_part)


def _parameters(function: Callable) -> list[tuple[str, object]]:
    return [(p.name, p.kind) for p in inspect.signature(function).parameters.values()]


def _takes_one(function: object) -> bool:
    """Callable with one positional argument (and nothing else required)."""
    if not callable(function):
        return False
    try:
        inspect.signature(function).bind(None)
    except (TypeError, ValueError):
        return False
    return True


def _follows(function: object) -> bool:
    if not callable(function):
        return False
    try:
        inspect.signature(function).bind(None, **dict.fromkeys(FOLLOW_UP_KEYWORDS))
    except (TypeError, ValueError):
        return False
    return True


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def live(record: Platform, args: argparse.Namespace, module: str | None) -> list[str]:
    """One request of each offered workload against the deployment at ``--api-url``, printed
    as it ends; the failures' lines."""
    asked = record.credential(None)
    secret = secret_for(asked) if asked is not Credential.NONE else os.environ.get(PASSWORD_ENV, "")
    own = own_options(record, args)
    setup = SeedSetup(
        args.api_url, args.stub_url, args.documents, args.email, secret, 0.0, own, check=True
    )
    fixture = seeded(record, setup, module)
    if not secret and record.credential(record.seeded_from(fixture)) is not Credential.NONE:
        secret = secret_for(Credential.KEY)
    failures = []
    fix = "pass the right --api-url"
    with signed_setup(record, fixture, args.email, secret, purpose="check", fix=fix) as (
        checked,
        _dialect,
    ):
        signed = "no sign-in" if not secret else "signed in, credential accepted"
        print(f"{record.name} at {fixture.api_url}: reached, {signed}")
        for workload in (w for w in WORKLOADS if w in record.offers):
            began = time.monotonic()
            result = checked.one(workload)
            took = (time.monotonic() - began) * 1000
            head = f"  {workload:<13} {result.outcome} in {took:,.0f} ms (HTTP {result.status})"
            if result.outcome == OK:
                print(head)
                continue
            line = f"{head}: {result.detail}; fix: {fix_for(workload, result)}"
            print(line)
            failures.append(line.strip())
        for workload, why in record.not_offered.items():
            print(f"  {workload:<13} not offered: {why}")
    return failures


def main(argv: list[str], prog: str = "python -m workloads.check") -> int:
    """``loadkit check-platform``: 0 when the contract (and the deployment) hold, 1 when not."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Check a platform package against the kit's contract; with --api-url, "
        "also send one request of each workload it offers to a running deployment.",
    )
    parser.add_argument("name", help="the platform's name, as `loadkit platforms` lists it")
    parser.add_argument(
        "--platform-module", metavar="MODULE", help="the module exporting it, if not installed"
    )
    parser.add_argument("--api-url", help="a running deployment to send one request of each")
    parser.add_argument(
        "--stub-url", default=DEFAULT_STUB_URL, help=f"the stub (default {DEFAULT_STUB_URL})"
    )
    parser.add_argument("--documents", type=int, default=4, help="documents to seed (default 4)")
    parser.add_argument(
        "--email", default=DEFAULT_EMAIL, help=f"where it has users (default {DEFAULT_EMAIL})"
    )
    add_trust_options(parser)
    known, _ = parser.parse_known_args(argv)
    try:
        record = platform(known.name, known.platform_module)
    except PlatformError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    add_own_options(parser, record)
    args = parser.parse_args(argv)
    problems = contract_problems(record)
    for line in problems:
        print(f"contract: {line}")
    if problems:
        return 1
    print(f"contract: {record.name} holds it (offers {', '.join(record.offers)})")
    if not args.api_url:
        return 0
    if (refused := trust_given(args, "check-platform", args.api_url)) is not None:
        return refused
    try:
        failures = live(record, args, args.platform_module)
    except (
        DialectError,
        PreflightError,
        SeedError,
        FixtureError,
        APIError,
        APIUnreachable,
    ) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
