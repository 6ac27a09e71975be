"""The depth sweep of bench/depth_sweep.py against a deployment already running (the lab).

    LOAD_PASSWORD=... DATABASE_URL=... python -m bench.depth_sweep_real \
        OUT HOST FIXTURE EMAIL API_PID PLATFORM_LOG

bench.depth_sweep starts a local stack; a real AgenticOS is stood up by hand
(/work/shared/lab/agenticos/RECIPE.md), seeded, with its stub restarted on the
sweep's arguments (``python -m stub --first-token-ms 200 --token-ms 10 --tokens 8``).
This runs the sweep's own five scenarios (bench.depth_sweep.scenario: 1, 2, 4 and
8 steps, then growing conversations) through ``loadkit run`` against it and prints
the sweep's table (bench.depth_sweep.depth_rows / history_rows), so the real
platform's row is computed exactly as the kit's platforms' rows are.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from bench.depth_sweep import DEPTHS, depth_rows, history_rows, scenario
from stack.processes import ROOT

RATE, STEP_S, HISTORY_S = 4.0, 20.0, 60.0


def run_point(out: Path, name: str, raw: dict, target: list[str]) -> Path:
    path = out / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    run_dir = out / name
    subprocess.run(
        [str(ROOT / ".venv/bin/loadkit"), "run", "--scenario", str(path), "--run-dir", str(run_dir),
         *target],
        cwd=ROOT, timeout=900, check=False,
    )  # fmt: skip
    if not (run_dir / "summary.json").exists():
        raise SystemExit(f"{name}: no report")
    return run_dir


def main(out: str, host: str, fixture: str, email: str, api_pid: str, log: str) -> int:
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    target = [
        "--host", host, "--fixture", fixture, "--email", email, "--api-pid", api_pid,
        "--platform-log", log, "--topology",
        "one host (2 CPUs): AgenticOS 0.0.247 (one uvicorn worker, DB pool 5 + 10, Postgres 15 "
        "+ pgvector, Redis, Prefect server), stub --first-token-ms 200 --token-ms 10 --tokens 8, "
        "Locust in one local process",
    ]  # fmt: skip
    depth: list[str] = []
    for steps in DEPTHS:
        raw = scenario(steps, RATE, STEP_S, conversations=False)
        depth += depth_rows(run_point(root, f"steps-{steps}", raw, target), steps)
    raw = scenario(1, RATE, HISTORY_S, conversations=True)
    history = history_rows(run_point(root, "history", raw, target))
    table = "\n".join(
        [
            "### real AgenticOS 0.0.247",
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
    (root / "table.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
