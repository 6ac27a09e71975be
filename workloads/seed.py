"""What seeding refuses with, on every platform, and its command line.

Each platform's seed module builds its fixture its own way; what the operator
types and sees is the same: ``python -m workloads.<platform>.seed`` with
``--api-url``, ``--stub-url``, ``--documents``, ``--fixture`` and ``--wait``, the
password from LOAD_PASSWORD, exit 0 with the fixture written, or 1 with one line
naming what is wrong and the fix (2, before anything is asked, for a bad option).
``python -m workloads.seed --platform NAME ...`` is the same command for the
platform the registry knows by that name, so a container stack (Compose) seeds
any platform from one command line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from engine.seam import SeedCommand
from inputs.fixture import DEFAULT_EMAIL, DEFAULT_PATH, Fixture, FixtureError, password_from_env
from workloads.corpus import DEFAULT_DOCUMENTS
from workloads.platforms import DEFAULT_PLATFORM, PLATFORMS, platform
from workloads.setup_client import APIError, APIUnreachable, add_trust_options, trust_given

if TYPE_CHECKING:
    # typeshed's "any dataclass": a platform's seeded part (engine.seam.Platform.seeded).
    from _typeshed import DataclassInstance

# The stub as `make stub` starts it on this machine.
DEFAULT_STUB_URL = "http://127.0.0.1:4020"
# Seconds to wait for the API to answer at all: none by default (a platform the operator
# forgot to start is said at once); a container stack passes --wait, since a platform
# container that started is not yet listening.
DEFAULT_WAIT_S = 0.0
# Seconds between asks while waiting for the API.
POLL_S = 0.5


class SeedError(Exception):
    """Seeding cannot continue; the message is one line naming what and the fix."""


@dataclass(frozen=True)
class SeedOptions:
    """What to seed where, as the command line says."""

    api_url: str
    stub_url: str
    # The user to sign in as, where the platform has users (``--email``); else unused.
    email: str
    documents: int
    fixture_path: str
    wait_s: float = DEFAULT_WAIT_S


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


def seed_parser(
    prog: str, description: str, *, api_url: str, stub_help: str, platform: str
) -> argparse.ArgumentParser:
    """The options every platform's seed takes; a platform adds its own to it.

    ``--platform`` is read by ``python -m workloads.seed`` (and ``loadkit seed``) to pick the
    platform's seed; the platform's own parser lists it so that ``--help`` shows every option,
    and refuses any platform but its own.
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)

    def this_platform(text: str) -> str:
        if text != platform:
            raise argparse.ArgumentTypeError(
                f"{text[:80]!r}: this is {platform}'s seed; run python -m workloads.seed "
                f"--platform {text[:80]}"
            )
        return text

    parser.add_argument(
        "--platform",
        type=this_platform,
        default=platform,
        help=f"which platform to seed, one of {', '.join(PLATFORMS)} (default: the one the "
        f"--fixture file names, else {DEFAULT_PLATFORM}); this help is {platform}'s",
    )
    parser.add_argument("--api-url", default=api_url, help=f"default {api_url}")
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
    add_trust_options(parser)
    return parser


def wait_for_api(answers: Callable[[], object], api_url: str, wait_s: float, start: str) -> None:
    """Call ``answers`` (the platform's cheapest unauthenticated read) until it does or
    ``wait_s`` has passed; SeedError with the last cause and ``start`` (how to start it)."""
    deadline = time.monotonic() + wait_s
    said = False
    while True:
        try:
            answers()
            return
        except (APIUnreachable, APIError) as exc:
            if time.monotonic() >= deadline:
                waited = f" after {wait_s:g} s" if wait_s > 0 else ""
                raise SeedError(
                    f"API at {api_url} does not answer{waited} ({exc}): start it ({start}) or "
                    "pass --api-url"
                ) from None
            if not said:
                print(f"seed: waiting up to {wait_s:g} s for the API at {api_url}", flush=True)
                said = True
        time.sleep(POLL_S)


def seeded_fixture(api_url: str, stub_url: str, platform: str, own: DataclassInstance) -> Fixture:
    """The fixture a platform's seed writes: the URLs as given, without a trailing slash (a
    run joins paths to them), and the platform's part (``own``) as its dataclass's fields."""
    return Fixture(
        api_url=api_url.rstrip("/"),
        stub_url=stub_url.rstrip("/"),
        platform=platform,
        seeded=asdict(own),
    )


def seed_command(
    *,
    platform: str,
    description: str,
    api_url: str,
    stub_help: str,
    seed: Callable[[SeedOptions, str], Fixture],
    users: bool = False,
) -> SeedCommand:
    """A platform's seed command line, ``main(argv, prog)``, on the skeleton every platform
    shares: the options (``--email`` too where the platform has ``users``), the password from
    LOAD_PASSWORD, ``seed(options, password)`` building the fixture, the fixture written; 0,
    or 1 and one line (SeedError, the setup client's APIError or APIUnreachable, FixtureError).
    """

    def main(argv: list[str], prog: str = f"python -m workloads.{platform}.seed") -> int:
        parser = seed_parser(
            prog, description, api_url=api_url, stub_help=stub_help, platform=platform
        )
        if users:
            parser.add_argument("--email", default=DEFAULT_EMAIL, help=f"default {DEFAULT_EMAIL}")
        args = parser.parse_args(argv)
        if (refused := trust_given(args, "seed", args.api_url, args.stub_url)) is not None:
            return refused
        email = args.email if users else DEFAULT_EMAIL
        options = SeedOptions(
            args.api_url, args.stub_url, email, args.documents, args.fixture, args.wait
        )
        try:
            fixture = seed(options, password_from_env())
            fixture.save(options.fixture_path)
        except (SeedError, FixtureError, APIUnreachable, APIError) as exc:
            print(f"seed: {exc}", file=sys.stderr)
            return 1
        print(f"seed: wrote {options.fixture_path}")
        return 0

    return main


def chosen_platform(argv: list[str]) -> str:
    """The platform ``argv`` seeds: its ``--platform``, else the one its ``--fixture`` file (an
    earlier seed's) names, else the default; an unknown name is left to the seed to refuse."""
    chooser = argparse.ArgumentParser(add_help=False)
    chooser.add_argument("--platform")
    chooser.add_argument("--fixture", default=str(DEFAULT_PATH))
    known, _ = chooser.parse_known_args(argv)
    if known.platform:
        return known.platform
    try:
        named = json.loads(Path(known.fixture).read_text()).get("platform")
    except (OSError, ValueError, AttributeError):
        named = None
    return named if named in PLATFORMS else DEFAULT_PLATFORM


def main(argv: list[str], prog: str = "python -m workloads.seed") -> int:
    """Seed the chosen platform through its record's seed command (``loadkit seed``)."""
    name = chosen_platform(argv)
    if name not in PLATFORMS:
        print(
            f"{prog}: --platform {name[:80]!r} is not one this kit speaks; use one of "
            f"{', '.join(PLATFORMS)}",
            file=sys.stderr,
        )
        return 2
    return platform(name).seed(argv, prog=prog)


if __name__ == "__main__":
    # Run as the imported module, not as __main__: the platforms raise its SeedError.
    from workloads import seed

    sys.exit(seed.main(sys.argv[1:]))
