"""What became of work the platform accepted (a 202): the follow-up beside each sample.

A 202 says the platform took the work, not that it did it. After the run, the
platform's follower (its Platform record's ``follow_up``, engine/seam.py's
FollowUpAccepted) finds out what became of every accepted arrival, and
the master writes one row per accepted arrival to the run's ``followups`` table
(``followups.parquet``, engine/dataset.py), joined to the samples by ``index``: the
sample stays what the request did, the follow-up says what the platform then did
with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from engine.dataset import FOLLOWUPS, write_table

# The table's CSV: what ``loadkit export`` writes, and what runs from before the dataset hold.
FOLLOWUPS_FILE = FOLLOWUPS.csv
COLUMNS = ("index", "workload", "ref", "state", "detail")

# The platform finished the work.
PROCESSED = "processed"
# The platform ended it in failure after accepting it (the detail says why, in its words).
FAILED_AFTER = "failed after 202"
# Still not done when the grace period after the run ran out.
NOT_FINISHED = "not finished in grace"
# The platform shows nothing that says what became of it.
NOT_VERIFIABLE = "not verifiable"
STATES = (PROCESSED, FAILED_AFTER, NOT_FINISHED, NOT_VERIFIABLE)
# States that count as lost work, against the workload's error rate.
LOST = (FAILED_AFTER, NOT_FINISHED)


class FollowUp(NamedTuple):
    """One accepted arrival and what the platform did with it."""

    # Shadows tuple.index, which nothing calls on it: the column's name in every file.
    index: int  # type: ignore[assignment]
    workload: str
    ref: str
    state: str
    detail: str = ""


def write_followups(run_dir: Path, run_id: str, followups: list[FollowUp]) -> None:
    """The run's ``followups`` table, in arrival order."""
    rows = sorted(followups)
    write_table(
        run_dir, FOLLOWUPS, run_id, {c: [r[i] for r in rows] for i, c in enumerate(COLUMNS)}
    )
