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
import sys
import time
from collections.abc import Callable
from importlib import import_module

from fixture import DEFAULT_PATH, Fixture, FixtureError, password_from_env
from workloads.corpus import DEFAULT_DOCUMENTS
from workloads.setup_client import APIError, APIUnreachable

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
    prog: str, description: str, *, api_url: str, stub_help: str
) -> argparse.ArgumentParser:
    """The options every platform's seed takes; a platform adds its own to it."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
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


def seed_main(seed: Callable[[str], Fixture], fixture_path: str) -> int:
    """Seed with the password from LOAD_PASSWORD and write the fixture: 0, or 1 and one line.

    ``seed`` takes the password and returns the fixture, raising SeedError (or the setup
    client's APIError / APIUnreachable, or FixtureError) when it cannot.
    """
    try:
        fixture = seed(password_from_env())
    except (SeedError, FixtureError, APIUnreachable, APIError) as exc:
        print(f"seed: {exc}", file=sys.stderr)
        return 1
    fixture.save(fixture_path)
    print(f"seed: wrote {fixture_path}")
    return 0


def main(argv: list[str]) -> int:
    """``--platform NAME`` and that platform's seed command line: the platform's seed."""
    from workloads.platforms import DEFAULT_PLATFORM, PLATFORMS

    parser = argparse.ArgumentParser(
        prog="python -m workloads.seed",
        description="Seed the named platform; every other option is that platform's seed's.",
    )
    parser.add_argument("--platform", choices=sorted(PLATFORMS), default=DEFAULT_PLATFORM)
    args, rest = parser.parse_known_args(argv)
    return import_module(f"{PLATFORMS[args.platform]}.seed").main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
