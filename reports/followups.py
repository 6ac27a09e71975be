"""Work accepted with 202, followed to its end: followups.csv joined to the samples, counted.

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
from typing import Any, cast

import pandas as pd

from engine.followups import (
    COLUMNS,
    FAILED_AFTER,
    FOLLOWUPS_FILE,
    LOST,
    NOT_FINISHED,
    NOT_VERIFIABLE,
    PROCESSED,
    STATES,
)

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
_FIELDS = {
    PROCESSED: "processed",
    FAILED_AFTER: "failed_after",
    NOT_FINISHED: "not_finished",
    NOT_VERIFIABLE: "unverified",
}


class FollowUpsError(ValueError):
    """followups.csv breaks its contract; the message names the line."""


def attach(run_dir: Path, samples: pd.DataFrame) -> pd.DataFrame:
    """The samples with ``after`` and ``after_detail`` filled from followups.csv.

    An arrival is accepted when its sample succeeded and either answered 202 or has a
    follow-up row; an accepted arrival without a row is "not verifiable".
    """
    rows = _read(run_dir / FOLLOWUPS_FILE)
    ok = samples["ok"] == 1
    followed = pd.Series(False, index=samples.index)
    if rows is not None:
        state = samples["index"].map(rows["state"])
        followed = state.notna() & ok
    accepted = followed | (ok & (samples["status"] == ACCEPTED_STATUS))
    after = pd.Series("", index=samples.index, dtype=object)
    after_detail = pd.Series("", index=samples.index, dtype=object)
    after[accepted] = NOT_VERIFIABLE
    after_detail[accepted] = NO_FOLLOW_UP
    if rows is not None:
        after[followed] = state[followed]
        after_detail[followed] = samples["index"].map(rows["detail"])[followed]
    # Categorical: every slice of a million-sample run compares this column.
    columns: dict[str, Any] = {
        AFTER: pd.Categorical(after, categories=["", *STATES]),
        AFTER_DETAIL: after_detail,
    }
    return samples.assign(**columns)


def _read(file: Path) -> pd.DataFrame | None:
    """followups.csv indexed by arrival index, or None when the run has none."""
    if not file.exists():
        return None
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
    return rows.set_index("index")


def counts_by_workload(samples: pd.DataFrame) -> dict[str, FollowUpCounts]:
    """Per workload, its accepted arrivals by follow-up state (workloads with none left out)."""
    if AFTER not in samples.columns:
        return {}
    accepted = samples[samples[AFTER] != ""]
    table = accepted.groupby(["workload", AFTER], observed=True).size()
    result: dict[str, dict[str, int]] = {}
    for key, n in table.items():
        workload, state = cast(tuple[str, str], key)
        if n:
            result.setdefault(str(workload), {})[_FIELDS[state]] = int(n)
    return {w: FollowUpCounts(sum(f.values()), **f) for w, f in result.items()}


def lost_groups(samples: pd.DataFrame) -> pd.Series:
    """Lost work grouped by (workload, follow-up state, the platform's reason): counts."""
    if AFTER not in samples.columns:
        return pd.Series(dtype=int)
    lost = samples[samples[AFTER].isin(LOST)]
    return lost.groupby(["workload", AFTER, AFTER_DETAIL], observed=True).size()


def unverified_reasons(samples: pd.DataFrame) -> list[tuple[str, str, int]]:
    """Accepted work nothing could verify, by workload and the reason the follow-up gave
    (a read the platform refused, no follower, an interrupted run): (workload, reason,
    count), most first, so the report's first screen can say why in one line each."""
    if AFTER not in samples.columns:
        return []
    unverified = samples[samples[AFTER] == NOT_VERIFIABLE]
    groups = unverified.groupby(["workload", AFTER_DETAIL], observed=True).size()
    pairs = [(cast(tuple[str, str], key), int(n)) for key, n in groups.items()]
    ranked = sorted(pairs, key=lambda item: (-item[1], item[0]))
    return [(str(w), str(why), n) for (w, why), n in ranked if n]
