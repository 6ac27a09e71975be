"""Check a run's followups.csv against AgenticOS's own tables (rag_documents, agent_runs).

    python check_followups.py RUN_DIR TRIGGER_ID [ENDED_AT] [POSTGRES_URL]

The follow-up read the platform through its API; this reads the platform's
Postgres directly, as of the moment the follow-up ended (ENDED_AT, the console's
"follow-up:" line to the millisecond, else run.json's ``follow_up_ended_at``, which
is written in whole seconds: a run that ended in the second's fraction before it
would otherwise read as unfinished), and
says for every accepted upload and webhook delivery whether the two agree:

- an upload (ref = rag_documents.id): processed <-> status done, failed after 202
  <-> status error (detail = its error_message, as the kit trims it), not finished
  in grace <-> not completed by then;
- a delivery: the run of the trigger's run-log conversation whose user message
  echoes it (this load run's id and the arrival index, read from the ``messages``
  table): processed <-> completed by then, failed after 202 <-> ended otherwise by
  then (detail = its error), not finished <-> no run or not ended by then.

Prints the tallies and every disagreement; exit 0 when all agree.
"""

from __future__ import annotations

import csv
import json
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from engine.dialect_kit import words

DEFAULT_URL = "postgresql://postgres@127.0.0.1:55432/agenticos"


def main(run_dir: str, trigger_id: str, ended_at: str = "", url: str = DEFAULT_URL) -> int:
    run = Path(run_dir)
    meta = json.loads((run / "run.json").read_text())
    rows = list(csv.DictReader((run / "followups.csv").open()))
    at = datetime.fromisoformat(ended_at or meta["follow_up_ended_at"])
    start = datetime.fromtimestamp(meta["start_epoch"], UTC)
    bad: list[str] = []
    tally: Counter = Counter()
    with psycopg.connect(url) as db:
        uploads = [r for r in rows if r["workload"] == "ingest"]
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
            want = (
                ("processed", "")
                if settled and status == "done"
                else ("failed after 202", words(error or ""))
                if settled
                else ("not finished in grace", None)
            )
            tally["ingest", r["state"], want[0]] += 1
            if r["state"] != want[0] or (want[1] is not None and r["detail"] != want[1]):
                bad.append(
                    f"upload {r['index']} {r['ref']}: csv {r['state']!r} {r['detail']!r}, "
                    f"db {status} completed {completed} ({error!r})"
                )
        deliveries = sorted(
            (r for r in rows if r["workload"] == "trigger_fire"), key=lambda r: int(r["index"])
        )
        (conversation,) = db.execute(
            "SELECT conversation_id FROM agent_triggers WHERE id = %s", (trigger_id,)
        ).fetchone()
        # Every run of the run-log conversation with the delivery its user message echoes.
        runs = db.execute(
            "SELECT r.id, r.status, r.error, r.started_at, r.ended_at, "
            'substring(m.content from \'"run_id": "([^"]+)"\'), '
            "substring(m.content from '\"index\": (\\d+)')::int "
            "FROM agent_runs r LEFT JOIN messages m ON m.run_id = r.id AND m.role = 'user' "
            "WHERE r.conversation_id = %s ORDER BY r.started_at",
            (conversation,),
        ).fetchall()
        ours = {row[6]: row for row in runs if row[5] == meta["run_id"]}
        others_in_window = sum(
            1
            for row in runs
            if row[5] not in (None, meta["run_id"]) and row[3] and start <= row[3] <= at
        )
        unnamed = sum(1 for row in runs if row[5] is None and row[3] and start <= row[3] <= at)
        for r in deliveries:
            run_row = ours.get(int(r["index"]))
            if run_row is None or run_row[4] is None or run_row[4] > at:
                want = ("not finished in grace", None)
            elif run_row[1] == "completed":
                want = ("processed", "")
            else:
                want = ("failed after 202", words(run_row[2] or f"run {run_row[1]}"))
            tally["trigger_fire", r["state"], want[0]] += 1
            if r["state"] != want[0] or (want[1] is not None and r["detail"] != want[1]):
                bad.append(
                    f"delivery {r['index']}: csv {r['state']!r} {r['detail']!r}, "
                    f"db {run_row and run_row[:5]}"
                )
        later = sum(1 for row in ours.values() if row[4] is not None and row[4] > at)
        never = sum(1 for r in deliveries if int(r["index"]) not in ours)
    others = Counter(
        (r["workload"], r["state"]) for r in rows if r["workload"] not in ("ingest", "trigger_fire")
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


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
