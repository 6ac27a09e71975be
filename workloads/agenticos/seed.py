"""What seeding makes on AgenticOS, through its API.

Everything is created the way a user would create it (secret, model profile on
the stub, published agent, collection filled through the upload endpoint,
webhook trigger), so seeding works unchanged against the reference target and a
real AgenticOS. It is idempotent by name: a second run reuses what exists and
adds only what is missing. The trigger is recreated each time so its signing
secret (derived from the password, never stored) is known. The fixture holds
ids only, no token or password.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import requests

from engine import trust
from engine.seam import SeedError, SeedSetup
from inputs.fixture import in_path, webhook_secret
from workloads.agenticos.client import AgenticOSClient
from workloads.agenticos.tool import CODE_EXECUTION, RUN_PYTHON
from workloads.corpus import document_name, document_text
from workloads.setup_client import APIError

# Names the fixture is found by on a second run; prefixed so they are obviously the kit's.
SECRET_NAME = "loadkit-stub-key"
PROFILE_LABEL = "loadkit-stub"
# Named for the loop: the agent the seed made before it (loadkit-agent) has no tool, and a
# name is a handle AgenticOS keeps unique, so the tool-giving agent could not take it.
AGENT_NAME = "loadkit-loop-agent"
KB_NAME = "loadkit-docs"
TRIGGER_NAME = "loadkit-webhook"
# The trigger a check's seed recreates, so a run's fixture keeps its own (check-platform).
CHECK_TRIGGER_NAME = "loadkit-webhook-check"
# The stub ignores keys and echoes any model name; these only have to be present.
STUB_API_KEY = "loadkit-stub-no-real-key"
STUB_MODEL = "loadkit-stub-model"
AGENT_INSTRUCTIONS = "You are agent-loadkit's test agent. Answer briefly."
TRIGGER_PROMPT = "Summarise this event in one sentence."
DEFAULT_API_URL = "http://127.0.0.1:8000"
# Seconds to wait for the platform's worker to index the uploads: generous for a
# busy machine, bounded so a platform that never indexes is refused, not waited on.
INDEX_WAIT_S = 120.0
# Seconds the stub may take to say how wide its vectors are (one embedding, no delay).
STUB_ASK_TIMEOUT_S = 10.0
POLL_S = 0.5


@dataclass(frozen=True)
class AgenticOSSeeded:
    """What the seed made or found: ids and names, never a secret."""

    org_id: str
    agent_id: str
    model_profile_id: str
    collection_name: str
    documents: int
    # None when the platform could not make a trigger (trigger_fire is then skipped).
    trigger_id: str | None = None
    trigger_source: str = "webhook"


def stub_base_url(stub_url: str) -> str:
    """The model profile's base_url for the stub: its OpenAI-compatible /v1 root."""
    return stub_url.rstrip("/") + "/v1"


def _first(items: Iterable[dict], **match: object) -> dict | None:
    return next((i for i in items if all(i.get(k) == v for k, v in match.items())), None)


def ensure_profile(client: AgenticOSClient, stub_url: str) -> tuple[str, str]:
    """The stub's model profile id (reused or created) and what happened."""
    base_url = stub_base_url(stub_url)
    profile = _first(client.list_all("/providers/model-profiles"), label=PROFILE_LABEL)
    if profile:
        existing = (profile.get("base_url") or "").rstrip("/")
        if existing != base_url:
            raise SeedError(
                f"model profile {PROFILE_LABEL!r} points at {existing}, not {base_url}: seed "
                f"with --stub-url {existing.removesuffix('/v1')} or delete that profile in the "
                "platform, then run make seed"
            )
        return profile["id"], "reused"
    secret = _first(client.list_all("/secrets"), name=SECRET_NAME)
    if secret is None:
        secret = client.post(
            "/secrets",
            {
                "name": SECRET_NAME,
                "purpose": "openai",
                "value": {"kind": "api_key", "api_key": STUB_API_KEY},
            },
        )
    profile = client.post(
        "/providers/model-profiles",
        {
            "label": PROFILE_LABEL,
            "provider": "openai",
            "model": STUB_MODEL,
            "secret_id": secret["id"],
            "base_url": base_url,
        },
    )
    return profile["id"], "created"


def ensure_agent(client: AgenticOSClient, profile_id: str) -> tuple[str, str]:
    """A published agent on the stub's profile given the one tool the loop calls (capability
    code_execution, tool run_python: no network, no files, granted to every organisation):
    its id and what happened.

    The list names agents but carries no spec, so the agent of the fixture's name is read
    whole (``GET /agents/{id}``: its ``draft_spec``). Its name is its handle, unique in the
    organisation, and a spec saved later runs only once promoted, so one that lost the tool
    is refused with the fix rather than mended here."""
    named = [a for a in client.list_all("/agents") if a.get("name") == AGENT_NAME]
    if not named:
        agent = client.post(
            "/agents",
            {
                "spec": {
                    "name": AGENT_NAME,
                    "instructions": AGENT_INSTRUCTIONS,
                    "model_profile_id": profile_id,
                    "capabilities": [{"id": CODE_EXECUTION}],
                }
            },
        )
        client.post(f"/agents/{in_path(agent['id'])}/publish", {"note": "agent-loadkit fixture"})
        return agent["id"], "created, published"
    agent = client.get(f"/agents/{in_path(named[0]['id'])}")
    spec = agent.get("draft_spec") or {}
    used = spec.get("model_profile_id")
    if used and used != profile_id:
        raise SeedError(
            f"agent {AGENT_NAME!r} ({agent['id']}) uses model profile {used}, not "
            f"{PROFILE_LABEL!r} ({profile_id}): rename or delete that agent in the platform, "
            "then run make seed"
        )
    if CODE_EXECUTION not in _capabilities(spec):
        raise SeedError(
            f"agent {AGENT_NAME!r} ({agent['id']}) does not bind capability {CODE_EXECUTION} "
            f"(the loop's tool, {RUN_PYTHON}): delete that agent in the platform, then run "
            "make seed"
        )
    if agent.get("status") == "published":
        return agent["id"], "reused"
    client.post(f"/agents/{in_path(agent['id'])}/publish", {"note": "agent-loadkit fixture"})
    return agent["id"], "reused, published"


def _capabilities(spec: dict) -> set[str]:
    """The capability ids a spec binds."""
    bound = spec.get("capabilities") or []
    return {str(c.get("id")) for c in bound if isinstance(c, dict)}


def ensure_collection(client: AgenticOSClient) -> tuple[str, str]:
    """The fixture's knowledge base: its collection name and what happened."""
    kb = _first(client.list_all("/kb"), name=KB_NAME)
    if kb:
        return kb["collection_name"], "reused"
    kb = client.post("/kb", {"name": KB_NAME, "scope": "org"})
    return kb["collection_name"], "created"


def document_error(doc: dict) -> str | None:
    """Why indexing a document failed, in the platform's words (AgenticOS: ``error_message``)."""
    return doc.get("error_message")


@dataclass
class Uploads:
    """What one seeding run sent: the new documents' ids, and earlier ones found stuck."""

    ids: set[str]
    stuck: list[str]


def upload_missing(client: AgenticOSClient, collection: str, documents: int) -> Uploads:
    """Upload each synthetic document not already indexed; a document still ``processing``
    from an earlier seed is uploaded again (the contract has no delete for it), and named."""
    done: set[str] = set()
    processing: set[str] = set()
    for doc in client.list_all("/rag/documents", collection_name=collection):
        status = doc.get("status")
        (done if status == "done" else processing if status == "processing" else set()).add(
            str(doc.get("filename"))
        )
    uploads = Uploads(set(), [])
    for index in range(documents):
        name = document_name(index)
        if name in done:
            continue
        if name in processing:
            uploads.stuck.append(name)
        answer = client.upload(collection, name, document_text(index).encode())
        uploads.ids.add(str(answer.get("id") or answer.get("document_id")))
    if uploads.stuck:
        print(
            f"seed: {len(uploads.stuck)} document(s) still processing from an earlier seed "
            f"({', '.join(uploads.stuck[:3])}{', ...' if len(uploads.stuck) > 3 else ''}) "
            f"were uploaded again; the stuck copies can be deleted in the platform"
        )
    return uploads


def _document_states(
    client: AgenticOSClient, collection: str, ids: set[str]
) -> tuple[Counter, str | None]:
    """How this seed's own uploads stand (by document id; one not listed is "not listed"), and
    the first failure among them in the platform's words."""
    statuses: Counter[str] = Counter()
    first_error: str | None = None
    seen: set[str] = set()
    for doc in client.list_all("/rag/documents", collection_name=collection):
        ref = str(doc.get("id") or doc.get("document_id"))
        if ref not in ids:
            continue
        seen.add(ref)
        statuses[doc.get("status", "unknown")] += 1
        if doc.get("status") == "error" and first_error is None:
            first_error = document_error(doc) or "status error, no error_message"
    if len(seen) < len(ids):
        statuses["not listed"] += len(ids) - len(seen)
    return statuses, first_error


def stub_width(stub_url: str, model: str) -> int:
    """How wide the stub's vectors for ``model`` are, asked of the stub itself (one embedding
    request): it answers each model at its real width unless started with --embedding-dim."""
    resp = trust.session().post(
        f"{stub_base_url(stub_url)}/embeddings",
        json={"model": model, "input": "width probe"},
        timeout=STUB_ASK_TIMEOUT_S,
    )
    resp.raise_for_status()
    return len(resp.json()["data"][0]["embedding"])


def _fix(client: AgenticOSClient, collection: str, stub_url: str) -> str:
    """What to do about failed indexing. AgenticOS's error_message does not name a width
    mismatch, so the stub's width for the collection's model is compared with the width the
    collection holds (``/rag/collections/{name}/info``); a mismatch is named with the width
    wanted, anything else points at the worker and its embedder."""
    dim = client.get(f"/rag/collections/{in_path(collection)}/info").get("dim")
    kb = _first(client.list_all("/kb"), collection_name=collection) or {}
    model = kb.get("embedding_model")
    worker = (
        "check that the platform's worker runs and reaches its embedder (the stub), "
        "then run make seed"
    )
    if not dim or not model:
        return worker
    try:
        width = stub_width(stub_url, str(model))
    except (requests.RequestException, ValueError, KeyError, IndexError) as exc:
        return (
            f"the stub at {stub_url} could not be asked its width ({type(exc).__name__}); {worker}"
        )
    if width == int(dim):
        return f"the stub's {model} vectors are {width} wide, as the collection's: {worker}"
    return (
        f"the stub answers {model} with vectors {width} wide but collection {collection!r} "
        f"holds {dim}: start the stub with --embedding-dim {dim} (or without --embedding-dim, "
        "which answers each model at its real width), then run make seed"
    )


def wait_for_index(
    client: AgenticOSClient,
    collection: str,
    uploads: Uploads,
    stub_url: str,
    wait_s: float = INDEX_WAIT_S,
) -> None:
    """Follow this seed's own uploads by document id until each is ``done`` or ``error``
    (bounded by ``wait_s``); SeedError with the platform's words when one failed or one is
    still not done. Load runs upload into the same collection, so its vector count says
    nothing about these documents."""
    deadline = time.monotonic() + wait_s
    began = time.monotonic()
    while uploads.ids:
        statuses, first_error = _document_states(client, collection, uploads.ids)
        settled = statuses["done"] + statuses["error"] == len(uploads.ids)
        if settled and not statuses["error"]:
            return
        if settled or time.monotonic() >= deadline:
            states = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()) if n)
            why = f"; the platform says: {first_error}" if first_error else ""
            raise SeedError(
                f"collection {collection!r}: of the {len(uploads.ids)} documents this seed "
                f"uploaded, {states} after {time.monotonic() - began:.0f} s{why}: "
                f"{_fix(client, collection, stub_url)}"
            )
        time.sleep(POLL_S)


def recreate_trigger(
    client: AgenticOSClient, agent_id: str, password: str, name: str = TRIGGER_NAME
) -> str | None:
    """Delete the kit's trigger and create it afresh so its secret is the derived one.

    A platform that cannot create it is reported on stderr and leaves None:
    the run then reports trigger_fire as skipped rather than failing.
    """
    try:
        for trigger in client.list_all(f"/agents/{in_path(agent_id)}/triggers"):
            if trigger.get("name") == name:
                client.delete(f"/agents/{in_path(agent_id)}/triggers/{in_path(trigger['id'])}")
        trigger = client.post(
            f"/agents/{in_path(agent_id)}/triggers",
            {
                "name": name,
                "prompt": TRIGGER_PROMPT,
                "trigger_type": "event",
                "event_source": "webhook",
                "event_secret": webhook_secret(password, agent_id),
            },
        )
    except APIError as exc:
        print(f"seed: trigger not created ({exc}); trigger_fire will be skipped", file=sys.stderr)
        return None
    return trigger["id"]


def pick_org(client: AgenticOSClient) -> str:
    """The organisation to seed in: the user's personal one (the API's default), else the first."""
    orgs = list(client.get("/orgs").get("items", []))
    if not orgs:
        raise SeedError("the user belongs to no organisation: create one in the platform first")
    personal = _first(orgs, is_personal=True)
    return (personal or orgs[0])["id"]


def make(setup: SeedSetup) -> AgenticOSSeeded:
    """Build (or find) every part the run needs; SeedError on refusal."""
    with AgenticOSClient(setup.api_url, setup.auth) as client:
        client.org_id = org_id = pick_org(client)
        profile_id, profile_action = ensure_profile(client, setup.stub_url)
        agent_id, agent_action = ensure_agent(client, profile_id)
        collection, kb_action = ensure_collection(client)
        uploads = upload_missing(client, collection, setup.documents)
        wait_for_index(client, collection, uploads, setup.stub_url)
        name = CHECK_TRIGGER_NAME if setup.check else TRIGGER_NAME
        trigger_id = recreate_trigger(client, agent_id, setup.secret, name)
    print(
        f"seed: org {org_id}; model profile {profile_action}; agent {agent_id} "
        f"({agent_action}); collection {collection!r} ({kb_action}, {len(uploads.ids)} uploaded "
        f"and indexed); trigger {trigger_id or 'none'}"
    )
    return AgenticOSSeeded(
        org_id=org_id,
        agent_id=agent_id,
        model_profile_id=profile_id,
        collection_name=collection,
        documents=setup.documents,
        trigger_id=trigger_id,
    )
