"""The run's fixture: which agent, collection and trigger on which deployment.

Seeding writes it once and every run reads it. It holds ids and URLs only: the
run signs in for itself, and the webhook secret is derived from the password
rather than stored, so nothing in the file grants access to anything.

It sits at the top level beside ``scenario.py``, not under ``workloads/``: like the
scenario it is an input record the core reads (every Dialect is built on one), and the
core imports nothing above itself, so the record lives beneath both the core and the
platforms that seed it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

DEFAULT_PATH = Path("fixture.json")

# The seeded defaults: the reference target's first admin (see reference_platform/README.md).
DEFAULT_EMAIL = "admin@loadkit.local"
PASSWORD_ENV = "LOAD_PASSWORD"


class FixtureError(ValueError):
    """The fixture file is missing or does not describe a deployment; says how to seed."""


@dataclass(frozen=True, kw_only=True)
class Fixture:
    """A seeded deployment. Fields a platform has no use for keep their defaults (agno has no
    organisation, model profile or trigger id); what only one platform needs goes in ``extra``."""

    api_url: str
    agent_id: str
    stub_url: str
    collection_name: str
    documents: int
    org_id: str = ""
    model_profile_id: str = ""
    trigger_id: str | None = None
    trigger_source: str = "webhook"
    # Which dialect speaks to this deployment (workloads/platforms.py).
    platform: str = "agenticos"
    # Platform-specific names (ids and paths only, never a secret), read by that platform's package.
    extra: dict[str, str] = field(default_factory=dict)

    def save(self, path: str | Path = DEFAULT_PATH) -> None:
        """Write the fixture readable by its owner only."""
        path = Path(path)
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")
        os.chmod(path, 0o600)


def load_fixture(path: str | Path = DEFAULT_PATH) -> Fixture:
    """The fixture in ``path``, or FixtureError telling the operator to seed."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
        return Fixture(**data)
    except FileNotFoundError:
        raise FixtureError(f"fixture: {path} does not exist; run `make seed` first") from None
    except (json.JSONDecodeError, TypeError) as exc:
        raise FixtureError(
            f"fixture: {path} is not a seeded fixture ({exc}); run `make seed`"
        ) from None


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
