"""agno's accepted work is followed after the run, as AgenticOS's is, and lost uploads are found.

agno's AgentOS (in its own environment) embeds its knowledge through an embedder
that fails the run's uploads of even index (tests/support/embed_fault_proxy.py, in front
of the stub; chat runs use the stub directly and stay healthy). agno answers
every upload 202 and embeds it in the background, so each sample ends ``ok``
with agno's answer, and only the follow-up after the run can say which uploads
failed: exactly the ones the embedder failed, as agno's own content status says,
counted against the ingest threshold. Every WhatsApp delivery is followed to
the run agno kept for it. And each kind is followed on its own: with agno's
content status refused (405, through tests/refusing_proxy.py), the uploads are
not verifiable and say why, while the deliveries are still followed to their runs.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import urllib.request
from collections import Counter

import pytest

from engine.dataset import FOLLOWUPS
from inputs.fixture import PASSWORD_ENV, load_fixture
from stack.agno import AGNO
from stack.generator_runs import read_samples, read_table, write_scenario
from stack.local import LOCUST, PlatformUnavailable, StackOptions
from stack.platforms import local_stack
from stack.processes import ROOT, free_port, running
from tests.support.embed_fault_proxy import FAULTS_PATH
from tests.support.generator_env import LOST_WORK_THRESHOLDS
from tests.support.transport import signed_setup_of
from workloads.agno.client import AgnoClient
from workloads.agno.followup import follow_up

PASSWORD = "agno-followup-tests-password"
# The embedder in front of the stub, failing the uploads whose arrival index is a multiple
# of EVERY (so the test knows which).
PROXY = ("-m", "tests.support.embed_fault_proxy")
EVERY = 2
# A quick model, so deliveries' runs end well inside the grace.
STUB_ARGS = ("--first-token-ms", "20", "--token-ms", "2", "--tokens", "8")
# Timeouts are the follow-up's grace too: enough for agno's embedder to give up after its
# retries on a busy machine.
TIMEOUTS = {"default_s": 30, "chat_stream_s": 30, "agent_run_s": 30}
# Starting agno from cold, seeding, the run, its follow-up and report, on a busy machine.
RUN_TIMEOUT_S = 420
pytestmark = [pytest.mark.system, pytest.mark.slow, pytest.mark.timeout(2 * RUN_TIMEOUT_S)]


def test_agno_uploads_lost_after_202_are_found_after_the_run(tmp_path, monkeypatch):
    try:
        AGNO.interpreter()
    except PlatformUnavailable as exc:
        pytest.skip(f"agno's environment cannot install here: {exc}")
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    scenario = write_scenario(
        tmp_path,
        [("sustain", 4.0, 6.0)],
        workloads={"ingest": 3, "trigger_fire": 1},
        thresholds=LOST_WORK_THRESHOLDS,
        timeouts=TIMEOUTS,
    )
    run_dir = tmp_path / "run"
    embed_stub_port, proxy_port = free_port(), free_port()
    with (
        running(
            ["-m", "stub", "--port", str(embed_stub_port)],
            "/health",
            embed_stub_port,
            tmp_path / "embed-stub.log",
        ) as embed_stub,
        running(
            [
                *PROXY,
                "--upstream",
                embed_stub.url,
                "--port",
                str(proxy_port),
                "--every",
                str(EVERY),
            ],
            "/health",
            proxy_port,
            tmp_path / "embed-proxy.log",
        ) as proxy,
    ):
        options = StackOptions(
            workdir=tmp_path / "stack",
            documents=3,
            stub_args=STUB_ARGS,
            platform="agno",
            target_env={"AGNO_EMBED_URL": proxy.url},
        )
        with local_stack(options) as stack:
            done = subprocess.run(
                [
                    *LOCUST,
                    "--headless",
                    *stack.locust_options(),
                    "--scenario",
                    str(scenario),
                    "--run-dir",
                    str(run_dir),
                    "--only-summary",
                ],
                cwd=ROOT,
                env=stack.locust_env(),
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT_S,
            )
            with urllib.request.urlopen(proxy.url + FAULTS_PATH, timeout=10) as answer:
                faulted = set(json.load(answer)["failed"])
            followups = read_table(run_dir, FOLLOWUPS)
            with AgnoClient(stack.target.url, {"Authorization": f"Bearer {PASSWORD}"}) as client:
                agno_says = {
                    f["ref"]: client.content_status(f["ref"])
                    for f in followups
                    if f["workload"] == "ingest"
                }
            refusing_port = free_port()
            refusing = ["-m", "tests.support.refusing_proxy", "--upstream", stack.target.url]
            refusing += ["--port", str(refusing_port), "--refuse", "/knowledge/content"]
            with running(refusing, "/health", refusing_port, tmp_path / "refusing.log") as rp:
                fixture = load_fixture(stack.fixture)
                proxied = dataclasses.replace(fixture, api_url=rp.url)
                with signed_setup_of(proxied, "", PASSWORD) as setup:
                    again = follow_up(
                        setup,
                        run_id="",
                        start_epoch=0.0,
                        accepted=[(int(f["index"]), f["workload"], f["ref"]) for f in followups],
                        grace_s=TIMEOUTS["default_s"],
                    )
    samples = read_samples(run_dir)
    assert samples and all(s["outcome"] == "ok" for s in samples), done.stderr[-2000:]
    # The sample is agno's answer: the upload's 202, the delivery's 200 "processing".
    assert {s["status"] for s in samples if s["workload"] == "ingest"} == {"202"}
    assert {s["status"] for s in samples if s["workload"] == "trigger_fire"} == {"200"}
    # One follow-up per accepted arrival, joined by index.
    assert sorted(int(f["index"]) for f in followups) == sorted(int(s["index"]) for s in samples)
    uploads = [f for f in followups if f["workload"] == "ingest"]
    lost = {int(f["index"]) for f in uploads if f["state"] == "failed after 202"}
    # Exactly the uploads the embedder failed, and agno itself says they failed.
    assert lost == faulted and lost, (lost, faulted)
    assert Counter(f["state"] for f in uploads) == {
        "failed after 202": len(faulted),
        "processed": len(uploads) - len(faulted),
    }
    for f in uploads:
        status, message = agno_says[f["ref"]]
        if f["state"] == "failed after 202":
            # In agno's words: the cause it gives, the same for every upload the embedder failed.
            assert status == "failed" and "Reason: " in message, (f, message)
            reason = message.split("Reason: ")[1].split(".")[0]
            assert "HTTP 500" in reason and f["detail"] == f"embedding failed: {reason}", f
        else:
            assert status == "completed", f
    deliveries = [f for f in followups if f["workload"] == "trigger_fire"]
    assert deliveries and {f["state"] for f in deliveries} == {"processed"}, deliveries
    # A read agno refuses costs only the work that needed it, and says why.
    refused = "agno did not answer the follow-up (GET /knowledge/content/<id>/status answered "
    refused += "HTTP 405: Method Not Allowed)"
    assert {(f.workload, f.state, f.detail) for f in again} == {
        ("ingest", "not verifiable", refused),
        ("trigger_fire", "processed", ""),
    }
    # The verdict counts the lost uploads against ingest, although every one was answered 202.
    summary = json.loads((run_dir / "summary.json").read_text())
    verdicts = {t["workload"]: t for t in summary["thresholds"]}
    assert verdicts["ingest"]["status"] == "FAIL"
    assert verdicts["ingest"]["measured"] == len(lost) / len(uploads)
    assert verdicts["trigger_fire"]["status"] == "pass"
    assert done.returncode != 0
    report = (run_dir / "report.md").read_text()
    assert "Work accepted for later" in report and "failed after accepting" in report
