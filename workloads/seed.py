"""Seeding, the kit's command for every platform: the fixture a run reads, made through the
platform's API.

``loadkit seed --platform NAME`` (``python -m workloads.seed``, ``make seed``) takes the
same options on every platform (``--api-url``, ``--stub-url``, ``--documents``,
``--fixture``, ``--wait``, ``--email``, trust) and the platform's own (an A2A server's
``--agent``); waits for the API's health; has the platform make or find what the run
needs (``Seeding.make``, returning its part of the fixture); then reaches it as a run
will (health, sign-in, the credential) before it writes the fixture, so a fixture on disk
is one a run can use. The credential comes from LOAD_PASSWORD and only where the platform
asks for one. Exit 0 with the fixture written, 1 with one line naming what is wrong and
the fix, 2 for a bad option (before anything is asked).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from engine.http import HttpCall, HttpTransport
from engine.http1 import failure_detail
from engine.seam import DialectError, Platform, SeedError, SeedSetup
from engine.sign_in import Credential, SignInRefused, secret_for
from inputs.fixture import (
    DEFAULT_EMAIL,
    DEFAULT_PATH,
    PASSWORD_ENV,
    Fixture,
    FixtureError,
)
from workloads.corpus import DEFAULT_DOCUMENTS
from workloads.one_arrival import MAX_BODY, signed_setup
from workloads.platforms import DEFAULT_PLATFORM, PlatformError, names, platform
from workloads.reach import SETUP_TIMEOUT_S, UP, CredentialRefused
from workloads.setup_client import (
    APIError,
    APIUnreachable,
    SetupClient,
    add_trust_options,
    trust_given,
)

# The stub as `make stub` starts it on this machine.
DEFAULT_STUB_URL = "http://127.0.0.1:4020"
# Seconds to wait for the API to answer at all: none by default (a platform the operator
# forgot to start is said at once); a container stack passes --wait, since a platform
# container that started is not yet listening.
DEFAULT_WAIT_S = 0.0
# Seconds between asks while waiting for the API.
POLL_S = 0.5


def seconds(text: str) -> float:
    """An option's number of seconds: finite and not negative (an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be >= 0 and finite")
    return value


def positive(text: str) -> int:
    """An option's whole number, at least 1 (an argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def seed_parser(record: Platform, prog: str) -> argparse.ArgumentParser:
    """The options every platform's seed takes, then the platform's own; ``--help`` shows
    the chosen platform's."""
    seeding = record.seeding
    parser = argparse.ArgumentParser(
        prog=prog,
        description=f"Seed {record.name}: make or find what a run needs through its API and "
        "write the fixture (the credential from LOAD_PASSWORD, where the platform has one).",
    )
    parser.add_argument(
        "--platform",
        default=record.name,
        help=f"which platform to seed, one of {', '.join(names())} (default: the one the "
        f"--fixture file names, else {DEFAULT_PLATFORM}); this help is {record.name}'s",
    )
    parser.add_argument(
        "--platform-module",
        metavar="MODULE",
        help="the module exporting a platform that is not installed (the fixture records it)",
    )
    api_default = seeding.api_url if seeding else None
    parser.add_argument(
        "--api-url",
        default=api_default,
        required=api_default is None,
        help=f"the platform's API (default {api_default})" if api_default else "the API",
    )
    stub_help = seeding.stub_help if seeding else "the stub as the platform reaches it"
    parser.add_argument(
        "--stub-url", default=DEFAULT_STUB_URL, help=f"{stub_help} (default {DEFAULT_STUB_URL})"
    )
    parser.add_argument(
        "--documents",
        type=positive,
        default=DEFAULT_DOCUMENTS,
        help=f"synthetic documents in the knowledge base (default {DEFAULT_DOCUMENTS})",
    )
    parser.add_argument("--fixture", default=str(DEFAULT_PATH), help=f"default {DEFAULT_PATH}")
    parser.add_argument(
        "--wait",
        type=seconds,
        default=DEFAULT_WAIT_S,
        metavar="SECONDS",
        help="keep asking until the API answers, for at most this long (default: ask once)",
    )
    parser.add_argument(
        "--email",
        default=DEFAULT_EMAIL,
        help=f"the user to sign in as, where the platform has users (default {DEFAULT_EMAIL})",
    )
    add_own_options(parser, record)
    add_trust_options(parser)
    return parser


def add_own_options(parser: argparse.ArgumentParser, record: Platform) -> None:
    """The seed options of the platform's own (an A2A server's --agent) on ``parser``."""
    for option in record.seeding.options if record.seeding else ():
        if option.switch:
            parser.add_argument(option.flag, action="store_true", help=option.help)
        else:
            parser.add_argument(option.flag, default=option.default, help=option.help)


def own_options(record: Platform, args: argparse.Namespace) -> dict[str, str | bool | None]:
    """What the command line said for the platform's own seed options (SeedSetup.own)."""
    options = record.seeding.options if record.seeding else ()
    return {option.dest: getattr(args, option.dest) for option in options}


def wait_for(answers: Callable[[], object], what: str, wait_s: float, start: str) -> None:
    """Call ``answers`` (a cheap request that raises OSError or APIUnreachable while nothing
    answers) until it returns or ``wait_s`` has passed; SeedError naming ``what``, the last
    cause and ``start`` (how to start it). What it raises otherwise (an answer that is not
    the platform's) is raised at once."""
    deadline = time.monotonic() + wait_s
    said = False
    while True:
        try:
            answers()
            return
        except (OSError, APIUnreachable) as exc:
            if time.monotonic() >= deadline:
                waited = f" after {wait_s:g} s" if wait_s > 0 else ""
                cause = failure_detail(exc) if isinstance(exc, OSError) else str(exc)
                raise SeedError(
                    f"{what} does not answer{waited} ({cause}): start it ({start}) or pass "
                    "--api-url"
                ) from None
            if not said:
                print(f"seed: waiting up to {wait_s:g} s for {what}", flush=True)
                said = True
        time.sleep(POLL_S)


def _health_waited(record: Platform, setup: SeedSetup) -> None:
    """Wait (up to --wait) for the API's health path, where the platform has one."""
    path = record.dialect.HEALTH
    if path is None:
        return
    http = HttpTransport(setup.api_url, max_body=MAX_BODY)

    def answers() -> None:
        status = http.send(HttpCall("GET", path, b"", {}), SETUP_TIMEOUT_S).status
        if status not in UP:
            raise SeedError(f"{path} answered HTTP {status}; is it {record.name}?")

    try:
        wait_for(answers, f"{record.name} at {setup.api_url}", setup.wait_s, _start(record))
    finally:
        http.close()


def _signed_in(record: Platform, setup: SeedSetup) -> dict[str, str]:
    """The headers the platform's sign-in makes before anything is seeded (a login, where the
    platform has one); CredentialRefused in one line."""
    with SetupClient(setup.api_url) as client:
        try:
            return record.dialect.sign_in.headers(client.send, None, setup.email, setup.secret)
        except SignInRefused as exc:
            raise CredentialRefused(f"{record.name}: {exc}") from None


def _start(record: Platform) -> str:
    return record.started_by or f"see {record.name}'s documentation"


def seeded(record: Platform, setup: SeedSetup, module: str | None) -> Fixture:
    """The fixture for ``record``'s deployment at ``setup.api_url``: waited for, signed in,
    made, then reached as a run will reach it; SeedError (or the reach's own error) in one
    line."""
    _health_waited(record, setup)
    setup = dataclasses.replace(setup, auth=_signed_in(record, setup))
    if record.seeding is not None:
        own = record.seeding.make(setup)
    else:
        try:
            own = record.seeded()
        except TypeError:
            raise SeedError(
                f"{record.name}'s seeded part has fields without defaults and the platform "
                "has no seeding to fill them"
            ) from None
    fixture = Fixture(
        api_url=setup.api_url.rstrip("/"),
        stub_url=setup.stub_url.rstrip("/"),
        platform=record.name,
        module=module,
        seeded=dataclasses.asdict(own),
    )
    secret = setup.secret
    if not secret and record.credential(own) is not Credential.NONE:
        secret = secret_for(record.credential(own))
    fix = "pass the right --api-url"
    with signed_setup(record, fixture, setup.email, secret, purpose="seed", fix=fix):
        pass
    return fixture


def chosen(argv: list[str]) -> tuple[str, str | None]:
    """The platform ``argv`` seeds and its module: its ``--platform``, else the one its
    ``--fixture`` file (an earlier seed's) names, else the default."""
    chooser = argparse.ArgumentParser(add_help=False)
    chooser.add_argument("--platform")
    chooser.add_argument("--platform-module")
    chooser.add_argument("--fixture", default=str(DEFAULT_PATH))
    known, _ = chooser.parse_known_args(argv)
    if known.platform:
        return known.platform, known.platform_module
    try:
        named = json.loads(Path(known.fixture).read_text())
        return str(named["platform"]), known.platform_module or named.get("module")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return DEFAULT_PLATFORM, known.platform_module


def main(argv: list[str], prog: str = "python -m workloads.seed") -> int:
    """Seed the chosen platform (``loadkit seed``); 0, 1 with one line, or 2."""
    name, module = chosen(argv)
    try:
        record = platform(name, module)
    except PlatformError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    args = seed_parser(record, prog).parse_args(argv)
    if (refused := trust_given(args, "seed", args.api_url, args.stub_url)) is not None:
        return refused
    own = own_options(record, args)
    try:
        asked = record.credential(None)
        secret = secret_for(asked) if asked is not Credential.NONE else _optional_secret()
        setup = SeedSetup(
            args.api_url, args.stub_url, args.documents, args.email, secret, args.wait, own
        )
        fixture = seeded(record, setup, module)
        fixture.save(args.fixture)
    except (SeedError, FixtureError, APIUnreachable, APIError, DialectError) as exc:
        print(f"seed: {exc}", file=sys.stderr)
        return 1
    print(f"seed: wrote {args.fixture}")
    return 0


def _optional_secret() -> str:
    """LOAD_PASSWORD where it is set, for a platform that decides from the deployment whether
    it asks for one (an A2A card); "" where not."""
    value = os.environ.get(PASSWORD_ENV, "")
    return secret_for(Credential.KEY) if value else ""


if __name__ == "__main__":
    # Run as the imported module, not as __main__: the platforms raise its SeedError.
    from workloads import seed as module

    sys.exit(module.main(sys.argv[1:]))
