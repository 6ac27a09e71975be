"""Preflight for opencode: refuse, before any load, a server that cannot do the work.

Each check is one real request of the kind the run will make: the password is
accepted, the text search finds the seeded corpus in the project folder, and a
turn on a fresh (titled) session ends with the model's answer. Only what the run
offers and opencode serves is checked: uploads and signed webhooks are not offered
by this platform (the scenario gives them share 0 for it; runner/settings.py refuses
a scenario that does not). Every refusal is one line with the fix.
"""

from __future__ import annotations

import sys

from engine.seam import PreflightError, PreflightResult
from inputs.fixture import Fixture
from workloads.corpus import RUN_PROMPT, TOPICS
from workloads.opencode.client import OpenCodeClient
from workloads.opencode.dialect import REQUESTS
from workloads.opencode.fixture import seeded
from workloads.preflight import ALWAYS, checked, preflight_main, run_probe, search_probe
from workloads.setup_client import APIError, APIUnreachable


def _check_api(client: OpenCodeClient, fixture: Fixture) -> None:
    """The server answers and takes the password."""
    try:
        client.answers()
    except (APIUnreachable, APIError) as exc:
        raise PreflightError(
            f"opencode at {fixture.api_url} does not answer /global/health ({exc}): start it "
            "(make opencode) or seed against the right --api-url"
        ) from None
    try:
        client.health()
    except APIError as exc:
        raise PreflightError(
            f"opencode refused the password (HTTP {exc.status}): export LOAD_PASSWORD with the "
            "server's password (OPENCODE_SERVER_PASSWORD)"
        ) from None


def _check_search(client: OpenCodeClient, fixture: Fixture) -> int:
    own = seeded(fixture)
    matches = client.find(TOPICS[0])
    found = [
        m for m in matches if str((m.get("path") or {}).get("text", "")).startswith(own.corpus)
    ]
    if not found:
        raise PreflightError(
            f"opencode's text search finds nothing of the corpus in {own.directory}/{own.corpus}: "
            "run the seed (make seed PLATFORM=opencode) on the machine opencode runs on"
        )
    return len(found)


def _check_run(client: OpenCodeClient, fixture: Fixture) -> str:
    """A turn on a fresh, titled session ended with the model's answer: the session's id."""
    own = seeded(fixture)
    session = client.new_session("loadkit preflight")
    reply = client.message(session, RUN_PROMPT, own.provider_id, own.model_id)
    info = reply.get("info") if isinstance(reply, dict) else None
    error = info.get("error") if isinstance(info, dict) else "no info"
    if error or not isinstance(info, dict) or info.get("finish") is None:
        why = error.get("name") if isinstance(error, dict) else error or "no finish"
        raise PreflightError(
            f"a turn ended without the model's answer ({why}): opencode cannot use the model "
            f"{own.provider_id}/{own.model_id} at {fixture.stub_url}; start the stub where it "
            "reaches it"
        )
    return session


def run_preflight(
    fixture: Fixture, email: str, password: str, offered: frozenset[str] = ALWAYS
) -> PreflightResult:
    """Check the server can do the workloads the run ``offered`` that it serves (uploads and
    webhooks it does not: they are never checked); PreflightError (one line) if not."""
    del email  # the server has one user, whose password is the credential
    own = seeded(fixture)
    return checked(
        fixture.api_url,
        offered & frozenset(REQUESTS),
        OpenCodeClient(fixture.api_url, password),
        reach=lambda client: _check_api(client, fixture),
        subject=f"model {own.provider_id}/{own.model_id} served by opencode",
        probes=[
            search_probe(lambda client: _check_search(client, fixture)),
            run_probe(lambda client: _check_run(client, fixture)),
        ],
        who="opencode",
        fix="run the seed against this server",
    )


def main(argv: list[str]) -> int:
    """Check the fixture's opencode from the shell (workloads/preflight.py says how)."""
    return preflight_main(
        argv,
        run_preflight,
        prog="python -m workloads.opencode.preflight",
        description="Refuse an opencode server that cannot do the run's work (password from "
        "LOAD_PASSWORD).",
        email=False,
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
