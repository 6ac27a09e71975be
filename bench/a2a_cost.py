"""What A2A costs: the same agent on the same server, reached natively and through A2A.

agno's AgentOS and LangGraph's Agent Server each serve one agent two ways: their own API
and an A2A interface (issue 42). This starts each server's local stack once (the stack
``make demo PLATFORM=P`` starts, with the agent-server seed's model: 2000 ms to the first
token, 8 tokens at 200/s), seeds it natively and through its A2A card, and runs the same
load down both paths, one after the other, against the same process:

- one rate (bench/a2a_cost.yaml: 4 arrivals a second for 60 s, half chat turns streamed,
  half agent runs of three model calls): what each path adds over the stub's own time per
  turn and per step of the agent's loop, and time to first event against first token;
- a users sweep (bench/agent_turns.yaml, c = 1..64 whole turns): the overhead at c = 1
  and the ceiling, turns a second at best.

Then writes ``cost.md`` from the run directories (``--table-only`` writes it again from
committed ones). Native first, then A2A, on one server: the A2A run meets the process the
native run warmed, which is how a deployment serving both meets them.

    python -m bench.a2a_cost --out results/DATE-a2a-cost
    python -m bench.a2a_cost --users 1,4 --step-s 10 --rate-s 15 --out runs/check  # short
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from bench.agent_servers import SEED_STUB, STUB_TURN_MS
from bench.sweep import sweep_stack
from engine import nofollow
from reports.rundir import load_run
from reports.summary import WorkloadSlice, read_summary
from reports.sweep.analysis import build
from reports.sweep.record import Step
from stack.local import (
    LocalStack,
    StackOptions,
    child_env,
    headless_command,
    password,
    seed,
)
from stack.platforms import local_stack
from stack.processes import ROOT

RATE_SCENARIO = ROOT / "bench" / "a2a_cost.yaml"
SWEEP_SCENARIO = ROOT / "bench" / "agent_turns.yaml"
USERS = "1,2,4,8,16,32,64"
PATHS = ("native", "a2a")
# The stub's own time to the first token, from the seed's model profile.
FIRST_TOKEN_MS = float(shlex.split(SEED_STUB)[shlex.split(SEED_STUB).index("--first-token-ms") + 1])


@dataclass(frozen=True)
class Server:
    """One server that serves its agent natively and over A2A: how its A2A card names the
    agent, and the header its key travels in there."""

    platform: str
    key_header: str | None

    def agent(self, stack: LocalStack) -> str:
        """The agent's name on the server's A2A routes."""
        if self.platform == "agno":
            return "loadkit-agent"
        return _langgraph_assistant(stack)


SERVERS = (Server("agno", None), Server("langgraph", "x-api-key"))


def _langgraph_assistant(stack: LocalStack) -> str:
    """The graph's system assistant, which langgraph-api's A2A names the agent by (its id,
    not the graph's name)."""
    request = urllib.request.Request(
        stack.target.url + "/assistants/search",
        data=json.dumps({"graph_id": "loadkit-agent"}).encode(),
        headers={"x-api-key": password(), "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return str(json.loads(answer.read())[0]["assistant_id"])


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.a2a_cost", description=__doc__)
    parser.add_argument("--out", required=True, type=Path, help="results directory to write")
    parser.add_argument("--users", default=USERS, help=f"the sweep's steps (default {USERS})")
    parser.add_argument("--step-s", default="20", help="seconds per sweep step (default 20)")
    parser.add_argument("--rest-s", default="10", help="idle seconds after the sweep")
    parser.add_argument("--rate-s", type=int, default=60, help="seconds of the one-rate run")
    parser.add_argument(
        "--servers",
        default=",".join(s.platform for s in SERVERS),
        help="which, in order (default agno,langgraph)",
    )
    parser.add_argument(
        "--table-only", action="store_true", help="only write cost.md from --out's runs"
    )
    args = parser.parse_args(argv)
    known = {s.platform for s in SERVERS}
    if unknown := set(args.servers.split(",")) - known:
        parser.error(f"--servers: {', '.join(sorted(unknown))}; use some of {', '.join(known)}")
    return args


def a2a_stack(stack: LocalStack, server: Server, fixture: Path) -> LocalStack:
    """The started stack seeded again through its A2A card: same process, A2A fixture."""
    extra = ["--agent", server.agent(stack)]
    extra += ["--key-header", server.key_header] if server.key_header else []
    seed(stack.target.url, stack.stub.url, 1, fixture, child_env(), "a2a", tuple(extra))
    return replace(stack, fixture=fixture)


def rate_scenario(work: Path, seconds: int) -> Path:
    """bench/a2a_cost.yaml with its phase ``seconds`` long (a short check runs less)."""
    raw = yaml.safe_load(RATE_SCENARIO.read_text())
    raw["phases"][0]["duration_s"] = seconds
    path = work / "a2a-cost.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def measure(server: Server, args: argparse.Namespace) -> None:
    """Both paths of one server, each its one-rate run and its sweep, into out/<platform>/."""
    base = args.out / server.platform
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        options = StackOptions(
            workdir=scratch / "stack",
            stub_args=tuple(shlex.split(SEED_STUB)),
            platform=server.platform,
        )
        with local_stack(options) as native:
            measure_paths(server, native, scratch, base, args)


def measure_paths(
    server: Server, native: LocalStack, scratch: Path, base: Path, args: argparse.Namespace
) -> None:
    """The one-rate run and the sweep down each path of a started, natively seeded stack."""
    scenario = rate_scenario(scratch, args.rate_s)
    stacks = {"native": native, "a2a": a2a_stack(native, server, scratch / "a2a.json")}
    for path, stack in stacks.items():
        print(f"bench.a2a_cost: {server.platform} {path}", flush=True)
        rate = headless_command(stack, scenario, base / path / "rate")
        subprocess.run([*rate, "--topology", stack.topology], cwd=ROOT, env=child_env())
        sweep = ["--sweep-users", args.users]
        sweep_stack(stack, SWEEP_SCENARIO, base / path / "sweep", sweep, args.step_s, args.rest_s)


def _ms(value: float | None, less: float = 0.0, sign: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value - less:+,.0f} ms" if sign else f"{value - less:,.0f} ms"


def _sustain(run_dir: Path, workload: str) -> WorkloadSlice:
    return read_summary(run_dir).phases["sustain"].by_offer.workloads[workload]


def rate_row(name: str, path: str, run_dir: Path) -> str:
    """One line of the one-rate table: chat turns' first event, first token and turn, and the
    agent runs' turn and per-step overhead, with the counts they rest on."""
    chat, run = _sustain(run_dir, "chat_stream"), _sustain(run_dir, "agent_run")
    return (
        f"| {name} | {path} | {chat.ok} of {chat.calls} | {_ms(chat.first_event_ms.p50)} | "
        f"{_ms(chat.ttft_ms.p50)} ({_ms(chat.ttft_ms.p50, FIRST_TOKEN_MS, sign=True)}) | "
        f"{_ms(chat.latency_ms.p50)} ({_ms(chat.latency_ms.p50, STUB_TURN_MS, sign=True)}) | "
        f"{run.ok} of {run.calls} | {_ms(run.latency_ms.p50)} | "
        f"{_ms(run.step_overhead_ms.p50, sign=True)} (n {run.step_overhead_ms.count}) |"
    )


def _turns(step: Step) -> tuple[float | None, float | None]:
    latency = step.latency.get("agent_run")
    overhead = step.overhead.get("agent_run")
    return (
        latency.p50_ms if latency else None,
        overhead.turn_p50_ms if overhead else None,
    )


def sweep_row(name: str, path: str, run_dir: Path) -> str:
    """One line of the sweep table: the turn and its overhead at the first and last step,
    and the ceiling: the most successful turns a second, and where."""
    steps = build(load_run(run_dir)).steps
    first, last = steps[0], steps[-1]
    top = max(steps, key=lambda s: s.successes_per_s)
    p50_first, over_first = _turns(first)
    p50_last, over_last = _turns(last)
    errors = max((s.error_rate or 0.0) for s in steps)
    # The most turns a second is a ceiling only where a later step did not go on to more.
    ceiling = "not reached: the last step's is the most" if top is last else "reached"
    return (
        f"| {name} | {path} | {_ms(p50_first)} ({_ms(over_first, sign=True)}) | "
        f"{_ms(p50_last)} ({_ms(over_last, sign=True)}) at {last.name} | "
        f"**{top.successes_per_s:.1f}** at {top.name} ({ceiling}) | {errors:.1%} |"
    )


def step_rows(name: str, path: str, run_dir: Path) -> list[str]:
    """Every step of one path's sweep: the turns it rests on, p50 and p95, turns a second."""
    lines = []
    for step in build(load_run(run_dir)).steps:
        latency = step.latency.get("agent_run")
        lines.append(
            f"| {name} | {path} | {step.name} | {latency.n if latency else 0} | "
            f"{_ms(latency.p50_ms if latency else None)} | "
            f"{_ms(latency.p95_ms if latency else None)} | {step.successes_per_s:.1f} |"
        )
    return lines


def cost_table(out: Path, names: list[str]) -> str:
    """cost.md: the one-rate table and the sweep table, each path of each server a line."""
    ran = [(n, p) for n in names for p in PATHS if (out / n / p / "rate" / "summary.json").exists()]
    swept = [(n, p) for n in names for p in PATHS if (out / n / p / "sweep" / "run.json").exists()]
    return "\n".join(
        [
            "# What A2A costs: one agent, reached natively and through A2A",
            "",
            f"The stub: {SEED_STUB} (a turn of {STUB_TURN_MS:,} ms at the stub). In brackets: "
            "what the path added over the stub's own time (p50 less the stub's first token, or "
            "its whole turn); per step: the platform's own time per model call of an agent run "
            "(its latency less the stub's time for its calls, over those calls).",
            "",
            "## One rate: 4 arrivals a second in sustain, p50",
            "",
            "| server | path | chat turns ok | first event | first token | chat turn | "
            "agent runs ok | agent run (3 steps) | per step |",
            "|---|---|---|---|---|---|---|---|---|",
            *(rate_row(n, p, out / n / p / "rate") for n, p in ran),
            "",
            "## Users sweep: whole turns, one session a user, p50",
            "",
            "| server | path | turn at the first step | turn at the last step | most turns/s "
            "| errors, worst step |",
            "|---|---|---|---|---|---|",
            *(sweep_row(n, p, out / n / p / "sweep") for n, p in swept),
            "",
            "## Every step of the sweeps",
            "",
            "| server | path | step | turns | p50 | p95 | turns/s |",
            "|---|---|---|---|---|---|---|",
            *(line for n, p in swept for line in step_rows(n, p, out / n / p / "sweep")),
            "",
        ]
    )


def main(argv: list[str]) -> int:
    """Measure each server's two paths, then write cost.md; 0 once every run left a report."""
    args = parse_args(argv)
    names = args.servers.split(",")
    if not args.table_only:
        if args.out.exists():
            print(f"bench.a2a_cost: --out {args.out} exists; pass a new directory", file=sys.stderr)
            return 2
        for server in (s for s in SERVERS if s.platform in names):
            measure(server, args)
    text = cost_table(args.out, names)
    nofollow.replace(args.out / "cost.md", text)
    print(text)
    wanted = [args.out / n / p / kind for n in names for p in PATHS for kind in ("rate", "sweep")]
    missing = [str(d) for d in wanted if not (d / "summary.json").exists()]
    if missing:
        print(f"bench.a2a_cost: no report in {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
