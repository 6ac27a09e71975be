"""What LangGraph's Agent Server did with the background runs a run started: success or not.

Called on the master after the run has drained, as for the other platforms. A
trigger_fire is a background run the server accepted (200, ``pending``); its
ref is ``thread_id/run_id``, and the run is read back with
``GET /threads/{thread_id}/runs/{run_id}`` until it is final: ``success`` is
processed; ``error``, ``timeout`` and ``interrupted`` failed after acceptance,
with the thread's ``error`` as the server's words. Each poll asks only about the
runs still pending, until all have settled or the grace period is over; what is
then still ``pending`` or ``running`` is "not finished in grace". A run the
server does not know (404), or a server that does not answer, is "not
verifiable", never counted as processed or lost.
"""

from __future__ import annotations

import time

from engine.dialect_kit import words
from engine.followups import FAILED_AFTER, NOT_FINISHED, NOT_VERIFIABLE, PROCESSED, FollowUp
from engine.seam import Accepted, Setup
from workloads.followup import follow_each, followed, not_answered
from workloads.langgraph.client import LangGraphClient
from workloads.langgraph.seed import LangGraphSeeded
from workloads.setup_client import APIError, APIUnreachable

# Run states (langgraph_api.schema.RunStatus): done, and ended in failure. "pending" and
# "running" are still working.
RUN_DONE, RUN_FAILED = "success", frozenset({"error", "timeout", "interrupted"})
# The workload whose accepted work the server shows the end of.
FOLLOWED = ("trigger_fire",)
# How a follow-up's details name the server.
WHO = "the Agent Server"


def follow_up(
    setup: Setup[LangGraphSeeded],
    /,
    *,
    run_id: str,
    start_epoch: float,
    accepted: list[Accepted],
    grace_s: float,
) -> list[FollowUp]:
    """One FollowUp per accepted arrival: polled until all settle or ``grace_s`` runs out."""
    del run_id, start_epoch  # refs name each arrival's run
    pending, others = followed(accepted, FOLLOWED, f"{WHO} shows nothing for this workload")
    deadline = time.monotonic() + grace_s
    with LangGraphClient(setup.fixture.api_url, setup.auth) as client:
        try:
            client.assistants()
        except (APIUnreachable, APIError) as exc:
            why = not_answered(WHO, exc)
            return [FollowUp(k, w, ref, NOT_VERIFIABLE, why) for k, w, ref in accepted]
        looked = follow_each(pending, lambda work: _look(client, work, grace_s), deadline, WHO)
    return [*others, *looked]


def _look(client: LangGraphClient, work: FollowUp, grace_s: float) -> tuple[bool, FollowUp]:
    """Ask the server about one background run: (settled, what it is, or would be at the
    grace's end)."""
    thread_id, _, run_id = work.ref.partition("/")
    run = client.run(thread_id, run_id)
    if run is None:
        why = "the Agent Server has no such run (404)"
        return True, work._replace(state=NOT_VERIFIABLE, detail=why)
    status = run.status
    if status == RUN_DONE:
        return True, work._replace(state=PROCESSED)
    if status in RUN_FAILED:
        why = (client.thread_error(thread_id) if status == "error" else "") or f"run {status}"
        return True, work._replace(state=FAILED_AFTER, detail=words(why))
    why = f"still {status or 'pending'} {grace_s:g} s after the run"
    return False, work._replace(state=NOT_FINISHED, detail=why)
