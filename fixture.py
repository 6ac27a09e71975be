"""The run's fixture: which deployment, which platform, and what that platform's seed made there.

Seeding writes it once and every run reads it. It holds ids and URLs only: the
run signs in for itself, and the webhook secret is derived from the password
rather than stored, so nothing in the file grants access to anything.

What every platform has is a field here (where the API is, where the stub is,
which platform it is); what one platform's seed made or found (AgenticOS's
organisation, agent, collection and trigger; agno's agent, knowledge base and
WhatsApp path; LangGraph's graph and store namespace) is that platform's own
part, ``seeded``, read and checked by its package into a record of its own
(``workloads/<platform>/fixture.py``, through ``read_seeded``). Files written
before the split, with those fields at the top level, read the same.

It sits at the top level beside ``scenario.py``, not under ``workloads/``: like the
scenario it is an input record the core reads (every Dialect is built on one), and the
core imports nothing above itself, so the record lives beneath both the core and the
platforms that seed it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

DEFAULT_PATH = Path("fixture.json")

# The seeded defaults: the reference target's first admin (see reference_platform/README.md).
DEFAULT_EMAIL = "admin@loadkit.local"
PASSWORD_ENV = "LOAD_PASSWORD"
# The platform a fixture without one was seeded for: the only one there was.
DEFAULT_PLATFORM = "agenticos"
# The fields every platform's fixture has; everything else is the platform's own.
COMMON = ("api_url", "stub_url", "platform")

Record = TypeVar("Record")


class FixtureError(ValueError):
    """The fixture file is missing or does not describe a deployment; says how to seed."""


@dataclass(frozen=True, kw_only=True)
class Fixture:
    """A seeded deployment: where its API and the stub are, which platform it is, and the
    platform's own part (ids, names, counts and paths; never a secret)."""

    api_url: str
    stub_url: str
    # Which dialect speaks to this deployment (workloads/platforms.py).
    platform: str = DEFAULT_PLATFORM
    # What the platform's seed made or found there, read by that platform's package alone.
    seeded: dict[str, Any] = field(default_factory=dict)

    def save(self, path: str | Path = DEFAULT_PATH) -> None:
        """Write the fixture readable by its owner only."""
        path = Path(path)
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")
        os.chmod(path, 0o600)


def fixture_from_dict(data: dict[str, Any]) -> Fixture:
    """The fixture a decoded file (or a run's message) describes. A file from before the split
    keeps the platform's fields at the top level (and some in ``extra``): they are its
    ``seeded`` part. TypeError when it is not a fixture at all."""
    if not isinstance(data, dict):
        raise TypeError(f"a JSON object was expected, not {type(data).__name__}")
    common = {k: data[k] for k in COMMON if k in data}
    if "seeded" in data:
        seeded = dict(data["seeded"])
    else:
        seeded = {k: v for k, v in data.items() if k not in COMMON and k != "extra"}
        seeded.update(data.get("extra") or {})
    return Fixture(**common, seeded=seeded)


def load_fixture(path: str | Path = DEFAULT_PATH) -> Fixture:
    """The fixture in ``path``, or FixtureError telling the operator to seed."""
    path = Path(path)
    try:
        return fixture_from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        raise FixtureError(f"fixture: {path} does not exist; run `make seed` first") from None
    except (json.JSONDecodeError, TypeError) as exc:
        raise FixtureError(
            f"fixture: {path} is not a seeded fixture ({exc}); run `make seed`"
        ) from None


def read_seeded(record: type[Record], fixture: Fixture) -> Record:
    """The fixture's platform part as ``record`` (a dataclass of the platform's), each field
    checked against its declared type (str, int, str | None); FixtureError naming the first
    field missing or wrong, and the seed that writes it. Fields the record does not declare
    are left alone (an old file's unused ones)."""
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(record):  # type: ignore[arg-type]
        name = spec.name
        has_default = spec.default is not dataclasses.MISSING
        if name not in fixture.seeded:
            if has_default:
                continue
            raise FixtureError(
                f"fixture: seeded.{name} is missing for {fixture.platform}; run `make seed "
                f"PLATFORM={fixture.platform}` against this deployment"
            )
        value = fixture.seeded[name]
        wanted = str(spec.type)
        ok = (
            (value is None and "None" in wanted)
            or (not isinstance(value, bool) and isinstance(value, int) and "int" in wanted)
            or (isinstance(value, str) and "str" in wanted)
        )
        if not ok:
            raise FixtureError(
                f"fixture: seeded.{name} is {value!r}, not a {wanted}; run `make seed "
                f"PLATFORM={fixture.platform}` again"
            )
        values[name] = value
    return record(**values)


def webhook_secret(password: str, agent_id: str) -> str:
    """The trigger's signing secret, derived so that seed and run agree without storing it."""
    digest = hmac.new(
        password.encode(), f"agent-loadkit webhook {agent_id}".encode(), hashlib.sha256
    )
    return digest.hexdigest()[:48]


def password_from_env() -> str:
    """The run's password from LOAD_PASSWORD: never a command-line argument ``ps`` would show."""
    password = os.environ.get(PASSWORD_ENV)
    if not password:
        raise FixtureError(
            f"{PASSWORD_ENV}: not set; export {PASSWORD_ENV} with the user's password"
        )
    return password
