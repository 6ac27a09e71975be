"""What an OpenAI-compatible server is, found from its URL alone: where its API is, whether it
wants a key, which models it serves, and which API flavour the run speaks.

One request decides most of it, the model list (``GET /v1/models``), which every such server
answers (OpenAI, LiteLLM's proxy, vLLM, llama-stack, the kit's stub): asked without a key
first, so a server that takes none is run without one (and no ``LOAD_PASSWORD`` is asked
for), then with ``LOAD_PASSWORD`` as a bearer key where it answered 401 or 403. The model
is ``--model`` if given (it must be listed), else the first listed. Every refusal is one
line before anything is written: no model list there (not an OpenAI-compatible URL), an
API flavour the kit does not speak, a key wanted and not given, a key refused.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import requests

from engine.dialect_kit import words
from engine.seam import SeedError, SeedSetup
from inputs.fixture import PASSWORD_ENV
from workloads.answers import held
from workloads.openai.answers import MODEL_LIST
from workloads.openai.dialect import KeyIfWanted, OpenAISeeded, error_words
from workloads.openai.wire import FLAVOURS, joined
from workloads.seed import wait_for
from workloads.setup_client import ANY_STATUS, SetupClient

# The models a refusal names, at most.
NAMED_MODELS = 8


def flavour(asked: object) -> str:
    """The API flavour ``--api`` names; SeedError naming the ones the kit speaks."""
    api = str(asked or "chat")
    if api not in FLAVOURS:
        spoken = ", ".join(f"{name} ({words})" for name, words in FLAVOURS.items())
        raise SeedError(f"--api {api}: not an API flavour the kit speaks; give one of {spoken}")
    return api


def prefix_of(api_url: str) -> str:
    """Where the API is under ``api_url``: ``/`` when the URL already ends in ``/v1`` (an SDK's
    base_url), else ``/v1``."""
    return "/" if urlsplit(api_url).path.rstrip("/").endswith("/v1") else "/v1"


def described(setup: SeedSetup) -> OpenAISeeded:
    """The deployment at ``setup.api_url`` as its model list describes it, waited for (up to
    --wait) where nothing answers yet; SeedError in one line when it is not one to run."""
    api = flavour(setup.own.get("api"))
    prefix = prefix_of(setup.api_url)
    path = joined(prefix, "models")
    found: list[tuple[list[str], bool]] = []
    with SetupClient(setup.api_url) as client:

        def look() -> None:
            found.append(_listed(client, path, setup.secret))

        wait_for(look, f"the server at {setup.api_url}", setup.wait_s, "start it")
    names, key = found[0]
    model = _chosen(names, setup.own.get("model"), "--model", path)
    embedding = _chosen(names, setup.own.get("embedding_model") or model, "--embedding-model", path)
    return OpenAISeeded(model, embedding, api, prefix, key)


def _listed(client: SetupClient, path: str, secret: str) -> tuple[list[str], bool]:
    """The models the server lists, and whether it wanted the key to list them."""
    resp = client.request("GET", path, expect=ANY_STATUS, auth=False)
    key = resp.status_code in (401, 403)
    if key:
        if not secret:
            raise SeedError(
                f"GET {path} wants a key (HTTP {resp.status_code}): export {PASSWORD_ENV} with "
                f"{KeyIfWanted.hint}"
            )
        bearer = {"Authorization": f"Bearer {secret}"}
        resp = client.request("GET", path, expect=ANY_STATUS, auth=False, headers=bearer)
        if resp.status_code in (401, 403):
            raise SeedError(
                f"the server refused the key: {_answered(resp, path)}; export {PASSWORD_ENV} "
                f"with {KeyIfWanted.hint}"
            )
    if resp.status_code == 404:
        raise SeedError(
            f"no {path} at {client.api_url} (HTTP 404): is it an OpenAI-compatible server? give "
            "its URL, with or without /v1"
        )
    if resp.status_code != 200:
        raise SeedError(f"{_answered(resp, path)}: is it an OpenAI-compatible server?")
    listed = held(resp.content, MODEL_LIST)
    if isinstance(listed, str):
        raise SeedError(f"GET {path} is not OpenAI's model list ({listed}): is it the API's URL?")
    if not listed.data:
        raise SeedError(f"GET {path} lists no model: give the key a model to use")
    return [model.id for model in listed.data], key


def _answered(resp: requests.Response, path: str) -> str:
    said = error_words(resp.status_code, resp.content)
    return f"HTTP {resp.status_code} to GET {path}" + (f" ({said})" if said else "")


def _chosen(names: list[str], asked: object, flag: str, path: str) -> str:
    """The model ``flag`` asked for, which must be listed; the first listed when none was."""
    if not asked:
        return names[0]
    if asked not in names:
        shown = ", ".join(names[:NAMED_MODELS]) + (", ..." if len(names) > NAMED_MODELS else "")
        raise SeedError(
            f"{flag} {words(str(asked))}: not among the models GET {path} lists ({shown})"
        )
    return str(asked)
