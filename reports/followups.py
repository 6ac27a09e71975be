"""Work accepted with 202, followed to its end: the follow-ups joined to the samples.

A 202 is an answer, not the work. The sample of an accepted arrival stays ``ok``
(the request did what it should), and its follow-up says what the platform then
did: ``processed``, ``failed after 202``, ``not finished in grace``, or ``not
verifiable``. The two kinds of lost work count against the workload's error
rate; an accepted arrival with nothing to say what became of it (no follower,
an interrupted run, a run from before follow-ups) is "not verifiable", and a
threshold resting on it is not measured, never a pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from engine.dataset import FOLLOWUPS, run_id_of
from engine.followups import (
    COLUMNS,
    FAILED_AFTER,
    FOLLOWUPS_FILE,
    NOT_FINISHED,
    NOT_VERIFIABLE,
    PROCESSED,
    STATES,
)
from reports.dataset import Samples, quoted

# Column added to the samples: the follow-up state of an accepted arrival, else "".
AFTER = "after"
AFTER_DETAIL = "after_detail"
# Status that says the platform accepted the work for later, whatever the platform.
ACCEPTED_STATUS = 202
NO_FOLLOW_UP = "no follow-up recorded (the run was interrupted, or predates follow-ups)"


@dataclass(frozen=True)
class FollowUpCounts:
    """Accepted arrivals of one workload in one slice, by what became of them."""

    accepted: int = 0
    processed: int = 0
    failed_after: int = 0
    not_finished: int = 0
    unverified: int = 0

    @property
    def lost(self) -> int:
        """Accepted and then not done: failed after 202, or not finished in grace."""
        return self.failed_after + self.not_finished


NONE = FollowUpCounts()
# Follow-up state -> field of FollowUpCounts.
FIELDS = {
    PROCESSED: "processed",
    FAILED_AFTER: "failed_after",
    NOT_FINISHED: "not_finished",
    NOT_VERIFIABLE: "unverified",
}


class FollowUpsError(ValueError):
    """The follow-ups break their contract; the message names the line."""


def load_followups(samples: Samples, run_dir: Path, run_id: str) -> bool:
    """The run's follow-ups as the table ``followups`` (index, state, detail), checked; False
    when the run has none (every accepted arrival is then "not verifiable")."""
    native = run_dir / f"{FOLLOWUPS.name}.parquet"
    if native.exists():
        _check_file(native, run_id)
        samples.con.execute(
            f"CREATE TABLE followups AS SELECT index, workload, ref, state, detail, "
            f"file_row_number + 1 AS row FROM read_parquet('{native}', file_row_number = true)"
        )
        where = f"{native}: row"
    elif (run_dir / FOLLOWUPS_FILE).exists():
        samples.con.register("followups_csv", _read(run_dir / FOLLOWUPS_FILE).reset_index())
        samples.con.execute(
            "CREATE TABLE followups AS SELECT index, workload, ref, state, detail, "
            "row_number() OVER () + 1 AS row FROM followups_csv"
        )
        samples.con.unregister("followups_csv")
        return True
    else:
        return False
    bad = samples.rows(
        f"SELECT row, state FROM followups WHERE state NOT IN ({quoted(STATES)}) ORDER BY row "
        "LIMIT 1"
    )
    if bad:
        row, state = bad[0]
        raise FollowUpsError(f"{where} {row}: state {state!r} is not one of {', '.join(STATES)}")
    (repeated,) = samples.one("SELECT count(*) - count(DISTINCT index) FROM followups")
    if repeated:
        raise FollowUpsError(f"{native}: index must be whole numbers, each at most once")
    return True


def _check_file(file: Path, run_id: str) -> None:
    """followups.parquet holds the table's columns and names this run."""
    try:
        schema = pq.read_schema(file)
    except (pa.ArrowInvalid, OSError) as exc:
        raise FollowUpsError(f"{file}: unreadable ({str(exc).splitlines()[0]})") from None
    missing = [c for c in COLUMNS if c not in schema.names]
    if missing:
        raise FollowUpsError(f"{file}: missing columns {', '.join(missing)}")
    named = run_id_of(schema)
    if named != run_id:
        raise FollowUpsError(f"{file}: written for run {named!r}, not run.json's {run_id!r}")


def after_columns(followed: bool) -> tuple[str, str]:
    """The ``samples`` table's ``after`` and ``after_detail`` (and the join they need): an
    arrival is accepted when its sample succeeded and either answered 202 or has a follow-up
    row; an accepted arrival without a row is "not verifiable"."""
    accepted = f"r.ok = 1 AND r.status = {ACCEPTED_STATUS}"
    if not followed:
        return (
            f"CASE WHEN {accepted} THEN '{NOT_VERIFIABLE}' ELSE '' END AS {AFTER}, "
            f"CASE WHEN {accepted} THEN {quoted([NO_FOLLOW_UP])} ELSE '' END AS {AFTER_DETAIL}",
            "",
        )
    followed_row = "r.ok = 1 AND f.state IS NOT NULL"
    return (
        f"CASE WHEN {followed_row} THEN f.state WHEN {accepted} THEN '{NOT_VERIFIABLE}' "
        f"ELSE '' END AS {AFTER}, "
        f"CASE WHEN {followed_row} THEN f.detail WHEN {accepted} THEN {quoted([NO_FOLLOW_UP])} "
        f"ELSE '' END AS {AFTER_DETAIL}",
        "LEFT JOIN followups f ON f.index = r.index",
    )


def _read(file: Path) -> pd.DataFrame:
    """followups.csv (a run from before the dataset) indexed by arrival index."""
    try:
        rows = pd.read_csv(file, dtype={"ref": str, "detail": str}, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise FollowUpsError(f"{file}: not readable as CSV ({exc})") from None
    missing = [c for c in COLUMNS if c not in rows.columns]
    if missing:
        raise FollowUpsError(f"{file}: missing columns {', '.join(missing)}")
    bad = ~rows["state"].isin(STATES)
    if bad.any():
        line = int(bad.to_numpy().argmax()) + 2
        raise FollowUpsError(
            f"{file}: line {line}: state {rows['state'][bad].iloc[0]!r} is not one of "
            f"{', '.join(STATES)}"
        )
    if not pd.api.types.is_integer_dtype(rows["index"]) or rows["index"].duplicated().any():
        raise FollowUpsError(f"{file}: index must be whole numbers, each at most once")
    return rows[list(COLUMNS)].set_index("index")


def unverified_reasons(samples: Samples) -> list[tuple[str, str, int]]:
    """Accepted work nothing could verify, by workload and the reason the follow-up gave
    (a read the platform refused, no follower, an interrupted run): (workload, reason,
    count), most first, so the report's first screen can say why in one line each."""
    groups = samples.rows(
        f"SELECT workload, {AFTER_DETAIL}, count(*) FROM samples "
        f"WHERE {AFTER} = '{NOT_VERIFIABLE}' GROUP BY ALL"
    )
    ranked = sorted(((str(w), str(why)), int(n)) for w, why, n in groups)
    ranked.sort(key=lambda item: -item[1])
    return [(w, why, n) for (w, why), n in ranked if n]
