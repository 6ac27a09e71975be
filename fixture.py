"""The run's fixture: which agent, collection and trigger on which deployment.

Seeding writes it once and every run reads it. It holds ids and URLs only: the
run signs in for itself, and the webhook secret is derived from the password
rather than stored, so nothing in the file grants access to anything. Every
field is checked on the way in and out (type, id characters, URLs), all problems
at once, one line each: its ids go into request lines and headers, where a CR or
LF would split a request in two, and its URLs decide where load goes.

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
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from urllib.parse import quote, urlsplit

from bad_input import BadInput, Problems, label, shown

DEFAULT_PATH = Path("fixture.json")

# The seeded defaults: the reference target's first admin (see reference_platform/README.md).
DEFAULT_EMAIL = "admin@loadkit.local"
PASSWORD_ENV = "LOAD_PASSWORD"


# An id goes into URL paths and headers: RFC 3986's unreserved characters, which every
# server reads as the id itself (and percent-encoding leaves as they are), and no more than
# any platform's ids need.
ID_CHARS = re.compile(r"[A-Za-z0-9._~-]{1,200}")
# A path the platform mounts something at (agno's WhatsApp interface): ids joined by "/".
PATH_CHARS = re.compile(r"(/[A-Za-z0-9._~-]{1,200}){1,20}")
# Longer URLs are refused by common servers (8 KB request lines) long before any use here.
MAX_URL_CHARS = 2000
# A knowledge base larger than this is not something the seed builds.
MAX_DOCUMENTS = 1_000_000
# The fields every platform's fixture has; the others have defaults (agno has no organisation).
REQUIRED = ("api_url", "agent_id", "stub_url", "collection_name", "documents")


class FixtureError(BadInput):
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
        """Write the fixture readable by its owner only, once every field is checked (a
        platform that answered a bad id is refused here, not at the next run)."""
        data = asdict(self)
        fixture_from_dict(data, "the seeded fixture")
        path = Path(path)
        path.write_text(json.dumps(data, indent=2) + "\n")
        os.chmod(path, 0o600)


def load_fixture(path: str | Path = DEFAULT_PATH) -> Fixture:
    """The fixture in ``path``, or FixtureError naming every bad field (or telling the
    operator to seed)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise FixtureError(
            f"fixture: {shown(str(path))} does not exist; run `make seed` first"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FixtureError(
            f"fixture: cannot read {shown(str(path))} ({type(exc).__name__}); pass --fixture"
        ) from None
    except json.JSONDecodeError as exc:
        raise FixtureError(
            f"fixture: {shown(str(path))} is not JSON ({exc.msg} at line {exc.lineno}); "
            "run `make seed`"
        ) from None
    return fixture_from_dict(data, shown(str(path)))


def fixture_from_dict(data: object, source: str) -> Fixture:
    """The fixture ``data`` describes, every field checked: FixtureError with one line per
    problem, each naming the field (``fixture.agent_id: ...``) and the fix."""
    if not isinstance(data, dict):
        raise FixtureError(f"fixture: {source} is not a JSON object; run `make seed`")
    problems = Problems()
    known = {f.name for f in fields(Fixture)}
    for key in data:
        if key not in known:
            problems.add(f"fixture.{label(key)}: unknown field; use only {sorted(known)}")
    for key in REQUIRED:
        if key not in data:
            problems.add(f"fixture.{key}: missing; run `make seed` to write a whole fixture")
    for key in ("api_url", "stub_url"):
        if key in data and (problem := url_problem(data[key])):
            problems.add(f"fixture.{key}: {problem}")
    for key in ("agent_id", "collection_name", "trigger_source", "platform"):
        if key in data:
            _id(data[key], f"fixture.{key}", problems)
    for key in ("org_id", "model_profile_id", "trigger_id"):
        if data.get(key) not in (None, ""):
            _id(data[key], f"fixture.{key}", problems)
    documents = data.get("documents", 0)
    if isinstance(documents, bool) or not isinstance(documents, int):
        problems.add(f"fixture.documents: {shown(documents)} is not a whole number; run make seed")
    elif not 0 <= documents <= MAX_DOCUMENTS:
        problems.add(f"fixture.documents: {documents} is outside 0 to {MAX_DOCUMENTS}")
    _extra(data.get("extra", {}), problems)
    problems.raise_as(FixtureError)
    return Fixture(**data)


def url_problem(value: object) -> str | None:
    """What keeps ``value`` from being an http(s) URL a request can go to (None: nothing)."""
    if not isinstance(value, str):
        return f"{shown(value)} is not a URL; give e.g. http://127.0.0.1:8000"
    if len(value) > MAX_URL_CHARS:
        return f"{shown(value)} is longer than {MAX_URL_CHARS} characters"
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in value):
        return f"{shown(value)} holds a space or control character (CR, LF, ...); remove it"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 -- urlsplit checks the port only when it is read
    except ValueError as exc:
        return f"{shown(value)} is not a URL ({exc}); give e.g. http://127.0.0.1:8000"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{shown(value)} is not an http(s) URL; give e.g. http://127.0.0.1:8000"
    if parts.query or parts.fragment or parts.username or parts.password:
        return f"{shown(value)} carries a query, fragment or user; give scheme, host and path"
    return None


def in_path(value: str) -> str:
    """An id as one URL path segment, percent-encoded: whatever it holds, it stays one
    segment of the path it is put in (the fixture's ids are checked, a platform's are not)."""
    return quote(str(value), safe="")


def _id(value: object, where: str, problems: Problems) -> None:
    if not isinstance(value, str):
        problems.add(f"{where}: {shown(value)} is not a string; run `make seed`")
    elif not ID_CHARS.fullmatch(value):
        problems.add(
            f"{where}: {shown(value)} is not an id (1 to 200 of A-Z a-z 0-9 . _ ~ -); "
            "run `make seed`"
        )


def _extra(extra: object, problems: Problems) -> None:
    """``extra``: names to ids or mount paths, each one of those."""
    if not isinstance(extra, dict):
        problems.add(f"fixture.extra: {shown(extra)} is not an object of names to ids or paths")
        return
    for key, value in extra.items():
        where = f"fixture.extra.{label(key)}"
        if not isinstance(key, str) or not ID_CHARS.fullmatch(key):
            problems.add(f"{where}: the name is not an id (A-Z a-z 0-9 . _ ~ -)")
        elif not isinstance(value, str) or not (
            ID_CHARS.fullmatch(value) or PATH_CHARS.fullmatch(value)
        ):
            problems.add(f"{where}: {shown(value)} is neither an id nor a path like /whatsapp")


def webhook_secret(password: str, agent_id: str) -> str:
    """The trigger's signing secret, derived so that seed and run agree without storing it."""
    digest = hmac.new(
        password.encode(), f"agent-loadkit webhook {agent_id}".encode(), hashlib.sha256
    )
    return digest.hexdigest()[:48]


def password_from_env() -> str:
    """The run's password from LOAD_PASSWORD: never a command-line argument ``ps`` would show.
    A platform key goes into a header, so a control character (CR, LF) is refused."""
    password = os.environ.get(PASSWORD_ENV)
    if not password:
        raise FixtureError(
            f"{PASSWORD_ENV}: not set; export {PASSWORD_ENV} with the user's password"
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in password):
        raise FixtureError(
            f"{PASSWORD_ENV}: holds a control character (CR, LF, ...); export the password alone"
        )
    return password
