"""The repository's scenario, short, against a real A2A server reached from its card alone.

The demo's stack (stub + platforms/a2a, a2a-sdk 1.3.0, both protocol lines, a bearer key
it declares in its card) seeded by ``loadkit seed --platform a2a`` from the URL, and one
short run on one load process and one on three: every offered arrival leaves one sample,
the workloads A2A does not offer are left out with their reasons while the others keep
the scenario's rates, chat turns stream and cancel through CancelTask (confirmed canceled,
the model stream abandoned at the stub), agent runs make their three model calls. Then the
same kit against a 0.3-only and a 1.0-only server, each reached from its card. The server
runs from its own environment (``make a2a-venv``; .ci/run builds it); the test skips,
saying why, only when that cannot install.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from engine.dataset import STUB_CALLS
from inputs.scenario import load_scenario
from stack.a2a import A2A, start_stack
from stack.demo import locust_command
from stack.generator_runs import ran_scenario, read_samples, read_table
from stack.local import LOCUST, PlatformUnavailable, StackOptions, child_env, password
from stack.processes import ROOT, free_port, running, stop

OFFERED = {"api_read", "chat_stream", "agent_run"}
NOT_OFFERED = {"rag_query", "ingest", "trigger_fire"}
# The repository's scenario at 4% of its length: about 14 s of load.
SCALE = 0.04
# A quick model whose 8 tokens take 0.2 s, so a cancel after the first lands mid-answer.
STUB_ARGS = ("--first-token-ms", "20", "--token-ms", "25", "--tokens", "8")
# The load, the drain and the reports, on a busy 2-core machine.
RUN_TIMEOUT_S = 600
pytestmark = [pytest.mark.system, pytest.mark.slow, pytest.mark.timeout(2 * RUN_TIMEOUT_S)]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    try:
        A2A.interpreter()
    except PlatformUnavailable as exc:
        pytest.skip(f"the A2A server's environment cannot install here: {exc}")
    options = StackOptions(workdir=tmp_path_factory.mktemp("a2a") / "stack", stub_args=STUB_ARGS)
    with start_stack(options) as started:
        yield started


def _samples(run_dir: Path) -> list[dict]:
    return read_samples(run_dir)


def _calls(run_dir: Path) -> list[dict]:
    return read_table(run_dir, STUB_CALLS)


@pytest.fixture(scope="module")
def run(stack, tmp_path_factory):
    """One finished run on one load process."""
    run_dir = tmp_path_factory.mktemp("run") / "run"
    result = subprocess.run(
        [*locust_command(stack, run_dir, SCALE), "--only-summary"],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert (run_dir / "summary.json").exists(), f"no report\n{result.stderr[-2000:]}"
    return run_dir


def test_the_seed_found_everything_in_the_card(stack):
    seeded = json.loads(stack.fixture.read_text())
    assert seeded["platform"] == "a2a"
    own = seeded["seeded"]
    assert (own["rpc_path"], own["binding"], own["version"]) == ("/", "jsonrpc", "1.0")
    assert own["streaming"] is True and own["key_header"] == "Authorization"
    assert own["list_tasks"] is True
    assert password() not in stack.fixture.read_text()


def test_every_offered_arrival_is_one_sample_and_each_workload_ends_as_a2a_says(run):
    record = json.loads((run / "run.json").read_text())
    samples = _samples(run)
    assert len(samples) == len({s["index"] for s in samples}) == record["offered"]
    assert {s["workload"] for s in samples} == OFFERED
    outcomes = Counter((s["workload"], s["outcome"]) for s in samples)
    failed = {k: n for k, n in outcomes.items() if k[1] not in ("ok", "cancelled")}
    assert not failed, Counter(
        (s["workload"], s["detail"]) for s in samples if s["outcome"] not in ("ok", "cancelled")
    )
    assert outcomes["chat_stream", "cancelled"] > 0
    chats = [s for s in samples if s["workload"] == "chat_stream" and s["outcome"] == "ok"]
    assert chats and all(int(s["tokens"]) == 8 and s["ttft_ms"] for s in chats)


def test_what_a2a_does_not_offer_is_left_out_and_the_rest_keep_their_rates(run):
    ran = ran_scenario(run)
    written = load_scenario()
    total = sum(w.share for w in written.workloads)
    kept = sum(w.share for w in written.workloads if w.name in OFFERED) / total
    for phase, stated in zip(ran.phases, written.phases, strict=True):
        assert phase.rate == pytest.approx(stated.rate * kept)
    offered = {w.name: w for w in ran.workloads}
    for name in NOT_OFFERED:
        assert offered[name].share == 0
        assert offered[name].why.startswith("Not offered by a2a: A2A has no")
    report = (run / "report.md").read_text()
    assert "Not offered by a2a: A2A has no document upload" in report


def _model_outlived_first_token(sample: dict, call: dict) -> bool:
    """Whether the model was still streaming when the client saw the turn's first token, the
    moment the kit sends CancelTask: the stub's clock is the epoch, the sample's the run's,
    and the call's run key names the epoch the run's clock started at."""
    start = float(call["run"].rsplit("@", 1)[1])
    first_token = start + float(sample["sent_s"]) + float(sample["ttft_ms"]) / 1000
    return float(call["started_at"]) + float(call["total_ms"]) / 1000 > first_token


def test_the_loop_and_the_cancel_are_seen_at_the_stub(run):
    """Each agent run made the scenario's three model calls (two tool calls, then the answer,
    the stub calling whichever tool the agent offers); a cancelled turn whose model was still
    streaming when the cancel went had its model stream abandoned, not run to its end. A
    server behind its model (on a loaded machine, a2a-sdk relayed some first tokens after
    the stub had sent the last) leaves a cancel nothing to stop."""
    samples = {int(s["index"]): s for s in _samples(run)}
    calls: dict[int, list[dict]] = {}
    for call in _calls(run):
        calls.setdefault(int(call["arrival"]), []).append(call)
    runs = [k for k, s in samples.items() if s["workload"] == "agent_run"]
    assert runs and all(len(calls[k]) == 3 for k in runs)
    assert all(
        [c["reply"] for c in calls[k]] == ["tool_calls", "tool_calls", "answer"] for k in runs
    )
    cancelled = [k for k, s in samples.items() if s["outcome"] == "cancelled"]
    stoppable = [k for k in cancelled if _model_outlived_first_token(samples[k], calls[k][-1])]
    assert stoppable and all(calls[k][-1]["outcome"] == "abandoned" for k in stoppable)


def test_three_load_processes_offer_the_same_plan_one_sample_each(stack, tmp_path):
    """A master and three workers: every arrival of the plan once, on whichever process."""
    run_dir = tmp_path / "run"
    port = free_port()
    master = [*LOCUST, "--headless", *stack.locust_options(), "--scale", str(SCALE)]
    master += ["--run-dir", str(run_dir), "--only-summary", "--master", "--expect-workers", "3"]
    master += ["--master-bind-host", "127.0.0.1", "--master-bind-port", str(port)]
    worker = [sys.executable, "-m", "locust", "-f", "locustfile.py", "--worker"]
    worker += ["--master-host", "127.0.0.1", "--master-port", str(port)]
    procs = [
        subprocess.Popen(
            master,
            cwd=ROOT,
            env=child_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
    ]
    try:
        procs += [
            subprocess.Popen(
                worker,
                cwd=ROOT,
                env=child_env(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(3)
        ]
        _, err = procs[0].communicate(timeout=RUN_TIMEOUT_S)
    finally:
        for proc in procs:
            stop(proc)
    assert (run_dir / "summary.json").exists(), err[-2000:]
    record = json.loads((run_dir / "run.json").read_text())
    samples = _samples(run_dir)
    assert len(samples) == len({s["index"] for s in samples}) == record["offered"] > 0
    assert {int(s["worker"]) for s in samples} == {0, 1, 2}
    assert not [s for s in samples if s["outcome"] not in ("ok", "cancelled")]


@pytest.mark.parametrize("protocol", ["0.3", "1.0"])
def test_a_server_of_one_protocol_line_is_reached_from_its_card(stack, tmp_path, protocol):
    """A server that answers only 0.3's method names (or only 1.0's), with no key: the card
    says which, and every offered workload answers (0.3 has no ListTasks: a list read asks
    GetTask of the task the seed made)."""
    port = free_port()
    env = {**child_env(), "A2A_STUB_URL": stack.stub.url}
    env.pop("A2A_API_KEY", None)
    args = ["-m", "platforms.a2a", "--port", str(port), "--protocol", protocol]
    with running(args, "/health", port, tmp_path / "a2a.log", env, python=A2A.interpreter()):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "loadkit",
                "check-platform",
                "a2a",
                "--api-url",
                f"http://127.0.0.1:{port}",
                "--stub-url",
                stack.stub.url,
            ],
            cwd=ROOT,
            env={k: v for k, v in child_env().items() if k != "LOAD_PASSWORD"},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"A2A {protocol} jsonrpc at / (streaming; no key; reads " in done.stdout
    assert ("reads GetTask" if protocol == "0.3" else "reads ListTasks") in done.stdout
    for workload in OFFERED:
        assert f"  {workload}" in done.stdout and f"{workload}" + " " in done.stdout
    assert done.stdout.count(" ok in ") == len(OFFERED)
