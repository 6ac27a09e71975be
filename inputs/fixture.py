"""The run's fixture: which deployment, which platform, and what that platform's seed made there.

Seeding writes it once and every run reads it. It holds ids and URLs only: the
run signs in for itself, and the webhook secret is derived from the password
rather than stored, so nothing in the file grants access to anything. Every
field is checked on the way in and out (type, id characters, URLs), all problems
at once, one line each: its ids go into request lines and headers, where a CR or
LF would split a request in two, and its URLs decide where load goes.

What every platform has is a field here (where the API is, where the stub is,
which platform it is, and for a platform package that is not installed the module
that exports it); what one platform's seed made or found (AgenticOS's
organisation, agent, collection and trigger; agno's agent, knowledge base and
WhatsApp path; LangGraph's graph and store namespace; an A2A server's interface)
is that platform's own part, ``seeded``, read and checked into the platform
record's dataclass (``Platform.seeded_from``, through ``read_seeded``). Files
written before the split, with those fields at the top level, read the same.

What a seeded value may be (``seeded_rules``, said in every refusal): nothing
(None or ""), a count, a boolean, an id, a name, a path, or an http(s) URL. Each
goes into a request line, a header or a body, where a space, CR or LF would split
the request, so an id is RFC 3986's unreserved characters and ``:`` and ``@`` (an
A2A task ``thread:run``), a name is ids joined by ``/`` (a model,
``openai/gpt-4o``), and a path is ``/`` or ``/``-led segments of them (A2A's
``/v1/message:stream``); a query or anything else is refused, naming the rule.

It sits at the top level beside ``inputs/scenario.py``, not under ``workloads/``: like the
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
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, urlsplit

from inputs.bad_input import BadInput, Problems, label, shown

if TYPE_CHECKING:
    # typeshed's "any dataclass", the only kind of record read_seeded can read.
    from _typeshed import DataclassInstance

DEFAULT_PATH = Path("fixture.json")

# The seeded defaults: the reference target's first admin (see platforms/reference/README.md).
DEFAULT_EMAIL = "admin@loadkit.local"
PASSWORD_ENV = "LOAD_PASSWORD"
# The platform a fixture without one was seeded for: the only one there was.
DEFAULT_PLATFORM = "agenticos"
# The fields every platform's fixture has; everything else is the platform's own. ``module``
# names the module exporting a platform that is not installed (--platform-module), so
# that every process of a run finds it again; None for a built-in or installed one.
COMMON = ("api_url", "stub_url", "platform", "module")
# An id goes into URL paths and headers: RFC 3986's unreserved characters, which every
# server reads as the id itself (and percent-encoding leaves as they are), and no more than
# any platform's ids need.
ID_CHARS = re.compile(r"[A-Za-z0-9._~:@-]{1,200}")
# A path the platform mounts something at (agno's WhatsApp interface, an A2A interface at
# ``/`` or ``/a2a/agents/x/v1/message:stream``): "/" alone, or segments of an id's characters
# and ":" and "@", with a trailing "/" or not.
PATH_CHARS = re.compile(r"/|(/(?!\.\.?(/|$))[A-Za-z0-9._~:@-]{1,200}){1,20}/?")
# A name of segments of an id's characters joined by "/" (a model, ``openai/gpt-4o``).
# No segment is "." or "..": a name is not a way up a path.
NAME_CHARS = re.compile(
    r"(?!\.\.?(/|$))[A-Za-z0-9._~:@-]{1,200}(/(?!\.\.?(/|$))[A-Za-z0-9._~:@-]{1,200}){0,20}"
)
# A dotted module name (--platform-module).
MODULE_CHARS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,20}")
# What a seeded value may be, as every refusal of one says it.
SEEDED_RULES = (
    "null, a count to {most}, a bool, an id (A-Za-z0-9._~:@-), ids joined by /, a path (/ or "
    "/id...) or an http(s) URL"
)
# Longer URLs are refused by common servers (8 KB request lines) long before any use here.
MAX_URL_CHARS = 2000
# The largest count a seed writes (documents in a knowledge base).
MAX_COUNT = 1_000_000

Record = TypeVar("Record", bound="DataclassInstance")


class FixtureError(BadInput):
    """The fixture file is missing or does not describe a deployment; one line per problem,
    each naming the field and how to seed."""


@dataclass(frozen=True, kw_only=True)
class Fixture:
    """A seeded deployment: where its API and the stub are, which platform it is, and the
    platform's own part (ids, names, counts and paths; never a secret)."""

    api_url: str
    stub_url: str
    # Which dialect speaks to this deployment (workloads/platforms.py).
    platform: str = DEFAULT_PLATFORM
    # The module exporting the platform's record, when it is not installed; else None.
    module: str | None = None
    # What the platform's seed made or found there, read by that platform's package alone.
    seeded: dict[str, Any] = field(default_factory=dict)

    def save(self, path: str | Path = DEFAULT_PATH) -> None:
        """Write the fixture readable by its owner only, once every field is checked (a
        platform that answered a bad id is refused here, not at the next run)."""
        data = asdict(self)
        if data["module"] is None:
            del data["module"]
        fixture_from_dict(data, "the seeded fixture")
        path = Path(path)
        path.write_text(json.dumps(data, indent=2) + "\n")
        os.chmod(path, 0o600)


def fixture_from_dict(data: object, source: str = "the fixture") -> Fixture:
    """The fixture a decoded file (or a run's message) describes, every field checked:
    FixtureError with one line per problem, each naming the field and the fix. A file from
    before the split keeps the platform's fields at the top level (and some in ``extra``):
    they are its ``seeded`` part."""
    if not isinstance(data, dict):
        raise FixtureError(f"fixture: {source} is not a JSON object; run `make seed`")
    problems = Problems()
    common = {k: data[k] for k in COMMON if k in data}
    if "seeded" in data:
        for key in data:
            if key not in (*COMMON, "seeded"):
                problems.add(f"fixture.{label(key)}: unknown field; use {(*COMMON, 'seeded')}")
        seeded = data["seeded"] if isinstance(data["seeded"], dict) else {}
        if not isinstance(data["seeded"], dict):
            problems.add(f"fixture.seeded: {shown(data['seeded'])} is not an object")
        seeded = dict(seeded)
    else:
        seeded = {k: v for k, v in data.items() if k not in COMMON and k != "extra"}
        extra = data.get("extra") or {}
        if isinstance(extra, dict):
            seeded.update(extra)
        else:
            problems.add(f"fixture.extra: {shown(extra)} is not an object; run `make seed`")
    for key in ("api_url", "stub_url"):
        if key not in data:
            problems.add(f"fixture.{key}: missing; run `make seed` to write a whole fixture")
        elif problem := url_problem(data[key]):
            problems.add(f"fixture.{key}: {problem}")
    platform = data.get("platform", DEFAULT_PLATFORM)
    if not (isinstance(platform, str) and ID_CHARS.fullmatch(platform)):
        problems.add(f"fixture.platform: {shown(platform)} is not a platform's name")
    module = data.get("module")
    if module is not None and not (isinstance(module, str) and MODULE_CHARS.fullmatch(module)):
        problems.add(f"fixture.module: {shown(module)} is not a module's dotted name")
    for key, value in seeded.items():
        where = f"fixture.seeded.{label(key)}"
        if not (isinstance(key, str) and ID_CHARS.fullmatch(key)):
            problems.add(f"{where}: the name is not an id (A-Z a-z 0-9 . _ ~ -)")
        elif problem := _seeded_problem(value):
            problems.add(f"{where}: {problem}; run `make seed` again")
    problems.raise_as(FixtureError)
    return Fixture(**common, seeded=seeded)


def seeded_rules() -> str:
    """What a seeded value may be, in the words of every refusal of one."""
    return SEEDED_RULES.format(most=f"{MAX_COUNT:,}")


def _seeded_problem(value: object) -> str | None:
    """What keeps a platform's seeded value from going safely into a request (None: nothing),
    by the rules ``seeded_rules`` states."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if 0 <= value <= MAX_COUNT else f"{value} is outside 0 to {MAX_COUNT:,}"
    if isinstance(value, str) and any(
        chars.fullmatch(value) for chars in (ID_CHARS, NAME_CHARS, PATH_CHARS)
    ):
        return None
    if isinstance(value, str) and value.startswith(("http://", "https://")):
        return url_problem(value)
    return f"{shown(value)} is none of: {seeded_rules()}"


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


def read_seeded(record: type[Record], fixture: Fixture) -> Record:
    """The fixture's platform part as ``record`` (a dataclass of the platform's), each field
    checked against its declared type (str, int, bool, or one of them | None); FixtureError
    naming every field
    missing or wrong, and the seed that writes it. Fields the record does not declare are left
    alone (an old file's unused ones)."""
    values: dict[str, Any] = {}
    problems = Problems()
    reseed = f"run `make seed PLATFORM={fixture.platform}` against this deployment"
    for spec in dataclasses.fields(record):
        name = spec.name
        has_default = spec.default is not dataclasses.MISSING
        if name not in fixture.seeded:
            if not has_default:
                problems.add(f"fixture.seeded.{name}: missing for {fixture.platform}; {reseed}")
            continue
        value = fixture.seeded[name]
        wanted = str(spec.type)
        ok = (
            (value is None and "None" in wanted)
            or (isinstance(value, bool) and "bool" in wanted)
            or (not isinstance(value, bool) and isinstance(value, int) and "int" in wanted)
            or (isinstance(value, str) and "str" in wanted)
        )
        if not ok:
            problems.add(f"fixture.seeded.{name}: {shown(value)} is not a {wanted}; {reseed}")
        values[name] = value
    problems.raise_as(FixtureError)
    return record(**values)


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
