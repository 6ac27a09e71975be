"""Users mode, sweeps and their report, against real platforms on 127.0.0.1.

Users mode must keep the kit's promise (one sample per request, the same
outcomes, the report saying which mode ran) locally and as master + worker,
with the six workload classes in their weights and each chat user in one
conversation. The sweeps must find a knee that is known in advance: the
reference platform holds a pooled database connection through every chat turn,
so with a pool of 2 and no overflow it serves 2 turns at once, each the stub's
500 ms: a concurrency sweep holds to 2 users, a rate sweep to 2 turns a second
(4/s would be its ceiling). The same platform keeps a known 6 MB per
conversation (tests/support/session_memory_target.py), so the memory fit has an answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.dataset import SAMPLES
from inputs.agent import MAX_TURNS
from inputs.fixture import DEFAULT_EMAIL, load_fixture
from inputs.workload import WORKLOADS
from reports.rundir import load_run
from reports.sweep.analysis import build as build_sweep
from reports.sweep.record import Fitted, Memory
from stack.generator_runs import (
    GENEROUS_LIMITS,
    MIX,
    PASSWORD,
    Platform,
    load_env,
    locust_args,
    read_run,
    read_samples,
    run_distributed,
    write_scenario,
)
from stack.processes import ROOT, free_port, running, stop, wait_ready
from stack.reference_servers import TARGET_HEALTH, stub_server
from tests.support.generator_env import run_local, written
from workloads.agenticos.client import AgenticOSClient
from workloads.agenticos.platform import PLATFORM as AGENTICOS

pytestmark = pytest.mark.system

# Users for the mode tests: the fewest at which Locust gives every workload of MIX a user
# (trigger_fire's 3% gets its first at 16), the count the no-user warning names as the fix.
USERS = 16
# Too few: Locust gives these users to api_read, chat_stream, agent_run and rag_query only.
FEW_USERS = 8
FEW_UNSERVED = {"ingest": 9, "trigger_fire": 16}
# The knee platform: a 500 ms answer (400 ms to the first token, 5 tokens 25 ms apart).
KNEE_STUB = ("--first-token-ms", "400", "--token-ms", "25", "--tokens", "5")
POOL = {"DB_POOL_SIZE": "2", "DB_MAX_OVERFLOW": "0"}
SESSION_MB = 6
SESSION_ENV = {"SESSION_MB": str(SESSION_MB), "SESSION_TTL_S": "4"}
# Between a lone turn (500 ms + the platform's share, also on a busy machine) and a turn
# that waits for another (>= 1000 ms): the threshold that makes the knee 2.
CHAT_P95_LIMIT_MS = 900
CHAT_ONLY = {"chat_stream": 1}
# Start, a few requests, stop and the report, through the web UI on a busy machine.
UI_WAIT_S = 60


def _conversations(plat: Platform) -> int:
    fixture = load_fixture(plat.fixture)
    with AgenticOSClient(plat.target.url) as client:
        client.sign_in(DEFAULT_EMAIL, PASSWORD)
        client.org_id = AGENTICOS.seeded_from(fixture).org_id
        return sum(1 for _ in client.list_all("/conversations"))


@pytest.fixture(scope="module")
def mode_scenario(tmp_path_factory):
    return write_scenario(tmp_path_factory.mktemp("scenario"), [("sustain", 2.0, 1.0)])


def _check_users_run(run_dir: Path, result: subprocess.CompletedProcess) -> list[dict]:
    assert result.returncode == 0, result.stderr[-3000:]
    record = read_run(run_dir)
    samples = read_samples(run_dir)
    assert record["mode"] == "users"
    assert record["stopped"] == "completed"
    # One sample per request: what the processes counted, what reached samples.csv, and
    # what Locust's own statistics saw (one entry per request, a first token none of its own).
    assert record["offered"] == len(samples) > 0
    assert len({int(s["index"]) for s in samples}) == len(samples)
    stats = (run_dir / "locust_stats.csv").read_text().splitlines()
    aggregated = next(line for line in stats if ",Aggregated," in line)
    assert int(aggregated.split(",")[2]) == len(samples)
    assert all(s["outcome"] in ("ok", "cancelled") for s in samples), Counter(
        (s["outcome"], s["detail"]) for s in samples
    )
    assert {s["phase"] for s in samples} == {f"users={USERS}"}
    # The six classes in their weights, as Locust spread the users.
    (step,) = record["users"]
    classes = step["classes"]
    assert sum(classes.values()) == USERS
    total = sum(MIX.values())
    for workload, share in MIX.items():
        name = _class_name(workload)
        assert abs(classes.get(name, 0) - USERS * share / total) <= 1, (name, classes)
    assert Counter(s["workload"] for s in samples).keys() == set(WORKLOADS)
    assert "get no user" not in result.stderr
    # The progress line counts what was recorded: a closed loop has nothing due to offer.
    assert f"phase users={USERS} (closed loop)  t " in result.stderr
    assert "offered 0," not in result.stderr
    _check_closed_loop_report(run_dir, result, USERS)
    return samples


def _class_name(workload: str) -> str:
    return "".join(p.title() for p in workload.split("_")) + "User"


def _check_closed_loop_report(run_dir: Path, result: subprocess.CompletedProcess, users: int):
    """The report states the closed loop, never a schedule or lateness, in every form."""
    markdown = (run_dir / "report.md").read_text()
    html = (run_dir / "report.html").read_text()
    assert "| mode | users (closed loop" in markdown
    for text in (markdown, html):
        assert "Scheduled at" not in text
        assert f"Closed loop: {users} users from 0 s to" in text
        assert "lateness does not apply" in text
    assert "| does not apply: closed loop" in markdown
    # The console's validity line (printed from summary.json) has no late count either.
    validity = next(line for line in result.stdout.splitlines() if "validity:" in line)
    assert "closed loop" in validity and "late " not in validity, validity


@pytest.mark.slow
def test_users_mode_local_one_sample_per_request_six_classes_one_conversation_each(plat, tmp_path):
    # A chat user starts its next conversation after `turns` turns (inputs/agent.py): the cap
    # is stated past what 6 s can reach, so each user's one conversation is exact.
    chat = {"share": MIX["chat_stream"], "conversations": {"turns": MAX_TURNS}}
    scenario = write_scenario(
        tmp_path, [("sustain", 2.0, 1.0)], workloads={**MIX, "chat_stream": chat}
    )
    before = _conversations(plat)
    run_dir = tmp_path / "users-local"
    result = run_local(plat, scenario, run_dir, "-u", str(USERS), "-r", str(USERS), "-t", "6")
    samples = _check_users_run(run_dir, result)
    chat_users = read_run(run_dir)["users"][0]["classes"]["ChatStreamUser"]
    turns = sum(1 for s in samples if s["workload"] == "chat_stream")
    assert chat_users < turns < MAX_TURNS
    # Each chat user kept its own conversation: one new conversation per user, not per turn.
    assert _conversations(plat) - before == chat_users


@pytest.mark.slow
def test_users_mode_too_few_users_names_the_missing_workloads_and_the_fix_before_load(
    plat, mode_scenario, tmp_path
):
    """-u 8 leaves ingest and trigger_fire without a user: one line says so and the count
    that fixes it before load starts, the run goes on, and the report lists them as not
    offered with that reason (the verdict: inconclusive, exit 2: never a pass, and not the
    platform's failure)."""
    run_dir = tmp_path / "users-few"
    args = ("-u", str(FEW_USERS), "-r", str(FEW_USERS), "-t", "4")
    result = run_local(plat, mode_scenario, run_dir, *args)
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.splitlines()
    warned = [n for n, line in enumerate(lines) if "get no user" in line]
    assert len(warned) == 1, result.stderr[-3000:]
    line = lines[warned[0]]
    assert f"users mode, -u {FEW_USERS}: ingest (5.0%), trigger_fire (3.0%) get no user" in line
    assert "ingest needs 9, trigger_fire needs 16 users" in line
    assert "the fix: -u 16 or more offers every workload" in line
    # Before load: the line comes before the run's start line (t = 0 is after that).
    started = next(n for n, line in enumerate(lines) if "load process(es)" in line)
    assert warned[0] < started
    # What Locust did agrees: the users went to the other four classes only.
    record = read_run(run_dir)
    (step,) = record["users"]
    assert step["unserved"] == FEW_UNSERVED
    assert step["classes"].keys() == {
        "ApiReadUser",
        "ChatStreamUser",
        "AgentRunUser",
        "RagQueryUser",
    }
    assert sum(step["classes"].values()) == FEW_USERS
    samples = read_samples(run_dir)
    assert record["offered"] == len(samples) > 0
    assert {s["workload"] for s in samples} == {"api_read", "chat_stream", "agent_run", "rag_query"}
    # The report: not offered in the mix with why and the fix; named in the phase; the
    # verdict's "inconclusive" rows carry the same reason; the console lists them too.
    markdown = (run_dir / "report.md").read_text()
    # The first screen's headline pools the step the users ran (no judged phase is in a
    # users run) and has no row for a workload no user ran.
    headline = next(r for r in markdown.splitlines() if r.startswith("| api_read | "))
    assert "(n=0)" not in headline and f"users={FEW_USERS}" in markdown, headline
    for name, needs in FEW_UNSERVED.items():
        row = next(r for r in markdown.splitlines() if r.startswith(f"| {name} | "))
        assert row.startswith(f"| {name} | not offered |"), row
        assert f"{FEW_USERS} users give this" in row and f"{needs} users give it one" in row
        assert f"{name} (needs {needs} users)" in markdown
        assert f"not offered: {name}: no user" in result.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["unserved"].keys() == FEW_UNSERVED.keys()
    unjudged = {
        t["workload"]: (t["status"], t["why"])
        for t in summary["thresholds"]
        if t["metric"] == "samples"
    }
    for name in FEW_UNSERVED:
        status, why = unjudged[name]
        assert status == "inconclusive" and why.startswith("no user"), unjudged
    assert summary["verdict"] == "inconclusive"
    _check_closed_loop_report(run_dir, result, FEW_USERS)


@pytest.mark.slow
def test_concurrency_sweep_names_the_steps_that_leave_workloads_without_a_user(
    plat, mode_scenario, tmp_path
):
    """A sweep's first steps have few users by design: one line before load names those
    steps and the count that gives every workload a user; each step's paragraph names
    the workloads it did not offer."""
    run_dir = tmp_path / "sweep-few"
    sweep = ("--sweep-users", "2,16", "--step-s", "3")
    result = run_local(plat, mode_scenario, run_dir, *sweep)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    (line,) = [line for line in result.stderr.splitlines() if "get no user" in line]
    assert "concurrency sweep, steps c=2: agent_run (15.0%), rag_query (12.0%), ingest" in line
    assert "the fix: steps of 16 users or more offer every workload" in line
    record = read_run(run_dir)
    assert [s["unserved"] for s in record["users"]] == [
        {"agent_run": 3, "rag_query": 5, "ingest": 9, "trigger_fire": 16},
        {},
    ]
    markdown = (run_dir / "report.md").read_text()
    assert "Not offered here, no user at this count: agent_run (needs 3 users)" in markdown
    # Every workload ran in the 16-user step, so none is "not offered" for the whole run.
    assert "| not offered |" not in markdown and "Scheduled at" not in markdown


@pytest.mark.slow
def test_users_mode_gives_no_user_to_a_workload_preflight_skipped(plat, mode_scenario, tmp_path):
    """With trigger_fire skipped at preflight, all 16 users go to the other five workloads
    (none idles as a trigger_fire user), and the report gives preflight's reason."""
    fixture = json.loads(plat.fixture.read_text())
    fixture["seeded"]["trigger_id"] = None
    no_trigger = tmp_path / "fixture.json"
    no_trigger.write_text(json.dumps(fixture))
    run_dir = tmp_path / "users-skipped"
    args = ("-u", str(USERS), "-r", str(USERS), "-t", "4")
    result = run_local(dataclasses.replace(plat, fixture=no_trigger), mode_scenario, run_dir, *args)
    assert result.returncode == 1, result.stderr[-3000:]
    assert "get no user" not in result.stderr
    (step,) = read_run(run_dir)["users"]
    assert step["unserved"] == {}
    assert "TriggerFireUser" not in step["classes"], step
    assert sum(step["classes"].values()) == USERS
    row = next(
        r for r in (run_dir / "report.md").read_text().splitlines() if "| trigger_fire |" in r
    )
    assert "| not offered |" in row and "make seed" in row and "no user" not in row, row


@pytest.mark.slow
def test_users_mode_master_and_one_worker(plat, mode_scenario, tmp_path):
    run_dir = tmp_path / "users-distributed"
    args = ("-u", str(USERS), "-r", str(USERS), "-t", "6")
    result = run_distributed(plat, mode_scenario, run_dir, 1, *args)
    _check_users_run(run_dir, result)
    assert read_run(run_dir)["workers"] == 1


def test_users_mode_stopped_early_records_every_request_once(plat, mode_scenario, tmp_path):
    """SIGINT mid-run: requests in flight are abandoned, not lost, and nothing comes after."""
    run_dir = tmp_path / "users-stopped"
    args = [sys.executable, *locust_args(plat, mode_scenario, run_dir, "--headless", "-u", "10")]
    proc = subprocess.Popen(
        [*args, "-r", "10"], cwd=ROOT, env=load_env(), stdout=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + UI_WAIT_S
        while time.monotonic() < deadline and written(run_dir) < 50:
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=UI_WAIT_S)
    finally:
        stop(proc)
    record, samples = read_run(run_dir), read_samples(run_dir)
    assert record["mode"] == "users"
    assert record["stopped"] == "interrupted" and record["ended_at"]
    assert record["offered"] == len(samples) >= 50
    assert max(float(s["finished_s"]) for s in samples) <= record["duration_s"] + 0.5


def test_users_mode_and_a_rate_are_refused_together(plat, mode_scenario, tmp_path):
    result = run_local(plat, mode_scenario, tmp_path / "both", "-u", "2", "--rate", "3")
    assert result.returncode == 2
    assert "-u/--users and --rate: a run is in one mode" in result.stderr
    assert not (tmp_path / "both" / SAMPLES.name).exists()


@pytest.mark.slow
def test_web_ui_users_field_runs_users_mode(plat, mode_scenario, tmp_path):
    """The start form's Users and spawn rate drive users mode (use_common_options)."""
    port = free_port()
    run_dir = tmp_path / "ui"
    ui = ["--web-host", "127.0.0.1", "--web-port", str(port), "-u", "2", "-r", "2"]
    args = [sys.executable, *locust_args(plat, mode_scenario, run_dir, *ui)]
    log = (tmp_path / "ui.log").open("w")
    proc = subprocess.Popen(args, cwd=ROOT, env=load_env(), stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base + "/", proc)
        page = urllib.request.urlopen(base + "/", timeout=10).read().decode()
        assert '"shape_use_common_options": true' in page
        form = {"user_count": "5", "spawn_rate": "5", "host": plat.target.url}
        urllib.request.urlopen(base + "/swarm", urllib.parse.urlencode(form).encode(), timeout=30)
        deadline = time.monotonic() + UI_WAIT_S
        stats = {}
        while time.monotonic() < deadline and stats.get("user_count") != 5:
            time.sleep(0.5)
            stats = json.loads(urllib.request.urlopen(base + "/stats/requests", timeout=10).read())
        assert stats.get("user_count") == 5, stats
        while time.monotonic() < deadline and written(run_dir) < 3:
            time.sleep(0.5)
        # The verdict tab counts users mode's requests (it has no schedule to count from).
        tab = ""
        while time.monotonic() < deadline and not re.search(r"offered [1-9]", tab):
            time.sleep(0.5)
            stats = json.loads(urllib.request.urlopen(base + "/stats/requests", timeout=10).read())
            rows = next((e["data"] for e in stats.get("extended_stats", [])), [])
            tab = rows[-1]["workload"] if rows else ""
        assert re.search(r"offered [1-9]", tab), tab
        # Its validity row states the closed loop, not a count of late dispatches.
        assert "closed loop" in rows[1]["workload"], rows
        assert "dispatches late" not in rows[1]["workload"], rows
        urllib.request.urlopen(base + "/stop", b"", timeout=30)
        while time.monotonic() < deadline and read_run(run_dir)["ended_at"] is None:
            time.sleep(0.5)
    finally:
        stop(proc)
        log.close()
    record = read_run(run_dir)
    assert record["mode"] == "users"
    assert record["users"][0]["users"] == 5
    # Exploring with 5 users warns (in the UI's log) and goes on; the fix is named.
    logged = (tmp_path / "ui.log").read_text()
    assert "users mode, -u 5: ingest (5.0%), trigger_fire (3.0%) get no user" in logged
    assert "-u 16 or more offers every workload" in logged
    assert record["offered"] == len(read_samples(run_dir)) > 0


@contextlib.contextmanager
def capped_platform(tmp: Path) -> Iterator[Platform]:
    """Stubs + the session-memory target with a pool of 2, seeded; stopped at the end."""
    tmp.mkdir(parents=True, exist_ok=True)
    with (
        stub_server(tmp, name="embed-stub") as embedder,
        stub_server(tmp, *KNEE_STUB, name="model-stub") as model,
    ):
        port = free_port()
        args = ["-m", "tests.support.session_memory_target", "--port", str(port)]
        args += ["--database-url", f"sqlite:///{tmp / 'target.sqlite3'}"]
        env = {
            **GENEROUS_LIMITS,
            **POOL,
            **SESSION_ENV,
            "TARGET_ADMIN_PASSWORD": PASSWORD,
            "EMBEDDING_URL": embedder.url,
        }
        with running(args, TARGET_HEALTH, port, tmp / "target.log", env=env) as target:
            fixture = tmp / "fixture.json"
            seed = [sys.executable, "-m", "workloads.seed", "--platform", "agenticos"]
            seed += ["--api-url", target.url]
            seed += ["--stub-url", model.url, "--documents", "2", "--fixture", str(fixture)]
            subprocess.run(seed, cwd=ROOT, env=load_env(), check=True, capture_output=True)
            yield Platform(tmp, model, target, fixture)


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    with capped_platform(tmp_path_factory.mktemp("capped")) as p:
        yield p


@pytest.fixture(scope="module")
def chat_scenario(tmp_path_factory):
    threshold = {"workload": "chat_stream", "metric": "p95_ms", "limit": CHAT_P95_LIMIT_MS}
    return write_scenario(
        tmp_path_factory.mktemp("chat"),
        [("sustain", 2.0, 1.0)],
        workloads=CHAT_ONLY,
        chat_cancel_share=0.0,
        thresholds=[threshold],
    )


@pytest.mark.slow
def test_concurrency_sweep_finds_the_pool_knee_and_the_memory_per_session(
    capped, chat_scenario, tmp_path
):
    run_dir = tmp_path / "sweep-users"
    sweep = ("--sweep-users", "1,2,4,8", "--step-s", "5", "--rest-s", "8")
    probes = ("--api-pid", str(capped.target.pid))
    run_local(capped, chat_scenario, run_dir, *sweep, *probes)
    record = read_run(run_dir)
    assert record["mode"] == "users"
    assert [p["name"] for p in record["phases"]] == ["c=1", "c=2", "c=4", "c=8", "rest"]
    assert record["offered"] == len(read_samples(run_dir))
    report = build_sweep(load_run(run_dir))
    by_name = {s.name: s for s in report.steps}
    assert [by_name[n].holds for n in ("c=1", "c=2", "c=4", "c=8")] == [
        True,
        True,
        False,
        False,
    ], [s.failed for s in report.steps]
    assert report.knee == 2
    # Two turns at once is the ceiling: c=4 completes no more than c=2 (within noise).
    assert by_name["c=4"].successes_per_s < 1.25 * by_name["c=2"].successes_per_s
    assert "after c=2" in report.plateau_text or "after c=4" in report.plateau_text
    # The stub said 400 ms to the first token; what the platform added is what is left.
    assert report.stub["first_token_ms"] == 400
    overhead = by_name["c=1"].overhead["chat_stream"]
    assert overhead.ttft_p50_ms is not None
    assert 0 <= overhead.ttft_p50_ms < CHAT_P95_LIMIT_MS - 500
    # 6 MB per conversation, one conversation per user, given back after the TTL.
    memory = report.memory
    assert isinstance(memory, Memory), memory
    fit, dirty = memory.rss, memory.private_dirty
    assert isinstance(fit, Fitted) and isinstance(dirty, Fitted), memory
    assert 0.75 * SESSION_MB <= fit.slope_mb <= 1.35 * SESSION_MB, memory
    assert fit.r2 > 0.9, memory
    assert dirty.slope_mb == pytest.approx(SESSION_MB, rel=0.35)
    assert memory.given_back.startswith("given back"), memory
    assert fit.points == 4


@pytest.mark.slow
def test_rate_sweep_finds_the_pool_knee(capped, chat_scenario, tmp_path):
    run_dir = tmp_path / "sweep-rates"
    run_local(capped, chat_scenario, run_dir, "--sweep-rates", "1,2,8", "--step-s", "5")
    record = read_run(run_dir)
    assert record["mode"] == "open arrival"
    assert record["offered"] == len(read_samples(run_dir)) == 5 * (1 + 2 + 8)
    report = build_sweep(load_run(run_dir))
    assert [s.holds for s in report.steps] == [True, True, False], [s.failed for s in report.steps]
    assert report.knee == 2
    assert report.load_unit == "arrivals/s"


@pytest.mark.slow
def test_rate_sweep_with_sweep_stop_ends_after_the_step_that_broke(capped, chat_scenario, tmp_path):
    run_dir = tmp_path / "sweep-stop"
    sweep = ("--sweep-rates", "1,2,8,16,32", "--step-s", "6", "--sweep-stop")
    run_local(capped, chat_scenario, run_dir, *sweep)
    record = read_run(run_dir)
    names = [p["name"] for p in record["phases"]]
    # 8/s broke; it is judged once its arrivals are in, during 16/s, which is cut short.
    assert names[:3] == ["rate=1/s", "rate=2/s", "rate=8/s"]
    assert "rate=32/s" not in names
    assert record["phases"][-1]["end_s"] < 5 * 6
    assert record["offered"] == len(read_samples(run_dir))
    report = build_sweep(load_run(run_dir))
    assert report.knee == 2
