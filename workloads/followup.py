"""What every platform's follower shares: the accepted work it shows nothing of is "not
verifiable", never processed or lost, and a follow-up the platform does not answer is named
in one wording; and the per-arrival poll for a platform that shows each arrival's end.

agno and LangGraph answer a read per accepted arrival (an upload's status, a run's): each
poll asks only about the arrivals still pending, until all have settled or the grace is
over, and what is then still seen working is "not finished in grace". A refusal that asking
again cannot change ends the follow-up of that workload only. AgenticOS shows only whole
lists, so its follower reads those instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection

from engine.dialect_kit import words
from engine.followups import NOT_VERIFIABLE, FollowUp
from engine.seam import Accepted
from workloads.setup_client import APIError, APIUnreachable

# Seconds between polls: a settled arrival is seen within this, and the follow-up asks at
# most one read per pending arrival per poll.
POLL_S = 1.0


def followed(
    accepted: list[Accepted], workloads: Collection[str], not_shown: str
) -> tuple[list[Accepted], list[FollowUp]]:
    """The accepted arrivals of ``workloads``, the ones the platform shows the end of, and
    every other one not verifiable, ``not_shown`` saying why."""
    pending = [(k, w, ref) for k, w, ref in accepted if w in workloads]
    others = [
        FollowUp(k, w, ref, NOT_VERIFIABLE, not_shown)
        for k, w, ref in accepted
        if w not in workloads
    ]
    return pending, others


def not_answered(who: str, exc: Exception) -> str:
    """Why an arrival is not verifiable when ``who`` (the platform) did not answer a read."""
    return f"{who} did not answer the follow-up ({words(str(exc))})"


def follow_each(
    pending: list[Accepted],
    look: Callable[[FollowUp], tuple[bool, FollowUp]],
    deadline: float,
    who: str,
    for_good: Callable[[Exception], bool] = lambda exc: False,
) -> list[FollowUp]:
    """One FollowUp per pending arrival: ``look`` (settled, what it is, or would be at the
    grace's end) asked at every poll until all settle or ``deadline`` (monotonic) passes.
    A read ``who`` (the platform, in the detail's words) did not answer is not verifiable;
    one ``for_good`` says will not change settles its workload's arrivals so."""
    settled: dict[int, FollowUp] = {}
    # What each arrival still pending was last seen as: what it is if the grace ends now.
    last: dict[int, FollowUp] = {}
    # Workloads whose reads the platform refused for good: each costs only its own arrivals.
    refused: dict[str, str] = {}
    while True:
        for k, workload, ref in pending:
            try:
                done, last[k] = look(FollowUp(k, workload, ref, ""))
            except (APIUnreachable, APIError) as exc:
                why = not_answered(who, exc)
                done, last[k] = False, FollowUp(k, workload, ref, NOT_VERIFIABLE, why)
                if for_good(exc):
                    refused[workload] = why
            if done:
                settled[k] = last[k]
        for k, workload, ref in pending:
            if workload in refused and k not in settled:
                settled[k] = FollowUp(k, workload, ref, NOT_VERIFIABLE, refused[workload])
        pending = [p for p in pending if p[0] not in settled]
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(POLL_S)
    settled.update({k: last[k] for k, _, _ in pending})
    return list(settled.values())
