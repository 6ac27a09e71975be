"""The kit's transport (and a dialect on it) as a test builds it: bounded as a run on the
scenario's defaults is, signed in as a load process signs in."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from engine.http import HttpTransport
from engine.seam import Deployment, Dialect, Setup
from inputs.fixture import Fixture
from inputs.scenario import scenario_from_dict
from workloads.one_arrival import signed_setup
from workloads.platforms import platform_of
from workloads.reach import signed_in

# The smallest scenario there is: every default the scenario states, the body bound among them.
DEFAULTS = scenario_from_dict(
    {
        "name": "defaults",
        "workloads": {"api_read": 1},
        "phases": [{"name": "p", "duration_s": 1, "rate": 1}],
    }
)
# The body bound a run reads to when scenario.yaml sets none (bytes).
MAX_BODY = DEFAULTS.max_body_bytes


def transport(url: str, **options: Any) -> HttpTransport:
    """A transport to ``url`` with the scenario's default body bound (``options``: the
    transport's own, such as ``idle_s``)."""
    return HttpTransport(url, max_body=MAX_BODY, **options)


def dialect_at(fixture: Fixture, url: str, run_id: str = "test", **options: Any) -> Dialect:
    """The fixture's platform's dialect as a load process builds it at ``url``, not signed in
    (``options``: the transport's own)."""
    record = platform_of(fixture)
    deployment = Deployment(fixture, record.seeded_from(fixture), url, run_id)
    return record.dialect(deployment, transport(url, **options))


def signed_dialect(
    fixture: Fixture, url: str, secret: str, email: str = "", run_id: str = "test"
) -> Dialect:
    """The dialect signed in the kit's way (health, sign-in, the credential check), as a load
    process signs in: DialectError in one line if not."""
    dialect = dialect_at(fixture, url, run_id)
    signed_in(platform_of(fixture), dialect, email, secret, "check the URL")
    return dialect


def signed_without_reach(dialect: Dialect, email: str, secret: str) -> Dialect:
    """The dialect signed in by its platform's own sign-in alone, without the kit's health and
    credential check: for a hostile test server, which answers neither."""
    auth = dialect.sign_in.headers(dialect.http.send, dialect.seeded, email, secret)
    dialect.signed_in(auth, secret)
    return dialect


@contextmanager
def signed_setup_of(fixture: Fixture, email: str, secret: str) -> Iterator[Setup]:
    """The fixture's deployment signed in, as the master hands it to a platform's follower."""
    with signed_setup(
        platform_of(fixture), fixture, email, secret, purpose="test", fix="check the URL"
    ) as (setup, _dialect):
        yield setup
