"""Check a run's followups.csv against AgenticOS's own Postgres, as of the moment the follow-up
ended: the follow-up read the platform through its API, this reads its tables, so a committed
result says its accepted work was accounted for by a reader that is not the kit's.

    python -m workloads.agenticos.postgres_check RUN_DIR TRIGGER_ID [ENDED_AT] [POSTGRES_URL]

ENDED_AT (the console's "follow-up:" line, to the millisecond) wins over run.json's
``follow_up_ended_at``, which older runs wrote in whole seconds. An upload is its rag_documents
row (done, error, or not completed by then); a delivery is the run of the trigger's run-log
conversation whose user message names this load run and the arrival's index (completed, ended
otherwise, or not ended by then). Prints the tallies and every disagreement; exit 0 when all
agree.
"""

from __future__ import annotations

import csv
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from engine import run_record
from engine.dataset import FOLLOWUPS, read_table
from engine.dialect_kit import words
from engine.followups import FOLLOWUPS_FILE
from engine.run_record import RUN_FILE

DEFAULT_URL = "postgresql://postgres@127.0.0.1:55432/agenticos"
UPLOAD, DELIVERY = "ingest", "trigger_fire"
# The states a followups.csv row is held to (engine.followups): what Postgres says it should be.
PROCESSED, FAILED_AFTER, NOT_FINISHED = "processed", "failed after 202", "not finished in grace"
# A delivery's run, as the query returns it.
RunRow = tuple


def followups_of(run: Path) -> list[dict[str, str]]:
    """The run's follow-ups as rows of strings: a committed run's followups.csv as written, a
    newer run's dataset table (engine/dataset.py) as the same strings."""
    if (run / FOLLOWUPS_FILE).exists():
        with (run / FOLLOWUPS_FILE).open() as f:
            return list(csv.DictReader(f))
    rows = read_table(run, FOLLOWUPS).to_pylist()
    return [
        {key: "" if value is None else str(value) for key, value in row.items()} for row in rows
    ]


def main(run_dir: str, trigger_id: str, ended_at: str = "", url: str = DEFAULT_URL) -> int:
    """Compare, print, and exit 0 when every row agrees with Postgres (1 when one does not)."""
    run = Path(run_dir)
    record = run_record.read(run / RUN_FILE)
    rows = followups_of(run)
    ended = ended_at or record.follow_up_ended_at
    if not ended:
        raise SystemExit(
            "postgres_check: ENDED_AT: run.json has no follow_up_ended_at; pass the time of the "
            "console's 'follow-up:' line, e.g. 2026-12-01T20:28:50.517+00:00"
        )
    at = datetime.fromisoformat(ended)
    start = datetime.fromtimestamp(record.start_epoch, UTC)
    bad: list[str] = []
    tally: Counter = Counter()
    uploads = [r for r in rows if r["workload"] == UPLOAD]
    deliveries = sorted(
        (r for r in rows if r["workload"] == DELIVERY), key=lambda r: int(r["index"])
    )
    with psycopg.connect(url) as db:
        _check_uploads(db, uploads, at, tally, bad)
        runs = _trigger_runs(db, trigger_id)
    ours = {row[6]: row for row in runs if row[5] == record.run_id}
    for r in deliveries:
        run_row = ours.get(int(r["index"]))
        if run_row is None or run_row[4] is None or run_row[4] > at:
            want: tuple[str, str | None] = (NOT_FINISHED, None)
        elif run_row[1] == "completed":
            want = (PROCESSED, "")
        else:
            want = (FAILED_AFTER, words(run_row[2] or f"run {run_row[1]}"))
        tally[DELIVERY, r["state"], want[0]] += 1
        if r["state"] != want[0] or (want[1] is not None and r["detail"] != want[1]):
            bad.append(
                f"delivery {r['index']}: csv {r['state']!r} {r['detail']!r}, "
                f"db {run_row and run_row[:5]}"
            )
    in_window = [row for row in runs if row[3] and start <= row[3] <= at]
    others_in_window = sum(1 for row in in_window if row[5] not in (None, record.run_id))
    unnamed = sum(1 for row in in_window if row[5] is None)
    later = sum(1 for row in ours.values() if row[4] is not None and row[4] > at)
    never = sum(1 for r in deliveries if int(r["index"]) not in ours)
    others = Counter(
        (r["workload"], r["state"]) for r in rows if r["workload"] not in (UPLOAD, DELIVERY)
    )
    print(f"follow-up ended {at.isoformat()} (run began {start.isoformat()})")
    print(
        f"{len(uploads)} uploads, {len(deliveries)} deliveries. The deliveries' runs (named by "
        f"the body their user message echoes): {len(ours)} exist now, {later} of them ended "
        f"after the follow-up did, {never} deliveries have none. Runs naming another load run "
        f"started in this run's window: {others_in_window}; runs naming no load run "
        f"(seed/preflight fires) in it: {unnamed}"
    )
    for (workload, csv_state, db_state), n in sorted(tally.items()):
        print(f"  {workload:12} csv {csv_state:22} db {db_state:22} {n}")
    for (workload, state), n in sorted(others.items()):
        print(f"  {workload:12} csv {state:22} (AgenticOS keeps no record to check) {n}")
    print(f"{len(bad)} disagreements")
    for line in bad:
        print("  " + line)
    return 1 if bad else 0


def _check_uploads(
    db: psycopg.Connection, uploads: list[dict], at: datetime, tally: Counter, bad: list[str]
) -> None:
    """Each accepted upload's row against its rag_documents row as of ``at``."""
    docs = {
        str(i): (s, e, c)
        for i, s, e, c in db.execute(
            "SELECT id, status, error_message, completed_at FROM rag_documents "
            "WHERE id = ANY(%s::uuid[])",
            ([r["ref"] for r in uploads],),
        )
    }
    for r in uploads:
        status, error, completed = docs.get(r["ref"], (None, None, None))
        settled = completed is not None and completed <= at and status in ("done", "error")
        want: tuple[str, str | None] = (
            (PROCESSED, "")
            if settled and status == "done"
            else (FAILED_AFTER, words(error or ""))
            if settled
            else (NOT_FINISHED, None)
        )
        tally[UPLOAD, r["state"], want[0]] += 1
        if r["state"] != want[0] or (want[1] is not None and r["detail"] != want[1]):
            bad.append(
                f"upload {r['index']} {r['ref']}: csv {r['state']!r} {r['detail']!r}, "
                f"db {status} completed {completed} ({error!r})"
            )


def _trigger_runs(db: psycopg.Connection, trigger_id: str) -> list[RunRow]:
    """Every run of the trigger's run-log conversation, in start order: (id, status, error,
    started, ended, the load run its user message names, the arrival index it names)."""
    found = db.execute(
        "SELECT conversation_id FROM agent_triggers WHERE id = %s", (trigger_id,)
    ).fetchone()
    if found is None:
        raise SystemExit(f"postgres_check: trigger {trigger_id} is not in agent_triggers")
    return db.execute(
        "SELECT r.id, r.status, r.error, r.started_at, r.ended_at, "
        'substring(m.content from \'"run_id": "([^"]+)"\'), '
        "substring(m.content from '\"index\": (\\d+)')::int "
        "FROM agent_runs r LEFT JOIN messages m ON m.run_id = r.id AND m.role = 'user' "
        "WHERE r.conversation_id = %s ORDER BY r.started_at",
        (found[0],),
    ).fetchall()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
