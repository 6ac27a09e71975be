"""What an A2A server's agent card says, read the way the kit reads it: where it is, which of its
interfaces the kit speaks, whether it streams, and the key it wants.

The card is found at the API's ``/.well-known/agent-card.json`` (0.3's older
``agent.json`` too) or, for a server hosting several agents named by ``--agent``, where
LangGraph and agno put each one's (``/a2a/{id}/...``, ``/a2a/agents/{id}/...``, LangGraph's
``?assistant_id=``). From it alone: the interface (JSON-RPC 1.0 first, then HTTP+JSON 1.0,
then JSON-RPC 0.3; ``--binding`` picks), its path under the API's URL (the card's host is
the server's idea of itself, often not the address the kit reached it at, so only the path
is taken), whether it streams (a claim: ``--stream-anyway`` tries a card that says not),
and its security: a bearer or API-key header it declares; agno and LangGraph guard their
cards and routes with a key they do not declare, so a card that answered only with the key
records the header it was read with (``--key-header``, Authorization by default).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from engine.seam import SeedError, SeedSetup
from engine.sign_in import key_headers
from inputs.fixture import PASSWORD_ENV, in_path
from workloads.a2a.answers import CARD, Card, Interface
from workloads.a2a.wire import (
    CARD_BINDINGS,
    HTTP_JSON,
    JSONRPC,
    JSONRPC_PATHS,
    PATHS,
    STREAM,
    V03,
    V1,
)
from workloads.seed import wait_for
from workloads.setup_client import ANY_STATUS, SetupClient

# The card's places, newest name first.
WELL_KNOWN = ("/.well-known/agent-card.json", "/.well-known/agent.json")
# Where a server hosting several agents puts each one's card (LangGraph, agno), by its id.
PER_AGENT = (
    "/a2a/{id}{well_known}",
    "/a2a/agents/{id}{well_known}",
    "{well_known}?assistant_id={id}",
)
# The header a key goes in when the card declares none: a bearer token.
DEFAULT_KEY_HEADER = "Authorization"
# The interfaces in the order the kit prefers them, when the card offers several.
PREFERRED = ((JSONRPC, V1), (HTTP_JSON, V1), (JSONRPC, V03))


@dataclass(frozen=True)
class A2ASeeded:
    """What the card said, as the fixture keeps it: paths, names and flags, never the key. The
    defaults are the common case (a2a-sdk's JSON-RPC 1.0 at /)."""

    # What the card claims, and whether the run streams anyway where it claims not.
    streaming: bool
    # Where requests go, under the API's URL ("/", "/a2a/<assistant>", agno's per-method base).
    rpc_path: str = "/"
    # jsonrpc, jsonrpc-paths (agno: a path per method) or http-json (1.0 HTTP+JSON).
    binding: str = JSONRPC
    # The protocol line: 1.0 or 0.3.
    version: str = V1
    stream_anyway: bool = False
    # The header the key goes in ("" for a deployment that wants none).
    key_header: str = ""
    # Where the card was read, when by a path (the credential check of agno's paths reads it).
    card_path: str = ""
    # Whether the server answers ListTasks; where not, a list read is a GetTask.
    list_tasks: bool = True
    # A task the seed made (for GetTask reads before the run has made its own), and its context.
    task_id: str | None = None
    context_id: str | None = None


def card_places(agent: str | None) -> list[str]:
    """Where to look for the card, in order."""
    if not agent:
        return list(WELL_KNOWN)
    named = in_path(agent)
    return [
        place.format(id=named, well_known=well_known)
        for well_known in WELL_KNOWN
        for place in PER_AGENT
    ]


@dataclass(frozen=True)
class Found:
    """The card, where it was, and the header its read needed (None: none)."""

    card: Card
    place: str
    key_header: str | None


def found_card(setup: SeedSetup) -> Found:
    """The agent card, waited for (up to --wait) where nothing answers yet; SeedError naming
    every place tried, or the key it needs."""
    agent = setup.own.get("agent")
    places = card_places(str(agent) if agent else None)
    header = str(setup.own.get("key_header") or DEFAULT_KEY_HEADER)
    result: list[Found] = []
    with SetupClient(setup.api_url) as client:

        def look() -> None:
            result.append(_looked(client, places, header, setup.secret))

        wait_for(look, f"the A2A server at {setup.api_url}", setup.wait_s, "start the agent server")
    return result[0]


def _looked(client: SetupClient, places: list[str], header: str, secret: str) -> Found:
    guarded = []
    for place in places:
        resp = client.request("GET", place, expect=ANY_STATUS, auth=False)
        key = None
        if resp.status_code in (401, 403) and secret:
            resp = client.request(
                "GET", place, expect=ANY_STATUS, auth=False, headers=key_headers(header, secret)
            )
            key = header
        if resp.status_code in (401, 403):
            guarded.append(place)
            continue
        if resp.status_code != 200:
            continue
        card = client.typed(resp, CARD)
        return Found(card, place, key)
    if guarded:
        raise SeedError(
            f"the agent card at {guarded[0]} needs a key (HTTP 401/403): export {PASSWORD_ENV} "
            "with the agent's key, and --key-header if it is not Authorization: Bearer"
        )
    raise SeedError(
        f"no agent card at {client.api_url} (tried {', '.join(places)}): is it an A2A "
        "server? name the agent of a server hosting several with --agent"
    )


def interfaces(card: Card) -> list[Interface]:
    """Every interface the card offers: 1.0's list, or 0.3's ``url`` with its transport."""
    if card.supported_interfaces:
        return list(card.supported_interfaces)
    if card.url:
        version = card.protocol_version or V03
        return [Interface(card.url, card.preferred_transport or "JSONRPC", version)]
    return []


def line(version: str) -> str | None:
    """The protocol line a version belongs to (1.0 for any 1.x, 0.3 for 0.3.x), None for one
    the kit does not speak."""
    if version.split(".")[0] == "1":
        return V1
    if version.startswith("0.3"):
        return V03
    return None


def chosen(card: Card, binding: str | None) -> tuple[Interface, str, str]:
    """The interface the kit speaks to, its binding and protocol line: the first of PREFERRED
    the card offers (of ``binding``, when given); SeedError naming what it offers if none."""
    offered = [
        (i, CARD_BINDINGS.get(i.protocol_binding.upper()), line(i.protocol_version))
        for i in interfaces(card)
    ]
    for want_binding, want_line in PREFERRED:
        if binding and want_binding != binding:
            continue
        for interface, has_binding, has_line in offered:
            if (has_binding, has_line) == (want_binding, want_line):
                return interface, want_binding, want_line
    said = ", ".join(
        f"{i.protocol_binding or '?'} {i.protocol_version or '?'}" for i in interfaces(card)
    )
    raise SeedError(
        f"the card offers {said or 'no interface'}; the kit speaks JSON-RPC 1.0 and 0.3 and "
        "HTTP+JSON 1.0" + (f" (--binding {binding} asked)" if binding else "")
    )


def under(api_url: str, url: str) -> str:
    """The path of ``url`` (the card's interface) under the API's URL; SeedError when the
    interface is not under it."""
    base = urlsplit(api_url).path.rstrip("/")
    path = urlsplit(url).path or "/"
    if not path.startswith(base):
        raise SeedError(
            f"the card's interface {url} is not under --api-url {api_url}: give the API's URL "
            "that serves it"
        )
    return path[len(base) :] or "/"


def declared_key(card: Card) -> str | None:
    """The header the card's security schemes put a key in: Authorization for a bearer
    scheme, an API key's header by its name; None when it declares none."""
    for scheme in (card.security_schemes or {}).values():
        if scheme.http_auth_security_scheme is not None or scheme.type == "http":
            return DEFAULT_KEY_HEADER
        api_key = scheme.api_key_security_scheme
        if api_key is not None and str(api_key.get("location", "")).lower() in ("header", ""):
            return str(api_key.get("name") or "")
        if scheme.type == "apiKey" and scheme.location.lower() == "header":
            return scheme.name
    return None


def described(setup: SeedSetup) -> A2ASeeded:
    """The deployment as its card describes it (no request but the card's is made)."""
    found = found_card(setup)
    card = found.card
    binding_asked = setup.own.get("binding")
    interface, binding, version = chosen(card, str(binding_asked) if binding_asked else None)
    path = under(setup.api_url, interface.url)
    if binding == JSONRPC and path.endswith((PATHS[STREAM], "message:send")):
        # agno: a path per method, the card naming its stream's.
        binding, path = JSONRPC_PATHS, path.rsplit("/", 1)[0] + "/"
    given = setup.own.get("key_header")
    header = str(given) if given else (declared_key(card) or found.key_header or "")
    if header and not setup.secret:
        raise SeedError(
            f"the agent wants a key in {header}: export {PASSWORD_ENV} with the agent's key"
        )
    place = found.place if "?" not in found.place else ""
    return A2ASeeded(
        rpc_path=path,
        binding=binding,
        version=version,
        streaming=bool(card.capabilities.streaming),
        stream_anyway=bool(setup.own.get("stream_anyway")),
        key_header=header,
        card_path=place,
        list_tasks=binding != JSONRPC_PATHS,
    )
