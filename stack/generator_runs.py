"""Short generator runs on a quick platform: stub + reference target + seed, on 127.0.0.1.

The generator's tests and its benches (distributed start, the master's rate, scaling)
write a small scenario so a run lasts seconds, run Locust as real processes (master
and workers here; tests/support/generator_env.py adds a single process), and read
the run directory it wrote. Only processes started here are ever signalled, by PID.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from engine import run_record
from engine.dataset import SAMPLES, Table
from engine.run_record import RUN_FILE
from inputs.scenario import Scenario
from reports.export import csv_rows
from stack.processes import ROOT, Server, free_port, stop
from stack.reference_servers import FAST_STUB, RELAXED_LIMITS, stub_server, target_server

PASSWORD = "generator-tests-password"
# The reference target's limits, raised so that the suite's many short runs never
# meet them (a test of the run limit starts its own target with a low one).
GENEROUS_LIMITS = RELAXED_LIMITS
# A quick stub: tests that need it slow or faulty restart it with other knobs.
QUICK_STUB = ("--first-token-ms", "30", "--token-ms", "5", "--tokens", "6")
# Locust, a whole short run, its drain and its report, on a busy 2-core machine.
RUN_TIMEOUT_S = 120
MIX = {
    "api_read": 45,
    "chat_stream": 20,
    "agent_run": 15,
    "rag_query": 12,
    "ingest": 5,
    "trigger_fire": 3,
}


@dataclass
class Platform:
    """A seeded target, the stub it embeds with and the stub its agents' model runs on."""

    tmp: Path
    model: Server
    target: Server
    fixture: Path


@contextlib.contextmanager
def platform(
    tmp: Path,
    model_knobs: tuple[str, ...] = QUICK_STUB,
    limits: dict[str, str] = GENEROUS_LIMITS,
    embed_knobs: tuple[str, ...] = (),
) -> Iterator[Platform]:
    """Stubs + target (SQLite in tmp) + seeded fixture, all stopped when the block ends.

    Embeddings (seeding's and retrieval's) go to a quick, faultless stub; the agents'
    model is a second stub with ``model_knobs``, so its faults meet chat turns and
    runs only, in a seeded order that seeding does not disturb; ``embed_knobs`` are added to
    the embedder's quick defaults (faults there meet seeding first). Other knobs need a
    platform of their own: the target keeps the stub's URL from seeding, and a
    restarted stub could not rebind its port while old connections are in TIME_WAIT.
    """
    tmp.mkdir(parents=True, exist_ok=True)
    env = {**limits, "TARGET_ADMIN_PASSWORD": PASSWORD}
    with (
        stub_server(tmp, *_quick_embedder(embed_knobs), name="embed-stub") as embedder,
        stub_server(tmp, *model_knobs, name="model-stub") as model,
        target_server(tmp, embedder.url, env=env) as target,
    ):
        fixture = tmp / "fixture.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "workloads.seed",
                "--platform",
                "agenticos",
                "--api-url",
                target.url,
                "--stub-url",
                model.url,
                "--documents",
                "3",
                "--fixture",
                str(fixture),
            ],
            cwd=ROOT,
            env={**os.environ, "LOAD_PASSWORD": PASSWORD},
            check=True,
            capture_output=True,
            timeout=60,
        )
        yield Platform(tmp, model, target, fixture)


def _quick_embedder(knobs: tuple[str, ...]) -> tuple[str, ...]:
    return (*FAST_STUB, *knobs) if knobs else ()


def write_scenario(tmp: Path, phases: list[tuple], **extra) -> Path:
    """A small scenario file: phases as (name, seconds, rate) or (name, seconds, rate,
    arrivals), a rate of None left out (a trace's phase); other fields as given."""
    raw = {
        "name": "generator-test",
        "workloads": extra.pop("workloads", MIX),
        "chat_cancel_share": extra.pop("chat_cancel_share", 0.2),
        "phases": [_phase(*phase) for phase in phases],
        "timeouts": extra.pop(
            "timeouts", {"default_s": 10, "chat_stream_s": 10, "agent_run_s": 10}
        ),
        "thresholds": extra.pop("thresholds", []),
        **extra,
    }
    path = tmp / "scenario.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _phase(name: str, seconds: float, rate: float | None, arrivals: object = None) -> dict:
    phase = {"name": name, "duration_s": seconds, "rate": rate, "arrivals": arrivals}
    return {key: value for key, value in phase.items() if value is not None}


def locust_args(plat: Platform, scenario: Path, run_dir: Path, *extra: str) -> list[str]:
    return [
        "-m",
        "locust",
        "-f",
        "locustfile.py",
        "--scenario",
        str(scenario),
        "--fixture",
        str(plat.fixture),
        "--run-dir",
        str(run_dir),
        "--only-summary",
        *extra,
    ]


def load_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "LOAD_PASSWORD": PASSWORD, "PYTHONUNBUFFERED": "1", **extra}


@dataclass
class Distributed:
    """A running master and its workers (Popen objects) and where the workers log."""

    master: subprocess.Popen
    workers: list[subprocess.Popen]
    logs: list[Path]


@contextlib.contextmanager
def start_distributed(
    plat: Platform,
    scenario: Path,
    run_dir: Path,
    workers: int,
    *extra: str,
    bind_host: str = "127.0.0.1",
    prefix: Callable[[str], list[str]] = lambda role: [],
    port: int | None = None,
    reach_at: str | None = None,
    worker_extra: tuple[str, ...] = (),
) -> Iterator[Distributed]:
    """A headless master + ``workers`` worker processes, stopped (by PID) when the block ends.

    ``prefix(role)`` ("master", "worker0", ...) is put before each command, e.g. to run it
    in a network namespace; the master listens at ``bind_host``:``port`` (a free one by
    default) and workers reach it there, or at ``reach_at`` (a relay in between); each
    worker's command ends with ``worker_extra``.
    """
    port = port or free_port()
    master_args = locust_args(plat, scenario, run_dir, "--headless", *extra)
    master_args += ["--master", "--expect-workers", str(workers)]
    master_args += ["--master-bind-host", bind_host, "--master-bind-port", str(port)]
    worker_args = ["-m", "locust", "-f", "locustfile.py", "--worker"]
    worker_args += ["--master-host", reach_at or bind_host, "--master-port", str(port)]
    worker_args += worker_extra
    logs = [run_dir.parent / f"{run_dir.name}-worker{i}.log" for i in range(workers)]
    procs: list[subprocess.Popen] = []
    try:
        master = subprocess.Popen(
            [*prefix("master"), sys.executable, *master_args],
            cwd=ROOT,
            env=load_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(master)
        for i, log in enumerate(logs):
            with log.open("w") as out:
                procs.append(
                    subprocess.Popen(
                        [*prefix(f"worker{i}"), sys.executable, *worker_args],
                        cwd=ROOT,
                        env=load_env(),
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                )
        yield Distributed(master, procs[1:], logs)
    finally:
        for proc in procs:
            stop(proc)


def run_distributed(
    plat: Platform, scenario: Path, run_dir: Path, workers: int, *extra: str, **where
) -> subprocess.CompletedProcess:
    """A headless master + ``workers`` worker processes to the end; the master's result."""
    with start_distributed(plat, scenario, run_dir, workers, *extra, **where) as run:
        out, err = run.master.communicate(timeout=RUN_TIMEOUT_S)
        for worker in run.workers:
            worker.wait(timeout=30)
        return subprocess.CompletedProcess(run.master.args, run.master.returncode, out, err)


def read_table(run_dir: Path, table: Table = SAMPLES) -> list[dict]:
    """A run's table as the rows of its CSV (strings, as csv.DictReader reads them), exported
    from the dataset the run wrote (reports/export.py)."""
    rows = csv_rows(run_dir, table)
    header = next(rows, None)
    return [] if header is None else [dict(zip(header, row, strict=True)) for row in rows]


def read_samples(run_dir: Path) -> list[dict]:
    return read_table(run_dir, SAMPLES)


def read_run(run_dir: Path) -> dict:
    return json.loads((run_dir / "run.json").read_text())


def ran_scenario(run_dir: Path) -> Scenario:
    """The scenario the run was run from, as run.json holds it."""
    return run_record.read(run_dir / RUN_FILE).scenario


def lateness_ms(sample: dict) -> float:
    """sent - due in milliseconds; infinite for an arrival that was never sent."""
    if not sample["sent_s"]:
        return float("inf")
    return (float(sample["sent_s"]) - float(sample["due_s"])) * 1000
