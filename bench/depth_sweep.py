"""The depth sweep of issue 28: the platform's own time per step as the loop deepens and as
conversations grow, one platform per call, against its local stack.

One stack (stub + platform, seeded) serves five short open-arrival runs at one rate:
chat turns and agent runs of 1, 2, 4 and 8 model calls (steps), then chat turns
whose conversations grow to 16 turns (most arrivals continue one). Each run is a
run directory with its own report; the sweep prints, and writes as ``table.md``,
the platform's time per step (the turn's latency minus the stub's time for its
calls, over the calls: reports/loop.py) per depth and workload, the turns off plan,
and chat latency by history length.

    python -m bench.depth_sweep --platform agenticos --out runs/depth/reference
    python -m bench.depth_sweep --platform agno --out runs/depth/agno --rate 4
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import yaml

from reports.loop import HISTORY, MODEL_CALLS, STEP_OVERHEAD_MS, off_plan
from reports.ranks import pick
from reports.rundir import load_run
from reports.stats import percentiles_of
from stack.local import StackOptions, child_env, headless_command
from stack.platforms import local_stack
from stack.processes import ROOT

DEPTHS = (1, 2, 4, 8)
# A short answer and a quick first token, so eight steps fit a turn in seconds; the stub's
# time is subtracted whatever it is.
STUB_ARGS = ("--first-token-ms", "200", "--token-ms", "10", "--tokens", "8")
# The conversations run: most chat turns continue one, up to 16 turns, the 4th earlier chat
# turn's (at 4 arrivals a second, 1 s apart: longer than a one-step turn).
CONVERSATIONS = {"continuing": 0.95, "turns": 16, "gap": 4}
RUN_TIMEOUT_S = 900


def scenario(steps: int, rate: float, seconds: float, conversations: bool) -> dict:
    """One sweep point's scenario: chat turns and agent runs of ``steps`` calls (chat alone,
    one step, growing conversations, when ``conversations``), no cancels, no thresholds."""
    chat: dict = {"share": 1, "steps": steps}
    if conversations:
        chat["conversations"] = CONVERSATIONS
    workloads = {
        "api_read": 0,
        "chat_stream": chat,
        "agent_run": {"share": 0 if conversations else 1, "steps": steps},
        "rag_query": 0,
        "ingest": 0,
        "trigger_fire": 0,
    }
    return {
        "name": f"depth-{'history' if conversations else steps}",
        "workloads": workloads,
        "chat_cancel_share": 0.0,
        "phases": [{"name": "sustain", "duration_s": seconds, "rate": rate, "reason": "the sweep"}],
        "timeouts": {"default_s": 90, "chat_stream_s": 90, "agent_run_s": 90},
        "lateness": {"late_after_ms": 250, "max_late_fraction": 0.05},
        "thresholds": [],
    }


def run_point(stack, out: Path, name: str, raw: dict) -> Path:
    """One headless run against the stack; its run directory."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    run_dir = out / name
    command = [*headless_command(stack, path, run_dir), "--topology", stack.topology]
    done = subprocess.run(command, cwd=ROOT, env=child_env(), timeout=RUN_TIMEOUT_S, check=False)
    if not (run_dir / "summary.json").exists():
        raise SystemExit(f"{name}: no report (exit {done.returncode})")
    return run_dir


def depth_rows(run_dir: Path, steps: int) -> list[str]:
    """Markdown rows: per workload, the time per step, turns on and off plan, latency."""
    rows = []
    with load_run(run_dir) as run:
        samples = run.samples
        strays = {o.workload: o for o in off_plan(samples, run.scenario)}
        for workload in ("chat_stream", "agent_run"):
            mine = f"workload = '{workload}'"
            turns, ok, on_plan = samples.one(
                f"SELECT count(*), count(*) FILTER (WHERE outcome = 'ok'), count(*) FILTER "
                f"(WHERE outcome = 'ok' AND {MODEL_CALLS} = {steps}) FROM samples WHERE {mine}"
            )
            if not turns:
                continue
            (overheads,) = pick(samples, STEP_OVERHEAD_MS, mine, ["0"])
            (latencies,) = pick(samples, "latency_ms", f"{mine} AND outcome = 'ok'", ["0"])
            overhead, latency = percentiles_of(overheads.get(0)), percentiles_of(latencies.get(0))
            stray = strays.get(workload)
            rows.append(
                f"| {steps} | {workload} | {turns} | {ok} | {on_plan} | "
                f"{f'{stray.turns} made {stray.calls}' if stray else '0'} | "
                f"{_ms(overhead.p50)} / {_ms(overhead.p95)} | "
                f"{_ms(latency.p50)} / {_ms(latency.p95)} |"
            )
    return rows


def history_rows(run_dir: Path) -> list[str]:
    """Markdown rows: chat latency and time per step by the history the platform sent."""
    turns = f"outcome = 'ok' AND {HISTORY} IS NOT NULL"
    label = f"CAST({HISTORY} AS BIGINT)"
    with load_run(run_dir) as run:
        (latency,) = pick(run.samples, "latency_ms", turns, [label])
        (overhead,) = pick(run.samples, STEP_OVERHEAD_MS, turns, [label])
    return [
        f"| {h} | {group.count} | {_ms(percentiles_of(group).p50)} / "
        f"{_ms(percentiles_of(group).p95)} | "
        f"{_ms(percentiles_of(overhead[h]).p50) if h in overhead else '–'} |"
        for h, group in sorted(latency.items())
    ]


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.1f}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.depth_sweep", description=__doc__)
    parser.add_argument("--platform", default="agenticos", help="registry name (default agenticos)")
    parser.add_argument("--out", required=True, type=Path, help="directory for the runs")
    parser.add_argument("--rate", type=float, default=4.0, help="arrivals per second (default 4)")
    parser.add_argument("--step-s", type=float, default=30.0, help="seconds per depth (30)")
    parser.add_argument("--history-s", type=float, default=90.0, help="conversations run (90)")
    args = parser.parse_args(argv)
    options = StackOptions(
        workdir=args.out / "stack", documents=3, stub_args=STUB_ARGS, platform=args.platform
    )
    depth, history = [], []
    with local_stack(options) as stack:
        for steps in DEPTHS:
            raw = scenario(steps, args.rate, args.step_s, conversations=False)
            depth += depth_rows(run_point(stack, args.out, f"steps-{steps}", raw), steps)
        raw = scenario(1, args.rate, args.history_s, conversations=True)
        history = history_rows(run_point(stack, args.out, "history", raw))
    table = "\n".join(
        [
            f"### {args.platform}",
            "",
            "| steps | workload | turns | ok | ok on plan | off plan | platform's time per "
            "step p50 / p95 ms | latency p50 / p95 ms |",
            "|---|---|---|---|---|---|---|---|",
            *depth,
            "",
            "| history (user turns) | chat turns | latency p50 / p95 ms | time per step p50 ms |",
            "|---|---|---|---|",
            *history,
            "",
        ]
    )
    (args.out / "table.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
