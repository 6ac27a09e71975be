"""The agent-server seed's bench, run by the kit against every platform it ships, side by side.

The seed (../shared/seeds/agent-server-performance-load-memory.txt, section 34.6)
compares an agent server with opencode on one bench: a mock model at 2000 ms to
the first token, 8 tokens at 200/s (a turn of 2.04 s), one session per worker,
concurrency 1..256 and beyond. This runs that bench with the kit: a users-mode
concurrency sweep (bench/sweep.py, one user = one session looping on a whole turn,
bench/agent_turns.yaml) against opencode, the reference platform on SQLite and on
PostgreSQL 15 (a throwaway cluster, stack/postgres.py), agno and LangGraph,
one after another, each with the API process's RSS and Private_Dirty probed at
every step and through an idle rest at the end; then writes ``comparison.md``: per
platform and concurrency the turn's p50 and p95, turns a second, errors and 429s,
memory, and the seed's own claims as rows (overhead per turn at c=1, whether
latency stays flat, where errors start, memory per session and after the idle
minute), beside the seed's published figures.

    flock /work/helpers/heavy.lock python -m bench.agent_servers --out results/DATE-agent-servers
    python -m bench.agent_servers --users 1,4 --step-s 10 --rest-s 5 --out runs/check  # short
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench import sweep as bench_sweep
from engine import nofollow
from engine.dataset import PROBES, read_table

# The seed's model profile: 2000 ms to the first token, 8 tokens 5 ms apart (200/s).
SEED_STUB = "--first-token-ms 2000 --token-ms 5 --tokens 8"
# The stub's own time for one such turn: the first token, then 7 more 5 ms apart.
STUB_TURN_MS = 2000 + 7 * 5
# The seed's concurrency sweep, and one step past it where the machine copes.
SEED_USERS = "1,2,4,8,16,32,64,128,256,512"
SCENARIO = "bench/agent_turns.yaml"
# An error share above this is where "errors start" (one failed turn in a hundred).
ERRORS_START = 0.01
MB = 1024 * 1024


@dataclass(frozen=True)
class Target:
    """One column of the comparison: a platform's stack, and its database where it has one."""

    name: str
    platform: str
    postgres: bool = False


TARGETS = (
    Target("opencode", "opencode"),
    Target("reference-sqlite", "agenticos"),
    Target("reference-postgres", "agenticos", postgres=True),
    Target("agno", "agno"),
    Target("langgraph", "langgraph"),
)

# The seed's published rows (34.3, 34.6): the agent server with its DuckDB database, on 18
# logical CPUs, 12-15 s a point; "-" where it gives no figure.
SEED_ROWS = (
    ("overhead per turn at c=1", "~95 ms", "~190 ms"),
    ("turn p50 at c=128", "flat (2,135-2,215 ms from c=1 to 1000, bare core)", "6.6 s"),
    ("turn p50 at c=256", "flat", "11.9 s"),
    ("turns/s at c=128", "68", "21"),
    ("turns/s at high c", "451 (c ~1000)", "<40"),
    ("errors start", "none up to 1000 (429s only with the admission gate on)", "256; DoS at 512"),
    (
        "memory",
        "~100 MB DuckDB base + 0.19 MB per session; TTL cleaner gives it back",
        "550-680 MB with hundreds of sessions, given back slowly",
    ),
)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.agent_servers", description=__doc__)
    parser.add_argument("--out", required=True, type=Path, help="results directory to write")
    parser.add_argument("--users", default=SEED_USERS, help=f"the steps (default {SEED_USERS})")
    parser.add_argument("--step-s", default="45", help="seconds per step (default 45)")
    parser.add_argument("--rest-s", default="60", help="idle seconds at the end (default 60)")
    parser.add_argument(
        "--targets",
        default=",".join(t.name for t in TARGETS),
        help="which, in order (default all: " + ", ".join(t.name for t in TARGETS) + ")",
    )
    args = parser.parse_args(argv)
    known = {t.name for t in TARGETS}
    if unknown := set(args.targets.split(",")) - known:
        parser.error(f"--targets: {', '.join(sorted(unknown))}; use some of {', '.join(known)}")
    return args


@contextlib.contextmanager
def database(target: Target) -> Iterator[str | None]:
    """A throwaway PostgreSQL 15 cluster's URL for a target that wants one, else None."""
    if not target.postgres:
        yield None
        return
    from stack.postgres import throwaway_postgres

    with tempfile.TemporaryDirectory() as scratch, throwaway_postgres(Path(scratch)) as url:
        yield url


def sweep_one(target: Target, args: argparse.Namespace) -> int:
    """Run one target's sweep into ``out/<name>``; the sweep's exit code."""
    with database(target) as url:
        argv = [
            "--platform",
            target.platform,
            "--sweep-users",
            args.users,
            "--step-s",
            args.step_s,
            "--rest-s",
            args.rest_s,
            "--scenario",
            SCENARIO,
            "--stub-args",
            SEED_STUB,
            "--out",
            str(args.out / target.name),
            *(["--database-url", url] if url else []),
        ]
        return bench_sweep.main(argv)


def rows(name: str, run_dir: Path) -> list[dict]:
    """One row per step of a target's sweep.json, and its memory after the idle rest."""
    sweep = json.loads((run_dir / "sweep.json").read_text())
    out = []
    for step in sweep["steps"]:
        turn = step["latency"].get("agent_run", {})
        out.append(
            {
                "target": name,
                "c": int(step["load"]),
                "n": turn.get("n", 0),
                "p50_ms": turn.get("p50_ms"),
                "p95_ms": turn.get("p95_ms"),
                "turns_per_s": step["successes_per_s"],
                "error_rate": step["error_rate"],
                "shed_rate": step["shed_rate"],
                "rss_mb": step["rss_mb"],
                "private_dirty_mb": step["private_dirty_mb"],
            }
        )
    return out


def after_rest(run_dir: Path) -> tuple[float | None, float | None]:
    """The API process's RSS and Private_Dirty (MB) at the last reading of the idle rest."""
    probes = read_table(run_dir, PROBES).to_pandas()
    api = probes[probes["probe"] == "api"]
    last = {m: api[api["metric"] == m]["value"] for m in ("rss_bytes", "private_dirty_bytes")}
    return tuple(  # type: ignore[return-value]
        float(v.iloc[-1]) / MB if len(v) else None for v in last.values()
    )


def claims(name: str, run_dir: Path, steps: list[dict]) -> dict[str, str]:
    """The seed's claims, measured for one target."""
    sweep = json.loads((run_dir / "sweep.json").read_text())
    by_c = {s["c"]: s for s in steps}
    first = by_c.get(1, {}).get("p50_ms")
    overhead = f"{first - STUB_TURN_MS:+,.0f} ms (p50 {first:,.0f} ms)" if first else "-"
    top = max(by_c) if by_c else None
    flat = "-"
    if first and top is not None and by_c[top]["p50_ms"]:
        flat = f"p50 x{by_c[top]['p50_ms'] / first:.1f} from c=1 to c={top}"
    errors = next(
        (f"c={s['c']} ({s['error_rate']:.1%})" for s in steps if s["error_rate"] > ERRORS_START),
        f"none up to c={top}",
    )
    shed = next((f"c={s['c']} ({s['shed_rate']:.1%})" for s in steps if s["shed_rate"] > 0), "none")
    rss_rest, pd_rest = after_rest(run_dir)
    peak = max((s["rss_mb"] or 0 for s in steps), default=0)
    rest = (
        f"RSS {rss_rest:,.0f} MB (peak {peak:,.0f} MB), Private_Dirty {pd_rest:,.0f} MB"
        if rss_rest is not None and pd_rest is not None
        else "-"
    )
    return {
        "overhead per turn at c=1": overhead,
        "latency flat?": flat,
        "errors start (>1%)": errors,
        "429s": shed,
        "memory per session": _per_session(sweep["memory"]),
        "after the idle rest": rest,
    }


def _per_session(memory: dict) -> str:
    """The fit of MB per concurrent session, RSS and Private_Dirty, with r^2 and base."""
    parts = []
    for key, label in (("rss", "RSS"), ("private_dirty", "Private_Dirty")):
        fit = memory.get(key) or {}
        if "slope_mb" not in fit:
            return "not fitted (fewer than 3 steps)"
        parts.append(
            f"{label} {fit['slope_mb']:.2f} MB over {fit['base_mb']:,.0f} MB (r² {fit['r2']:.2f})"
        )
    return "; ".join(parts)


def _cell(value: object, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}{unit}" if abs(value) >= 10 else f"{value:,.2f}{unit}"
    return f"{value}{unit}"


def comparison(out: Path, names: list[str]) -> str:
    """comparison.md: the seed's rows beside each target's claims, then every step's figures."""
    measured = {n: rows(n, out / n) for n in names if (out / n / "sweep.json").exists()}
    claimed = {n: claims(n, out / n, steps) for n, steps in measured.items()}
    lines = [
        "# The agent-server seed's bench, run by the kit",
        "",
        "## The seed's claims, measured here",
        "",
        "| claim | " + " | ".join(claimed) + " |",
        "|---|" + "---|" * len(claimed),
    ]
    for claim in next(iter(claimed.values()), {}):
        lines.append(f"| {claim} | " + " | ".join(c[claim] for c in claimed.values()) + " |")
    lines += [
        "",
        "## The seed's published rows (its section 34.6; 18 logical CPUs)",
        "",
        "| claim | agent server, with its database | opencode serve 1.18.32 |",
        "|---|---|---|",
        *(f"| {a} | {b} | {c} |" for a, b, c in SEED_ROWS),
        "",
        "## Every step",
        "",
        "| target | c | turns | p50 | p95 | turns/s | errors | 429 | RSS MB | Private_Dirty MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, steps in measured.items():
        for s in steps:
            lines.append(
                f"| {name} | {s['c']} | {s['n']} | {_cell(s['p50_ms'], ' ms')} | "
                f"{_cell(s['p95_ms'], ' ms')} | {_cell(s['turns_per_s'])} | "
                f"{s['error_rate']:.1%} | {s['shed_rate']:.1%} | {_cell(s['rss_mb'])} | "
                f"{_cell(s['private_dirty_mb'])} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """Sweep each target in turn, then write comparison.md; 0 once every sweep wrote its report."""
    args = parse_args(argv)
    names = args.targets.split(",")
    args.out.mkdir(parents=True, exist_ok=True)
    for target in (t for t in TARGETS if t.name in names):
        print(f"bench.agent_servers: {target.name}", flush=True)
        sweep_one(target, args)
    text = comparison(args.out, names)
    nofollow.replace(args.out / "comparison.md", text)
    print(text)
    missing = [n for n in names if not (args.out / n / "sweep.json").exists()]
    if missing:
        print(f"bench.agent_servers: no sweep report for {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
