"""What agno's AgentOS did with the work a run accepted: uploads embedded, WhatsApp messages run.

Called on the master after the run has drained, as for AgenticOS. An upload
(202 with a content id) is followed through agno's content status endpoint
(``completed``; ``failed`` or ``partial`` with agno's ``status_message``). A
WhatsApp delivery (200 ``processing``) is followed through the run agno keeps
in the delivery's session (``wa:<agent>:<sender>``, one sender per delivery),
which agno writes only when the run ends. Both are written in the background
after agno's answer, so a 404 reads as "not yet". Each poll asks only about
the arrivals still pending, until all have settled or the grace period is
over; what is then still seen working is "not finished in grace". What agno
shows nothing of (no content, no session, no answer to the follow-up) is "not
verifiable", never counted as processed or lost. Uploads and deliveries are
followed each on its own: a read agno refuses for good (a 4xx other than its
"not yet" 404) ends the follow-up of that workload only, its arrivals not
verifiable with agno's refusal as the reason.
"""

from __future__ import annotations

import re
import time

from engine.dialect_kit import words
from engine.followups import FAILED_AFTER, NOT_FINISHED, NOT_VERIFIABLE, PROCESSED, FollowUp
from engine.seam import Accepted, Setup
from workloads.agno.client import AgnoClient
from workloads.agno.seed import AgnoSeeded
from workloads.followup import follow_each, followed
from workloads.setup_client import APIError

# Content states (agno.os.schema ContentStatus): done, and ended in failure ("partial":
# some chunks were not embedded and cannot be retrieved). Anything else is still working.
CONTENT_DONE, CONTENT_FAILED = "completed", frozenset({"failed", "partial"})
# Run states (agno.run.base RunStatus): done, and ended in failure. PENDING, RUNNING and
# PAUSED are still working.
RUN_DONE, RUN_FAILED = "COMPLETED", frozenset({"ERROR", "CANCELLED"})
# agno's embedding failure names the content, then says why in a sentence of its own
# ("Reason: server_error (HTTP 500).") among others; that cause is the detail, so uploads
# lost to one cause group as one reason in the report.
_EMBED_REASON = re.compile(r"^Embedding failed\b.*?\bReason: ([^.]+)")
# Workloads agno shows the end of; any other accepted work is not verifiable.
FOLLOWED = ("ingest", "trigger_fire")


def follow_up(
    setup: Setup[AgnoSeeded],
    /,
    *,
    run_id: str,
    start_epoch: float,
    accepted: list[Accepted],
    grace_s: float,
) -> list[FollowUp]:
    """One FollowUp per accepted arrival: polled until all settle or ``grace_s`` runs out."""
    del run_id, start_epoch  # refs name each arrival's work
    pending, others = followed(accepted, FOLLOWED, "agno shows nothing for this workload")
    deadline = time.monotonic() + grace_s
    with AgnoClient(setup.fixture.api_url, setup.auth) as client:
        looked = follow_each(
            pending, lambda work: _look(client, work, grace_s), deadline, "agno", _for_good
        )
    return [*others, *looked]


def _for_good(exc: Exception) -> bool:
    """Whether asking again cannot change the answer: a 4xx other than 404 (agno's "not
    yet"), 408 and 429. Such a refusal ends the follow-up of that workload only."""
    return (
        isinstance(exc, APIError) and 400 <= exc.status < 500 and exc.status not in (404, 408, 429)
    )


def _look(client: AgnoClient, work: FollowUp, grace_s: float) -> tuple[bool, FollowUp]:
    """Ask agno about one accepted arrival: (settled, what it is, or would be at the grace's
    end). agno writes a content row and a WhatsApp session in the background after its
    answer (the session only when the run ends), so a 404 is "not yet"; one still there at
    the end means agno shows nothing of the work: not verifiable."""
    if work.workload == "ingest":
        try:
            status, message = client.content_status(work.ref)
        except APIError as exc:
            if exc.status != 404:
                raise
            why = f"agno shows no content for the upload {grace_s:g} s after the run"
            return False, work._replace(state=NOT_VERIFIABLE, detail=why)
        if status == CONTENT_DONE:
            return True, work._replace(state=PROCESSED)
        if status in CONTENT_FAILED:
            return True, work._replace(state=FAILED_AFTER, detail=_content_why(message, status))
    else:
        runs = client.session_runs(work.ref)
        if not runs:
            why = f"agno shows no run for the delivery {grace_s:g} s after the run"
            return False, work._replace(state=NOT_VERIFIABLE, detail=why)
        run = runs[-1]
        status = str(run.get("status", "")).upper()
        if status == RUN_DONE:
            return True, work._replace(state=PROCESSED)
        if status in RUN_FAILED:
            why = (run.get("content") if status == "ERROR" else None) or f"run {status}"
            return True, work._replace(state=FAILED_AFTER, detail=words(str(why)))
    why = f"still {status.lower() or 'pending'} {grace_s:g} s after the run"
    return False, work._replace(state=NOT_FINISHED, detail=why)


def _content_why(message: str, status: str) -> str:
    """Why agno says an upload failed, in its words: the cause of an embedding failure, else
    its whole message, else the status."""
    embed = _EMBED_REASON.search(message)
    return words(f"embedding failed: {embed.group(1)}" if embed else message or f"content {status}")
