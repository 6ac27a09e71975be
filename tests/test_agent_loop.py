"""Each platform runs the agent's loop for real: a 3-step turn makes 3 model calls, counted at
the stub (issue 28).

A short headless run whose chat turns and agent runs each plan 3 steps (2 tool calls, then
the answer); the stub's per-call record, fetched into the run directory after the drain,
must hold exactly steps 1, 2, 3 for every arrival that succeeded, the first two asking for
the platform's tool and the last answering. The reference platform journals a chat turn's
tool calls with its answer, as AgenticOS does.
"""

from __future__ import annotations

import importlib
import sqlite3
import subprocess
from collections import defaultdict

import pytest

from engine.conversations import planned_depths
from engine.dataset import STUB_CALLS
from inputs.agent import Conversations
from stack.generator_runs import read_samples, read_table, run_distributed, write_scenario
from stack.local import PlatformUnavailable, StackOptions, child_env, headless_command
from stack.processes import ROOT
from tests.support.generator_env import run_local

pytestmark = [pytest.mark.system, pytest.mark.slow, pytest.mark.timeout(2 * 600)]

STEPS = 3
SHAPE = {"steps": STEPS}
MIX = {
    "api_read": 0,
    "chat_stream": {"share": 1, **SHAPE},
    "agent_run": {"share": 1, **SHAPE},
    "rag_query": 0,
    "ingest": 0,
    "trigger_fire": 0,
}
PHASES = [("ramp", 2.0, 2.0), ("sustain", 3.0, 4.0)]
LATENESS = {"late_after_ms": 250.0, "max_late_fraction": 0.05}
# A quick model: the loop's three calls take about 0.2 s.
QUICK_MODEL = ("--first-token-ms", "20", "--token-ms", "5", "--tokens", "8")
# Installing from cold, the stack's start and seed, the load and its report.
RUN_TIMEOUT_S = 600


def stub_calls(run_dir) -> dict[int, list[dict]]:
    """The stub's rows per arrival, in step order."""
    calls = defaultdict(list)
    for row in read_table(run_dir, STUB_CALLS):
        calls[int(row["arrival"])].append(row)
    return {k: sorted(v, key=lambda r: int(r["step"])) for k, v in calls.items()}


def check_loops(run_dir, workloads=("chat_stream", "agent_run")) -> list:
    """Every successful arrival of ``workloads`` made steps 1..STEPS at the stub, the last the
    answer; the samples they were."""
    planned = [s for s in read_samples(run_dir) if s["workload"] in workloads]
    assert len(planned) >= 8, planned
    assert all(s["outcome"] == "ok" for s in planned), planned
    calls = stub_calls(run_dir)
    for sample in planned:
        k = int(sample["index"])
        rows = calls.get(k, [])
        assert [(r["step"], r["reply"]) for r in rows] == [
            ("1", "tool_calls"),
            ("2", "tool_calls"),
            ("3", "answer"),
        ], (k, rows)
        assert {r["steps"] for r in rows} == {str(STEPS)}
    return planned


def test_the_reference_platform_runs_each_turn_and_run_for_three_steps(plat, tmp_path):
    scenario = write_scenario(
        tmp_path, PHASES, workloads=MIX, chat_cancel_share=0.0, lateness=LATENESS
    )
    run_dir = tmp_path / "run"
    result = run_local(plat, scenario, run_dir)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    planned = check_loops(run_dir)
    chats = sum(1 for s in planned if s["workload"] == "chat_stream")
    with sqlite3.connect(plat.tmp / "target.sqlite3") as db:
        (rows,) = db.execute(
            "SELECT count(*) FROM tool_calls WHERE tool_name = 'run_python' AND result = "
            "'result: 2'"
        ).fetchone()
    # A chat turn journals its 2 calls with its answer; an API run journals none.
    assert rows >= 2 * chats


@pytest.mark.parametrize("name", ["agno", "langgraph"])
def test_agno_and_langgraph_run_each_turn_and_run_for_three_steps(name, tmp_path):
    """agno's function tool and LangGraph's tool node: the same 3 steps at the stub."""
    stack_module = importlib.import_module(f"stack.{name}")
    try:
        getattr(stack_module, name.upper()).interpreter()
    except PlatformUnavailable as exc:
        pytest.skip(f"{name}'s environment cannot install here: {exc}")
    scenario = write_scenario(
        tmp_path, PHASES, workloads=MIX, chat_cancel_share=0.0, lateness=LATENESS
    )
    options = StackOptions(
        workdir=tmp_path / "stack", documents=3, stub_args=QUICK_MODEL, platform=name
    )
    run_dir = tmp_path / "run"
    with stack_module.start_stack(options) as stack:
        result = subprocess.run(
            headless_command(stack, scenario, run_dir),
            cwd=ROOT,
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
    assert result.returncode in (0, 1), result.stderr[-3000:]
    check_loops(run_dir)


CONVERSATIONS = {"continuing": 0.7, "turns": 4, "gap": 3}
CHAT_ONLY = {**dict.fromkeys(MIX, 0), "chat_stream": {"share": 1, "conversations": CONVERSATIONS}}


@pytest.mark.parametrize("workers", [1, 3], ids=["one-process", "three-processes"])
def test_continued_conversations_reach_the_platform_alike_on_one_and_three_processes(
    plat, tmp_path, workers
):
    """Which turns continue which is planned from the index alone, so 1 and 3 load processes
    offer the same histories; the reference platform replays each conversation's earlier
    turns, so the stub sees as many user turns as were planned."""
    scenario = write_scenario(
        tmp_path,
        [("sustain", 8.0, 3.0)],
        workloads=CHAT_ONLY,
        chat_cancel_share=0.0,
        lateness=LATENESS,
    )
    run_dir = tmp_path / "run"
    if workers == 1:
        result = run_local(plat, scenario, run_dir)
    else:
        result = run_distributed(plat, scenario, run_dir, workers)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    samples = sorted(read_samples(run_dir), key=lambda s: int(s["index"]))
    assert all(s["outcome"] == "ok" for s in samples), samples
    chat = [int(s["index"]) for s in samples]
    planned = planned_depths(chat, Conversations(**CONVERSATIONS))
    assert max(planned) == CONVERSATIONS["turns"]
    seen = {k: int(rows[0]["turns"]) for k, rows in stub_calls(run_dir).items()}
    # A turn sent after the one it continues had ended carries that one's history and itself
    # (a turn sent while it was still in flight may start afresh: the kit never waits).
    gap, followed = CONVERSATIONS["gap"], 0
    for n, (k, depth) in enumerate(zip(chat, planned, strict=True)):
        if depth == 1:
            assert seen[k] == 1, k
            continue
        before = samples[n - gap]
        if float(before["finished_s"]) < float(samples[n]["sent_s"]):
            assert seen[k] == seen[chat[n - gap]] + 1, (k, depth)
            followed += 1
    assert followed >= sum(d > 1 for d in planned) // 2, followed
    assert 0.4 < sum(d > 1 for d in planned) / len(planned) < 0.9
