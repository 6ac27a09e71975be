"""Work accepted with 202 and then lost is found, and fails the run.

The embedder behind the reference platform fails a share of its calls (after the
ones seeding and preflight make), so some accepted uploads end ``error`` on the
platform. The run must follow every accepted upload and webhook delivery to its
end, count exactly the uploads the platform's own documents list shows failed,
and fail the ingest threshold (limit 0) although every upload was answered 202.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import time
from collections import Counter
from datetime import datetime

import pytest

from engine.dataset import FOLLOWUPS
from engine.dialect_kit import words
from inputs.fixture import load_fixture, webhook_secret
from platforms.reference.settings import DEFAULT_ADMIN_EMAIL
from reports.build import build_report
from reports.followups import AFTER
from reports.rundir import load_run
from stack.generator_runs import (
    PASSWORD,
    RUN_TIMEOUT_S,
    platform,
    read_samples,
    read_table,
    write_scenario,
)
from stack.processes import free_port, running, stop
from tests.support.generator_env import (
    LOST_WORK_THRESHOLDS,
    clean_start_seed,
    run_local,
    start_local,
    wait_for_rows,
)
from tests.support.rundirs import golden_copy
from tests.support.transport import signed_setup_of
from workloads.agenticos.client import AgenticOSClient
from workloads.agenticos.followup import follow_up
from workloads.agenticos.platform import PLATFORM as AGENTICOS

# Embedder requests before load: the collection's width probe, three seeded documents,
# preflight's search. They must pass; the run's uploads then meet the faults.
EMBED_REQUESTS_BEFORE_LOAD = 5
ERROR_RATE = 0.4


@pytest.mark.system
@pytest.mark.slow
def test_uploads_lost_after_202_are_counted_and_fail_the_ingest_threshold(tmp_path):
    seed = clean_start_seed(first=EMBED_REQUESTS_BEFORE_LOAD, error_rate=ERROR_RATE)
    embed = ("--error-rate", str(ERROR_RATE), "--seed", seed)
    scenario = write_scenario(
        tmp_path,
        [("sustain", 4.0, 6.0)],
        workloads={"ingest": 3, "trigger_fire": 1},
        thresholds=LOST_WORK_THRESHOLDS,
    )
    run_dir = tmp_path / "run"
    with platform(tmp_path / "platform", embed_knobs=embed) as plat:
        done = run_local(plat, scenario, run_dir, "--follow-up-grace", "45")
        fixture = load_fixture(plat.fixture)
        with AgenticOSClient(plat.target.url) as client:
            client.sign_in(DEFAULT_ADMIN_EMAIL, PASSWORD)
            client.org_id = AGENTICOS.seeded_from(fixture).org_id
            docs = {
                d["id"]: d
                for d in client.list_all(
                    "/rag/documents", collection_name=AGENTICOS.seeded_from(fixture).collection_name
                )
            }
    samples = read_samples(run_dir)
    assert len(samples) == 24 and all(s["outcome"] == "ok" for s in samples), done.stderr[-2000:]
    assert {s["status"] for s in samples} == {"202"}
    followups = read_table(run_dir, FOLLOWUPS)
    # One follow-up per accepted arrival, joined by index.
    assert sorted(int(f["index"]) for f in followups) == sorted(int(s["index"]) for s in samples)
    uploads = [f for f in followups if f["workload"] == "ingest"]
    states = Counter(f["state"] for f in uploads)
    # What the platform's own documents list says became of each accepted upload.
    platform_says = Counter(docs[f["ref"]]["status"] for f in uploads)
    assert states["failed after 202"] == platform_says["error"] > 0, (states, platform_says)
    assert states["processed"] == platform_says["done"] > 0
    # Each in the platform's words: the document's error_message, trimmed.
    for f in uploads:
        if f["state"] == "failed after 202":
            assert f["detail"] == words(docs[f["ref"]]["error_message"]), f
    # Every webhook delivery was matched to the routine run it became (the model is healthy).
    deliveries = [f for f in followups if f["workload"] == "trigger_fire"]
    fired = sum(1 for s in samples if s["workload"] == "trigger_fire")
    assert len(deliveries) == fired > 0 and {f["state"] for f in deliveries} == {"processed"}
    # The verdict: ingest failed its threshold although every upload was answered 202.
    assert done.returncode == 1, done.stderr[-2000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    verdicts = {t["workload"]: t for t in summary["thresholds"]}
    lost = states["failed after 202"] + states["not finished in grace"]
    assert verdicts["ingest"]["status"] == "FAIL"
    assert verdicts["ingest"]["measured"] == lost / len(uploads)
    assert verdicts["trigger_fire"]["status"] == "pass"
    ingest = summary["whole_run"]["workloads"]["ingest"]
    assert ingest["after"]["failed_after"] == states["failed after 202"]
    report = (run_dir / "report.md").read_text()
    assert "Work accepted for later" in report and "failed after accepting" in report
    # The grace the follow-up was given, as run.json records it and the report says it.
    record = json.loads((run_dir / "run.json").read_text())
    assert record["follow_up_grace_s"] == 45
    # To the millisecond, to be compared with the platform's own times.
    followed, ended = (
        datetime.fromisoformat(record[key]) for key in ("follow_up_ended_at", "ended_at")
    )
    assert followed >= ended and "." in record["follow_up_ended_at"]
    assert "for up to 45.0 s after the run" in report


@pytest.mark.system
@pytest.mark.slow
def test_a_read_the_platform_does_not_offer_costs_only_the_work_that_needed_it(tmp_path):
    """Uploads and deliveries are followed each on its own: with the documents list refused
    (405), the uploads are not verifiable and say why while the deliveries are still followed
    to their own runs (an earlier load run's and a preflight's fires left out); with the run
    list refused, the other way round."""
    with platform(tmp_path / "platform") as plat:
        fixture = load_fixture(plat.fixture)
        own = AGENTICOS.seeded_from(fixture)
        start_epoch = time.time() - 1
        accepted = []
        with AgenticOSClient(plat.target.url) as client:
            client.sign_in(DEFAULT_ADMIN_EMAIL, PASSWORD)
            client.org_id = own.org_id
            for k in range(3):
                answer = client.upload(own.collection_name, f"f{k}.txt", b"followed alone")
                accepted.append((k, "ingest", answer["id"]))
            secret = webhook_secret(PASSWORD, own.agent_id)
            # Two deliveries of this load run; one an earlier run left in the backlog and one
            # a preflight sent: their runs start after this run began, and are not this run's.
            bodies = [
                {"event": "loadkit", "run_id": "this-run", "index": 3},
                {"event": "loadkit", "run_id": "earlier-run", "index": 7},
                {"event": "agent-loadkit.preflight"},
                {"event": "loadkit", "run_id": "this-run", "index": 4},
            ]
            for body in bodies:
                raw = json.dumps(body).encode()
                fired = client.fire_webhook("webhook", own.trigger_id, raw, secret)
                assert fired.status_code == 202
                if body.get("run_id") == "this-run":
                    accepted.append((body["index"], "trigger_fire", f"delivery-{body['index']}"))
        states = {}
        for refused in ("/api/v1/rag/documents", "/api/v1/runs"):
            port = free_port()
            args = ["-m", "tests.support.refusing_proxy", "--upstream", plat.target.url]
            args += ["--port", str(port), "--refuse", refused]
            with running(args, "/api/v1/health", port, tmp_path / "proxy.log") as proxy:
                proxied = dataclasses.replace(fixture, api_url=proxy.url)
                with signed_setup_of(proxied, DEFAULT_ADMIN_EMAIL, PASSWORD) as setup:
                    followed = follow_up(
                        setup,
                        run_id="this-run",
                        start_epoch=start_epoch,
                        accepted=accepted,
                        grace_s=60,
                    )
            assert sorted(f.index for f in followed) == list(range(5))
            states[refused] = {(f.workload, f.state, f.detail) for f in followed}
        # A delivery whose run never came is not paired with another fire's run.
        never = (5, "trigger_fire", "delivery-5")
        with signed_setup_of(fixture, DEFAULT_ADMIN_EMAIL, PASSWORD) as setup:
            again = follow_up(
                setup,
                run_id="this-run",
                start_epoch=start_epoch,
                accepted=[a for a in accepted if a[1] == "trigger_fire"] + [never],
                grace_s=2,
            )
    assert {(f.index, f.state, f.detail) for f in again} == {
        (3, "processed", ""),
        (4, "processed", ""),
        (5, "not finished in grace", "no run yet in the trigger's log 2 s after the run"),
    }
    refusal = "GET {} answered HTTP 405: Method Not Allowed"
    assert states["/api/v1/rag/documents"] == {
        ("ingest", "not verifiable", refusal.format("/api/v1/rag/documents")),
        ("trigger_fire", "processed", ""),
    }
    assert states["/api/v1/runs"] == {
        ("ingest", "processed", ""),
        ("trigger_fire", "not verifiable", refusal.format("/api/v1/runs")),
    }


@pytest.mark.system
@pytest.mark.slow
def test_an_interrupted_run_writes_its_accepted_work_not_verifiable(tmp_path):
    """Stopped early, the run follows nothing, and says so for every arrival the platform
    accepted, whatever status it accepted with (agno accepts a webhook with a 200)."""
    scenario = write_scenario(
        tmp_path, [("sustain", 60.0, 8.0)], workloads={"ingest": 3, "trigger_fire": 1}
    )
    run_dir = tmp_path / "run"
    with platform(tmp_path / "platform") as plat:
        proc = start_local(plat, scenario, run_dir)
        try:
            wait_for_rows(run_dir, 8, proc)
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=RUN_TIMEOUT_S)
        finally:
            stop(proc)
    samples = read_samples(run_dir)
    accepted = {int(s["index"]) for s in samples if s["outcome"] == "ok"}
    followups = read_table(run_dir, FOLLOWUPS)
    assert len(accepted) >= 8 and {int(f["index"]) for f in followups} == accepted
    assert {(f["state"], f["detail"]) for f in followups} == {
        ("not verifiable", "not followed: the run did not complete")
    }
    # A SIGINT records the run and builds no report; the operator builds it.
    assert build_report(run_dir) == 2
    summary = json.loads((run_dir / "summary.json").read_text())
    ingest = summary["whole_run"]["workloads"]["ingest"]["after"]
    assert ingest["unverified"] == ingest["accepted"] > 0 and ingest["processed"] == 0


def test_accepted_work_without_a_follow_up_is_not_verifiable_never_a_pass(tmp_path):
    """A run directory whose 202s were never followed (an interrupted run, an old one)."""
    run = golden_copy(tmp_path / "run")
    index = _accepted_in_sustain(run)
    with load_run(run) as loaded:
        accepted = loaded.samples.rows(f"SELECT index, {AFTER} FROM samples WHERE {AFTER} <> ''")
    assert accepted == [(index, "not verifiable")]


def test_a_malformed_followups_file_is_refused_in_one_line(tmp_path, capsys):
    run = golden_copy(tmp_path / "run")
    (run / "followups.csv").write_text("index,workload,ref,state,detail\n3,api_read,x,lost,\n")
    assert build_report(run) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "followups.csv: line 2: state 'lost' is not one of" in err[0]
    assert not (run / "report.md").exists()


def _accepted_in_sustain(run):
    """Turn the first ok api_read sample offered in sustain into a 202; its index."""
    lines = (run / "samples.csv").read_text().splitlines()
    header = lines[0].split(",")
    col = {name: i for i, name in enumerate(header)}
    for n, line in enumerate(lines[1:], start=1):
        cells = line.split(",")
        if (cells[col["workload"]], cells[col["phase"]], cells[col["ok"]]) == (
            "api_read",
            "sustain",
            "1",
        ):
            cells[col["status"]] = "202"
            lines[n] = ",".join(cells)
            (run / "samples.csv").write_text("\n".join(lines) + "\n")
            return int(cells[col["index"]])
    raise AssertionError("the golden run has no ok api_read in sustain")


def test_why_accepted_work_is_not_verifiable_is_on_the_first_screen(tmp_path):
    """Each reason the follow-up gave (here: a read the platform does not offer) is one line
    before the first section, with how many accepted arrivals it cost."""
    run = golden_copy(tmp_path / "refused")
    index = _accepted_in_sustain(run)
    why = "GET /api/v1/rag/documents answered HTTP 405: Method Not Allowed"
    (run / "followups.csv").write_text(
        f"index,workload,ref,state,detail\n{index},api_read,doc-1,not verifiable,{why}\n"
    )
    build_report(run)
    report = (run / "report.md").read_text()
    first_screen = report[: report.index("\n## ")]
    assert f"1 accepted api_read not verifiable: {why}" in first_screen


def test_unverified_work_is_not_measured_and_lost_work_is_an_error(tmp_path):
    run = golden_copy(tmp_path / "unverified")
    index = _accepted_in_sustain(run)
    assert build_report(run) == 1
    summary = json.loads((run / "summary.json").read_text())
    rate = next(
        t
        for t in summary["thresholds"]
        if (t["workload"], t["metric"]) == ("api_read", "error_rate")
    )
    assert rate["status"] == "not measured"
    assert "Processing not verifiable" in (run / "report.md").read_text()

    lost = golden_copy(tmp_path / "lost")
    assert _accepted_in_sustain(lost) == index
    (lost / "followups.csv").write_text(
        f"index,workload,ref,state,detail\n{index},api_read,doc-1,failed after 202,disk full\n"
    )
    build_report(lost)
    before = json.loads((tmp_path / "unverified" / "summary.json").read_text())
    after = json.loads((lost / "summary.json").read_text())
    sustain = after["phases"]["sustain"]["by_offer"]["workloads"]["api_read"]
    old = before["phases"]["sustain"]["by_offer"]["workloads"]["api_read"]
    assert sustain["after"] == {
        "accepted": 1,
        "processed": 0,
        "failed_after": 1,
        "not_finished": 0,
        "unverified": 0,
    }
    assert sustain["errors"] == old["errors"] + 1 and sustain["ok"] == old["ok"]
    reasons = {(f["outcome"], f["detail"]) for f in after["whole_run"]["failures"]}
    assert ("failed after 202", "disk full") in reasons
