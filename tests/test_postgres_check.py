"""workloads.agenticos.postgres_check, the results' follow-up checker, against a real Postgres
holding what a committed run's followups.csv says AgenticOS held: it prints that result's
committed check_followups.txt line for line, and a row the database contradicts fails it.

The lab's own rows of that run are gone (reseeding deletes the trigger and the documents), so
the database is rebuilt here from the run's rows, with AgenticOS's columns the checker reads.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from stack.postgres import throwaway_postgres
from stack.processes import ROOT

RESULT = ROOT / "results" / "2026-12-01-real-agenticos-quiet" / "default-pool"
TRIGGER = "fb779242-d6f8-47c7-ad93-7d44f7e01aab"
# The console's "follow-up:" line, to the millisecond (the result's README passes it).
ENDED_AT = "2026-12-01T20:28:50.517+00:00"
SCHEMA = """
CREATE TABLE agent_triggers (id uuid PRIMARY KEY, conversation_id uuid);
CREATE TABLE agent_runs (id uuid PRIMARY KEY, conversation_id uuid, status text, error text,
                         started_at timestamptz, ended_at timestamptz);
CREATE TABLE messages (id uuid PRIMARY KEY, run_id uuid, role text, content text);
CREATE TABLE rag_documents (id uuid PRIMARY KEY, status text, error_message text,
                            completed_at timestamptz);
"""
pytestmark = [pytest.mark.system]


def _as_the_run_left_it(url: str) -> None:
    """AgenticOS's tables as the run's followups.csv found them, plus one seed fire's run."""
    record = json.loads((RESULT / "run.json").read_text())
    begun = datetime.fromtimestamp(record["start_epoch"], UTC)
    settled = begun + timedelta(minutes=5)
    conversation = uuid.uuid4()
    with (RESULT / "followups.csv").open() as f:
        rows = list(csv.DictReader(f))
    with psycopg.connect(url) as db:
        db.execute(SCHEMA)
        db.execute("INSERT INTO agent_triggers VALUES (%s, %s)", (TRIGGER, conversation))
        for r in rows:
            if r["workload"] == "ingest":
                done = r["state"] == "processed"
                db.execute(
                    "INSERT INTO rag_documents VALUES (%s, %s, %s, %s)",
                    (r["ref"], "done" if done else "error", r["detail"] or None, settled),
                )
            elif r["workload"] == "trigger_fire":
                body = {"event": "loadkit.delivery", "run_id": record["run_id"]}
                _run(db, conversation, r["state"], {**body, "index": int(r["index"])}, settled)
        _run(db, conversation, "processed", {"event": "loadkit.seed"}, begun)


def _run(db: psycopg.Connection, conversation: uuid.UUID, state: str, body: dict, at) -> None:
    run = uuid.uuid4()
    status = "completed" if state == "processed" else "failed"
    db.execute(
        "INSERT INTO agent_runs VALUES (%s, %s, %s, NULL, %s, %s)",
        (run, conversation, status, at, at + timedelta(seconds=1)),
    )
    db.execute(
        "INSERT INTO messages VALUES (%s, %s, 'user', %s)", (uuid.uuid4(), run, json.dumps(body))
    )


def _check(url: str) -> subprocess.CompletedProcess:
    command = ("-m", "workloads.agenticos.postgres_check", str(RESULT), TRIGGER, ENDED_AT, url)
    return subprocess.run(
        [sys.executable, *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_checker_prints_the_committed_answer_and_fails_a_contradicted_row(tmp_path):
    with throwaway_postgres(tmp_path) as url:
        _as_the_run_left_it(url)
        agreed = _check(url)
        assert agreed.returncode == 0, agreed.stderr
        assert agreed.stdout == (RESULT / "check_followups.txt").read_text()

        with psycopg.connect(url) as db:
            (ref,) = db.execute(
                "SELECT id FROM rag_documents WHERE status = 'done' LIMIT 1"
            ).fetchone()
            db.execute("UPDATE rag_documents SET completed_at = NULL WHERE id = %s", (ref,))
        contradicted = _check(url)
    assert contradicted.returncode == 1
    assert "1 disagreements" in contradicted.stdout
    assert f"{ref}: csv 'processed'" in contradicted.stdout
