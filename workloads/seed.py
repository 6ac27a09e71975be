"""What seeding refuses with, on every platform, and its command line.

Each platform's seed module builds its fixture its own way; what the operator
types and sees is the same: ``python -m workloads.<platform>.seed`` with
``--api-url``, ``--stub-url``, ``--documents`` and ``--fixture``, the password
from LOAD_PASSWORD, exit 0 with the fixture written, or 1 with one line naming
what is wrong and the fix (2, before anything is asked, for a bad option).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from fixture import DEFAULT_PATH, Fixture, FixtureError, password_from_env
from workloads.corpus import DEFAULT_DOCUMENTS
from workloads.setup_client import APIError, APIUnreachable

# The stub as `make stub` starts it on this machine.
DEFAULT_STUB_URL = "http://127.0.0.1:4020"


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
    return parser


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
