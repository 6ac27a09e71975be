"""What only the generator's tests add to stack/generator_runs.py's short runs: a single-process
run (to its end, or left running), an unprivileged open-files limit, a stub seed that starts
clean, lost-work thresholds, and how a test reads a run that did not pass.
"""

from __future__ import annotations

import ctypes
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from engine.dataset import SAMPLES
from engine.dataset import read_table as read_dataset
from engine.mix import Mix
from engine.schedule import Plan
from inputs.scenario import load_scenario
from stack.generator_runs import RUN_TIMEOUT_S, Platform, load_env, locust_args
from stack.processes import ROOT
from stub.config import StubConfig
from stub.faults import FaultPlan

# Chat completions the model stub sees before load: preflight's agent run, and the
# routine its signed test delivery may start; a faulty stub must let these through.
PREFLIGHT_MODEL_REQUESTS = 2
# prctl(2)'s option to drop a capability from the bounding set, and the capability that lets a
# process raise its own hard limits (linux/capability.h).
PR_CAPBSET_DROP = 24
CAP_SYS_RESOURCE = 24
_LIBC = ctypes.CDLL(None, use_errno=True)

# Uploads and webhook deliveries judged by what the platform did with them: none of the
# work it accepted may be lost (failed after 202, or not finished in grace). Judged however
# few (min_count 1): these runs last seconds and test the follow-up, not the statistics.
LOST_WORK_THRESHOLDS = [
    {"workload": "ingest", "metric": "error_rate", "limit": 0, "phase": "sustain", "min_count": 1},
    {
        "workload": "trigger_fire",
        "metric": "error_rate",
        "limit": 0,
        "phase": "sustain",
        "min_count": 1,
    },
]


def clean_start_seed(first: int = PREFLIGHT_MODEL_REQUESTS, **rates: float) -> str:
    """A stub seed whose ``first`` requests (preflight's, by default) are not faulted at these
    rates. Uses the stub's own fault plan, so it stays right if the stub changes how it draws.
    """
    for seed in range(10_000):
        plan = FaultPlan(StubConfig(seed=seed, **rates))
        if all(plan.next_fault() is None for _ in range(first)):
            return str(seed)
    raise AssertionError(f"no seed starts cleanly at {rates}")


def open_files_limited(soft: int, hard: int) -> Callable[[], None]:
    """A ``preexec_fn``: these open-files limits (RLIMIT_NOFILE), as an unprivileged
    operator's, which the process may not raise: CAP_SYS_RESOURCE is dropped from its bounding
    set, which a root process's exec takes its capabilities from."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        _LIBC.prctl(PR_CAPBSET_DROP, CAP_SYS_RESOURCE)

    return limit


def run_local(
    plat: Platform, scenario: Path, run_dir: Path, *extra: str, open_files: int | None = None
) -> subprocess.CompletedProcess:
    """A headless single-process run to its end; its exit code and output. ``open_files``
    limits the process's open files (``open_files_limited``), for the tests of the connection
    bound."""
    return subprocess.run(
        [sys.executable, *locust_args(plat, scenario, run_dir, "--headless", *extra)],
        cwd=ROOT,
        env=load_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        preexec_fn=open_files_limited(open_files, open_files) if open_files else None,
    )


def start_local(plat: Platform, scenario: Path, run_dir: Path, *extra: str) -> subprocess.Popen:
    """A headless single-process run, started and left running (stderr piped, for the
    test to read or to say why it exited); the caller stops it by PID."""
    return subprocess.Popen(
        [sys.executable, *locust_args(plat, scenario, run_dir, "--headless", *extra)],
        cwd=ROOT,
        env=load_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def invalid_reasons(run_dir: Path, result: subprocess.CompletedProcess) -> str:
    """Why a run did not pass, as its report says (summary.json), else the kit's own lines:
    what a failing test should print instead of Locust's statistics table."""
    summary = run_dir / "summary.json"
    if summary.exists():
        data = json.loads(summary.read_text())
        reasons = data.get("invalid_reasons") or []
        failed = [
            f"{row['workload']} {row['metric']}: {row['status']}"
            for row in data.get("thresholds", [])
            if row.get("status") != "pass"
        ]
        return f"exit {result.returncode}, verdict {data.get('verdict')}: " + "; ".join(
            [*reasons, *failed]
        )
    ours = [line for line in result.stderr.splitlines() if "agent-loadkit" in line]
    return f"exit {result.returncode}, no report: " + (
        " | ".join(ours) if ours else result.stderr[-1500:]
    )


def written(run_dir: Path) -> int:
    """Samples the master has written so far (0 before it made the dataset)."""
    if not (run_dir / SAMPLES.name).is_dir():
        return 0
    return read_dataset(run_dir, SAMPLES, ("index",)).num_rows


def expected_counts(scenario: Path, scale: float = 1.0) -> tuple[Plan, dict[int, str]]:
    """The spec for a closed scenario: its plan, and each global index's workload."""
    sc = load_scenario(scenario).scaled(scale)
    plan = Plan.from_scenario(sc)
    mix = Mix.from_scenario(sc)
    return plan, {k: mix.pick_in(plan.segments[n], k) for n, k in plan.indexes_before()}


def wait_for_rows(run_dir: Path, rows: int, proc: subprocess.Popen) -> None:
    """Until the samples hold ``rows`` samples (load is flowing), or fail if Locust exits
    (its stderr, piped, says why)."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()[-1500:]
        if written(run_dir) > rows:
            return
        time.sleep(0.05)
    raise TimeoutError(f"{rows} samples did not arrive")
