"""The agent-server bench taken twice on one stack: by the kit, then by an independent client.

A sweep the kit publishes (bench/agent_servers.py) is a claim about a platform; it holds
only if a tool that shares none of the kit's code measures the same. For each target
(opencode, the reference platform on SQLite) this starts one stack with the seed's model
profile, runs the kit's users sweep (bench/sweep.py, bench/agent_turns.yaml), then
bench/closed_loop.py (plain asyncio and aiohttp) at the same steps on the same processes,
and writes ``cross-check.md``: per step each one's turn p50 and turns per second and how far
apart they are, against the issue's 10%.

The client runs second, on a platform that has already served the kit's sweep (its
sessions and rows are there); ``--client-first`` turns the order round, to tell a
difference the order makes from one the tools make.

    python -m bench.cross_check --out results/DATE-cross-check
    python -m bench.cross_check --users 1,4 --step-s 10 --out runs/check   # a short look
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from bench.agent_servers import SCENARIO, SEED_STUB, TARGETS, Target, database, rows
from bench.sweep import sweep_stack
from stack.local import StackOptions, child_env
from stack.platforms import local_stack
from stack.processes import ROOT

# The targets the issue asks to cross-check, and each one's name for the client.
CLIENT_PLATFORM = {"opencode": "opencode", "reference-sqlite": "reference"}
# How far apart the kit's figure and the client's may be (a share of the client's).
WITHIN = 0.10
USERS = "1,2,4,8,16,32,64,128,256"
REPORT = "cross-check.md"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.cross_check", description=__doc__)
    parser.add_argument("--out", required=True, type=Path, help="results directory to write")
    parser.add_argument("--users", default=USERS, help=f"the steps, a list (default {USERS})")
    parser.add_argument("--step-s", default="45", help="seconds per step (default 45)")
    parser.add_argument(
        "--targets",
        default=",".join(CLIENT_PLATFORM),
        help=f"which, in order (default {','.join(CLIENT_PLATFORM)})",
    )
    parser.add_argument(
        "--client-first",
        action="store_true",
        help="the client's sweep before the kit's (default after), to see what the order does",
    )
    args = parser.parse_args(argv)
    if "," not in args.users:
        parser.error(f"--users {args.users}: give the steps as a list, e.g. 1,2,4")
    unknown = set(args.targets.split(",")) - set(CLIENT_PLATFORM)
    if unknown:
        parser.error(f"--targets: {', '.join(sorted(unknown))}; use {', '.join(CLIENT_PLATFORM)}")
    if args.out.exists():
        parser.error(f"--out {args.out} exists; pass a new directory")
    return args


def check_one(target: Target, args: argparse.Namespace) -> list[str]:
    """Both sweeps of one target on one stack; its section of the report."""
    out = args.out / target.name
    with database(target) as url:
        options = StackOptions(
            workdir=out / "stack",
            database_url=url,
            stub_args=tuple(SEED_STUB.split()),
            platform=target.platform,
        )
        with local_stack(options) as stack:
            client = out / "client.json"
            command = [sys.executable, "-m", "bench.closed_loop"]
            command += ["--platform", CLIENT_PLATFORM[target.name], "--fixture", str(stack.fixture)]
            command += ["--email", stack.email, "--users", args.users, "--step-s", args.step_s]
            command += ["--out", str(client)]
            if args.client_first:
                subprocess.run(command, cwd=ROOT, env=child_env(), check=True)
            sweep = ["--sweep-users", args.users]
            _, kit = sweep_stack(stack, Path(SCENARIO), out / "kit", sweep, args.step_s, "5")
            if not args.client_first:
                subprocess.run(command, cwd=ROOT, env=child_env(), check=True)
    steps = json.loads(client.read_text())
    lines = [
        f"## {target.name}",
        "",
        "| users | kit p50 ms | client p50 ms | apart | kit turns/s | client turns/s | apart "
        "| kit n | client n | within 10% |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mine, theirs in zip(rows(kit), steps, strict=True):
        p50 = _apart(mine.p50_ms, theirs["p50_ms"])
        rate = _apart(mine.turns_per_s, theirs["turns_per_s"])
        held = p50 is not None and rate is not None and abs(p50) <= WITHIN and abs(rate) <= WITHIN
        lines.append(
            f"| {mine.c} | {_ms(mine.p50_ms)} | {_ms(theirs['p50_ms'])} | {_share(p50)} "
            f"| {mine.turns_per_s:.2f} | {theirs['turns_per_s']:.2f} | {_share(rate)} "
            f"| {mine.n} | {theirs['ok']} | {'yes' if held else '**no**'} |"
        )
    return [*lines, ""]


def _apart(kit: float | None, client: float | None) -> float | None:
    """The kit's figure against the client's, as a signed share of the client's."""
    if kit is None or not client:
        return None
    return (kit - client) / client


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True)
    chosen = [t for name in args.targets.split(",") for t in TARGETS if t.name == name]
    text = [
        "# The agent-server bench, by the kit and by an independent client, on one stack",
        "",
        f"Users {args.users}, {args.step_s} s a step; the seed's model profile "
        f"({SEED_STUB}); "
        + (
            "bench/closed_loop.py first, then the kit"
            if args.client_first
            else "the kit first, then bench/closed_loop.py"
        )
        + ". Apart: (kit - client) / client.",
        "",
    ]
    for target in chosen:
        text += check_one(target, args)
        (args.out / REPORT).write_text("\n".join(text))
    print("\n".join(text))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
