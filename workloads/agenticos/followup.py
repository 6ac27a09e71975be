"""What AgenticOS did with the work a run's 202s accepted: uploads indexed, webhooks run.

Called on the master after the run has drained. Uploads are followed through
the collection's documents list (``status`` ``done`` or ``error``, the reason in
``error_message``); webhook deliveries through the trigger's run-log
conversation (``GET /agents/{id}/triggers/{tid}`` -> ``conversation_id``, then
``GET /runs?conversation_id=``), as the contract's last section says. Each poll
reads whole lists (one paged request set for every pending upload, one for every
pending delivery), never a request per accepted arrival, until everything has
settled or the grace period is over. What the platform cannot show is said to
be "not verifiable", never counted as processed.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterable
from datetime import UTC, datetime

from engine.followups import FAILED_AFTER, NOT_FINISHED, NOT_VERIFIABLE, PROCESSED, FollowUp
from engine.seam import words
from fixture import Fixture, in_path
from workloads.agenticos.client import AgenticOSClient
from workloads.agenticos.fixture import seeded
from workloads.setup_client import APIError, APIUnreachable

# Seconds between polls: a settled upload is seen within this, and a run of hundreds
# of accepted arrivals costs the platform a handful of list reads per second at most.
POLL_S = 1.0
# Document and run states that mean "not finished yet"; anything else has settled.
PENDING = frozenset({"processing", "pending", "queued", "running", "in_progress"})
# Settled states that mean the work was done.
DONE = frozenset({"done", "completed", "success", "succeeded"})
# The delivery index inside a routine run's prompt (the dialect's webhook body, echoed).
_INDEX = re.compile(r'"index":\s*(\d+)')


def follow_up(
    fixture: Fixture,
    email: str,
    password: str,
    *,
    run_id: str,
    start_epoch: float,
    accepted: list[tuple[int, str, str]],
    grace_s: float,
) -> list[FollowUp]:
    """One FollowUp per accepted arrival: polled until all settle or ``grace_s`` runs out."""
    own = seeded(fixture)
    uploads = {ref: (k, w) for k, w, ref in accepted if w == "ingest"}
    deliveries = sorted((k, w, ref) for k, w, ref in accepted if w == "trigger_fire")
    others = [(k, w, ref) for k, w, ref in accepted if w not in ("ingest", "trigger_fire")]
    settled: dict[int, FollowUp] = {}
    unknown = "the platform shows nothing for this workload"
    settled.update({k: FollowUp(k, w, ref, NOT_VERIFIABLE, unknown) for k, w, ref in others})
    deadline = time.monotonic() + grace_s
    with AgenticOSClient(fixture.api_url) as client:
        try:
            client.sign_in(email, password)
            client.org_id = own.org_id
            conversation = _run_log(client, fixture) if deliveries else None
        except (APIUnreachable, APIError) as exc:
            why = f"the platform did not answer the follow-up ({words(str(exc))})"
            return [FollowUp(k, w, ref, NOT_VERIFIABLE, why) for k, w, ref in accepted]
        if deliveries and conversation is None:
            why = "the trigger shows no run-log conversation_id"
            for k, w, ref in deliveries:
                settled[k] = FollowUp(k, w, ref, NOT_VERIFIABLE, why)
            deliveries = []
        runs = {"conversation_id": conversation, "started_from": _iso(start_epoch)}
        while True:
            # A list read that fails is tried again at the next poll, until the grace ends.
            with contextlib.suppress(APIUnreachable, APIError):
                if uploads:
                    _settle_uploads(client, fixture, uploads, settled)
                if deliveries:
                    found = client.list_all("/runs", **runs)
                    _settle_deliveries(found, run_id, deliveries, settled)
            if len(settled) == len(accepted) or time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
    why = f"still pending {grace_s:g} s after the run"
    for k, w, ref in accepted:
        settled.setdefault(k, FollowUp(k, w, ref, NOT_FINISHED, why))
    return list(settled.values())


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def _run_log(client: AgenticOSClient, fixture: Fixture) -> str | None:
    """The conversation the trigger's fires append their runs to, if the platform shows it."""
    own = seeded(fixture)
    if not own.trigger_id:
        return None
    trigger = client.get(f"/agents/{in_path(own.agent_id)}/triggers/{in_path(own.trigger_id)}")
    return trigger.get("conversation_id") or None


def _settle_uploads(
    client: AgenticOSClient,
    fixture: Fixture,
    uploads: dict[str, tuple[int, str]],
    settled: dict[int, FollowUp],
) -> None:
    """Read the documents list until every pending upload is seen; record those that settled."""
    own = seeded(fixture)
    pending = {ref for ref, (k, _) in uploads.items() if k not in settled}
    for doc in client.list_all("/rag/documents", collection_name=own.collection_name):
        ref = str(doc.get("document_id") or doc.get("id"))
        if ref not in pending:
            continue
        pending.discard(ref)
        k, workload = uploads[ref]
        status = str(doc.get("status", ""))
        if status in DONE:
            settled[k] = FollowUp(k, workload, ref, PROCESSED)
        elif status not in PENDING:
            why = doc.get("error_message") or f"status {status}"
            settled[k] = FollowUp(k, workload, ref, FAILED_AFTER, words(str(why)))
        if not pending:
            return


def _settle_deliveries(
    runs: Iterable[dict],
    run_id: str,
    deliveries: list[tuple[int, str, str]],
    settled: dict[int, FollowUp],
) -> None:
    """Match the trigger's runs to deliveries: by the delivery index the run's prompt echoes,
    else (a platform that does not echo the event) in order of arrival."""
    by_index = {k: (k, w, ref) for k, w, ref in deliveries}
    unmatched_runs = []
    for run in sorted(runs, key=lambda r: str(r.get("created_at") or "")):
        prompt = str(run.get("prompt") or "")
        found = _INDEX.search(prompt) if run_id in prompt else None
        if found and int(found.group(1)) in by_index:
            _settle_delivery(by_index.pop(int(found.group(1))), run, settled)
        elif "index" not in prompt:
            unmatched_runs.append(run)
    for delivery, run in zip(sorted(by_index.values()), unmatched_runs, strict=False):
        _settle_delivery(delivery, run, settled)


def _settle_delivery(
    delivery: tuple[int, str, str], run: dict, settled: dict[int, FollowUp]
) -> None:
    k, workload, ref = delivery
    status = str(run.get("status", ""))
    if status in DONE:
        settled[k] = FollowUp(k, workload, ref, PROCESSED)
    elif status not in PENDING:
        why = run.get("error") or run.get("error_message") or f"run {status}"
        settled[k] = FollowUp(k, workload, ref, FAILED_AFTER, words(str(why)))
