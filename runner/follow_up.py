"""After the drain, what became of the work the platform accepted for later: asked of the
platform within the follow-up grace and written to the followups table beside the samples, so a
sample stays the platform's answer and the report can say whether accepted work was done.
"""

from __future__ import annotations

import logging
import time
from collections import Counter

from engine.followups import NOT_VERIFIABLE, FollowUp, write_followups
from engine.sign_in import secret_for
from runner.active_run import COMPLETED, ActiveRun
from runner.recording import iso_ms
from runner.settings import with_host
from workloads.one_arrival import signed_setup
from workloads.platforms import platform_of

log = logging.getLogger(__name__)


def follow_up(run: ActiveRun) -> None:
    """Follow the run's accepted work to its end (the slowest timeout unless
    --follow-up-grace says otherwise) and note when, the states being as of then. A run that
    did not complete is not followed: its accepted work is written "not verifiable" (a platform
    may accept with a 200, which the report alone could not tell from a pass)."""
    accepted = run.accepted
    if not accepted:
        return
    if run.stopped != COMPLETED:
        why = "not followed: the run did not complete"
        write_followups(run.files.dir, run.run_id, _unverifiable(accepted, why))
        return
    fixture = with_host(run.settings.fixture, run.settings.host)
    spoken = platform_of(fixture)
    grace_s = run.settings.follow_up_grace_s
    log.info("following %d accepted arrivals for up to %g s", len(accepted), grace_s)
    try:
        if spoken.follow_up is None:
            raise NotImplementedError(f"{fixture.platform} shows no follow-up")
        secret = secret_for(spoken.credential(spoken.seeded_from(fixture)))
        with signed_setup(
            spoken, fixture, run.settings.email, secret, purpose="follow-up", fix="check --host"
        ) as (setup, _dialect):
            followups = spoken.follow_up(
                setup,
                run_id=run.run_id,
                start_epoch=run.clock.start_epoch,
                accepted=accepted,
                grace_s=grace_s,
            )
    except Exception as exc:
        # The report must still be written; what could not be followed says so.
        log.error("follow-up failed: %s: %s", type(exc).__name__, exc)
        followups = _unverifiable(accepted, f"follow-up failed: {type(exc).__name__}")
    write_followups(run.files.dir, run.run_id, followups)
    run.followed_until = iso_ms(time.time())
    states = Counter(f.state for f in followups)
    log.info("follow-up: %s", ", ".join(f"{n} {s}" for s, n in sorted(states.items())))


def _unverifiable(accepted: list[tuple[int, str, str]], why: str) -> list[FollowUp]:
    return [FollowUp(k, w, ref, NOT_VERIFIABLE, why) for k, w, ref in accepted]
