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
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench import sweep as bench_sweep
from engine import nofollow
from reports.rundir import load_run
from reports.sweep.record import (
    SWEEP_FILE,
    Memory,
    MemoryNotMeasured,
    NotFitted,
    Sweep,
    read_sweep,
)

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


@dataclass(frozen=True)
class TurnStep:
    """One step of a target's sweep as the comparison shows it: its whole turns (agent_run),
    their rate, errors and 429s, and the API's memory."""

    c: int
    n: int
    p50_ms: float | None
    p95_ms: float | None
    turns_per_s: float
    error_rate: float | None
    shed_rate: float | None
    rss_mb: float | None
    private_dirty_mb: float | None


def rows(sweep: Sweep) -> list[TurnStep]:
    """One row per step of a target's sweep."""
    out = []
    for step in sweep.steps:
        turn = step.latency.get("agent_run")
        out.append(
            TurnStep(
                c=int(step.load),
                n=turn.n if turn else 0,
                p50_ms=turn.p50_ms if turn else None,
                p95_ms=turn.p95_ms if turn else None,
                turns_per_s=step.successes_per_s,
                error_rate=step.error_rate,
                shed_rate=step.shed_rate,
                rss_mb=step.rss_mb,
                private_dirty_mb=step.private_dirty_mb,
            )
        )
    return out


def after_rest(run_dir: Path) -> tuple[float | None, float | None]:
    """The API process's RSS and Private_Dirty (MB) at the last reading of the idle rest.

    Read as the reports read a run (reports/rundir.py), so a run committed when probes were a
    CSV reads as one written as a dataset does."""
    with load_run(run_dir) as run:
        probes = run.probes
    if probes is None:
        return None, None
    api = probes[probes["probe"] == "api"]
    last = {m: api[api["metric"] == m]["value"] for m in ("rss_bytes", "private_dirty_bytes")}
    return tuple(  # type: ignore[return-value]
        float(v.iloc[-1]) / MB if len(v) else None for v in last.values()
    )


def claims(run_dir: Path, sweep: Sweep, steps: list[TurnStep]) -> dict[str, str]:
    """The seed's claims, measured for one target."""
    by_c = {s.c: s for s in steps}
    first = by_c[1].p50_ms if 1 in by_c else None
    overhead = f"{first - STUB_TURN_MS:+,.0f} ms (p50 {first:,.0f} ms)" if first else "-"
    top = max(by_c) if by_c else None
    flat = "-"
    if first and top is not None and (last := by_c[top].p50_ms):
        flat = f"p50 x{last / first:.1f} from c=1 to c={top}"
    errors = next(
        (f"c={s.c} ({_share(s.error_rate)})" for s in steps if (s.error_rate or 0) > ERRORS_START),
        f"none up to c={top}",
    )
    shed = next(
        (f"c={s.c} ({_share(s.shed_rate)})" for s in steps if (s.shed_rate or 0) > 0), "none"
    )
    rss_rest, pd_rest = after_rest(run_dir)
    peak = max((s.rss_mb or 0 for s in steps), default=0)
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
        "memory per session": _per_session(sweep.memory),
        "after the idle rest": rest,
    }


def _per_session(memory: Memory | MemoryNotMeasured) -> str:
    """The fit of MB per concurrent session, RSS and Private_Dirty, with r^2 and base."""
    if isinstance(memory, MemoryNotMeasured):
        return "not fitted (fewer than 3 steps)"
    parts = []
    for fit, label in ((memory.rss, "RSS"), (memory.private_dirty, "Private_Dirty")):
        if isinstance(fit, NotFitted):
            return "not fitted (fewer than 3 steps)"
        parts.append(f"{label} {fit.slope_mb:.2f} MB over {fit.base_mb:,.0f} MB (r² {fit.r2:.2f})")
    return "; ".join(parts)


def _share(rate: float | None) -> str:
    """A rate as a percentage, "-" for a step with no calls to rate."""
    return "-" if rate is None else f"{rate:.1%}"


def _cell(value: object, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}{unit}" if abs(value) >= 10 else f"{value:,.2f}{unit}"
    return f"{value}{unit}"


def comparison(out: Path, names: list[str]) -> str:
    """comparison.md: the seed's rows beside each target's claims, then every step's figures."""
    sweeps = {n: read_sweep(out / n) for n in names if (out / n / SWEEP_FILE).exists()}
    measured = {n: rows(sweep) for n, sweep in sweeps.items()}
    claimed = {n: claims(out / n, sweeps[n], measured[n]) for n in sweeps}
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
                f"| {name} | {s.c} | {s.n} | {_cell(s.p50_ms, ' ms')} | "
                f"{_cell(s.p95_ms, ' ms')} | {_cell(s.turns_per_s)} | "
                f"{_share(s.error_rate)} | {_share(s.shed_rate)} | {_cell(s.rss_mb)} | "
                f"{_cell(s.private_dirty_mb)} |"
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
    missing = [n for n in names if not (args.out / n / SWEEP_FILE).exists()]
    if missing:
        print(f"bench.agent_servers: no sweep report for {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
