"""One platform's demo stack with one named fault window: the runs behind issue 45's findings.

What an operator asks after an incident (the provider was down for 30 s: what did the platform
do, and how long after it came back was the platform back?) is asked here of each shipped
platform, one fault at a time, on the shipped scenario with one window in sustain:

- ``provider-outage``: 30 s of every model request answered 500 (scenarios/provider-outage.yaml)
- ``rate-limit-storm``: 30 s of 429s with Retry-After: 1 (scenarios/rate-limit-storm.yaml)
- ``provider-slowdown``: 30 s of first token and pace x 5 (scenarios/provider-slowdown.yaml)
- ``platform-freeze``: the platform's process frozen (SIGSTOP) for 10 s
  (scenarios/platform-freeze.yaml): agno, LangGraph and opencode's platform-side fault
- ``api-restart`` (the reference platform): its API process killed (SIGKILL, the PID its
  supervisor, bench/respawn.py, writes) and started again at once, as systemd or a
  Deployment would; the API probe then reads the supervisor, not the API
- ``postgres-restart`` (the reference platform): ``pg_ctl restart -m immediate``, a crash
  and its recovery

The reference platform runs on a throwaway PostgreSQL 15 cluster for every fault, as the
issue asks and as AgenticOS runs in production.

Each run is the stack ``make demo`` starts, the run in ``OUT/run`` (its report's "Fault
window" section is the finding: time to recover, amplification, lost work, shedding), and
the end of the output says where. A figure the kit publishes is taken with nothing else
running on the machine: the load average is printed before and after, and no run of this
is committed from a shared machine.

    .venv/bin/python -m bench.faults --platform agenticos --fault provider-outage
    .venv/bin/python -m bench.faults --platform agenticos --fault postgres-restart --scale 0.3
    .venv/bin/python -m bench.faults --platform agno --fault platform-freeze
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import yaml

from inputs.fixture import DEFAULT_EMAIL
from inputs.scenario import DEFAULT_PATH
from reports.summary import FaultCheck, FaultsRecord
from runner.run_end import summary_of, verdict_exit_code
from runner.settings import RUNS_DIR, run_stamp
from stack.demo import SCENARIOS, locust_command
from stack.local import LocalStack, StackOptions, child_env, running_stub, seed, topology
from stack.platforms import STACKS, local_stack
from stack.processes import (
    ROOT,
    Interrupted,
    free_port,
    run_load,
    running,
    stopped_by_signals,
)

if TYPE_CHECKING:
    from stack.postgres import Cluster

# Faults the reference platform alone takes (a process the stack can restart, a database).
REFERENCE_ONLY = ("api-restart", "postgres-restart")
FAULTS = (*sorted(p.stem for p in SCENARIOS.glob("*.yaml")), *REFERENCE_ONLY)
REFERENCE = "agenticos"
# Where a command window falls, as the shipped windows do: a minute into sustain, with the
# rest of sustain to come back in; the window itself is how long its effect is watched as
# "during" (the command acts at its start).
COMMAND_WINDOW = {"phase": "sustain", "start_s": 60, "duration_s": 10, "kind": "command"}
# A restart may take a while on a busy machine before it says it is done.
RESTART_TIMEOUT_S = 120


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__)
    parser.add_argument("--platform", choices=STACKS, default=REFERENCE)
    parser.add_argument("--fault", choices=FAULTS, required=True)
    parser.add_argument(
        "--scale", type=float, default=1.0, help="phase lengths (and the window) x this"
    )
    parser.add_argument("--out", type=Path, help="default runs/faults-PLATFORM-FAULT-<stamp>")
    args = parser.parse_args(argv)
    if args.fault in REFERENCE_ONLY and args.platform != REFERENCE:
        parser.error(f"--fault {args.fault} is the reference platform's; give --platform agenticos")
    return args


def command_scenario(path: Path, name: str, argv: list[str]) -> Path:
    """The shipped scenario with one command window called ``name`` running ``argv`` at its
    start, written at ``path``."""
    raw = yaml.safe_load(DEFAULT_PATH.read_text())
    raw["name"] = name
    raw["faults"] = [
        {"name": name, **COMMAND_WINDOW, "at_start": argv, "timeout_s": RESTART_TIMEOUT_S}
    ]
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@contextlib.contextmanager
def respawned_reference(options: StackOptions, pid_file: Path) -> Iterator[LocalStack]:
    """The reference stack (stack/agenticos.py's) with its API under bench/respawn.py, which
    starts it again whenever it dies and writes its PID to ``pid_file``."""
    from stack.agenticos import RAISED_RUN_LIMIT, _described

    env = child_env()
    with running_stub(options, env) as stub:
        port = free_port()
        target_env = {
            **env,
            "RATE_LIMIT_RUN_PER_MINUTE": str(RAISED_RUN_LIMIT),
            "DATABASE_URL": options.database_url
            or f"sqlite:///{options.workdir.resolve()}/target.sqlite3",
            "EMBEDDING_URL": stub.url,
            # A key the restarted process shares, as a deployment configures its secret: with
            # a key of each process's own, every token the run holds is refused after it.
            "TARGET_SECRET_KEY": secrets.token_hex(32),
        }
        args = ["-m", "bench.respawn", "--pid-file", str(pid_file), "--"]
        args += [sys.executable, "-m", "platforms.reference", "--port", str(port)]
        with running(args, "/api/v1/health", port, options.workdir / "target.log", target_env) as t:
            fixture = options.workdir / "fixture.json"
            seed(t.url, stub.url, options.documents, fixture, env)
            described = topology(options, f"{_described(options)} under bench/respawn.py", stub)
            yield LocalStack(stub, t, fixture, DEFAULT_EMAIL, described, None)


@contextlib.contextmanager
def reference_cluster(args: argparse.Namespace) -> Iterator[Cluster | None]:
    """A throwaway PostgreSQL 15 cluster for the reference platform, which the issue's findings
    take on PostgreSQL as AgenticOS runs in production (its restart is a fault of its own);
    None for the other platforms, which keep their own stores."""
    if args.platform != REFERENCE:
        yield None
        return
    from stack.postgres import throwaway_cluster

    with tempfile.TemporaryDirectory() as scratch, throwaway_cluster(Path(scratch)) as db:
        yield db


@contextlib.contextmanager
def stack_for(args: argparse.Namespace, out: Path) -> Iterator[tuple[LocalStack, Path | None]]:
    """The stack started for the fault, and the scenario it runs (None: a shipped one)."""
    with reference_cluster(args) as db:
        options = StackOptions(
            workdir=out / "stack", platform=args.platform, database_url=db.url if db else None
        )
        options.workdir.mkdir(parents=True, exist_ok=True)
        if args.fault == "api-restart":
            pid_file = options.workdir / "api.pid"
            kill = ["/bin/sh", "-c", f'kill -KILL "$(cat {pid_file})"']
            scenario = command_scenario(out / "scenario.yaml", args.fault, kill)
            with respawned_reference(options, pid_file) as stack:
                yield stack, scenario
        elif args.fault == "postgres-restart":
            assert db is not None  # parse_args gives this fault to the reference platform only
            scenario = command_scenario(out / "scenario.yaml", args.fault, list(db.restart))
            with local_stack(options) as stack:
                yield stack, scenario
        else:
            with local_stack(options) as stack:
                yield stack, SCENARIOS / f"{args.fault}.yaml"


def findings(faults: FaultsRecord | None) -> list[str]:
    """Each window's per-workload lines: errors during, time to recover, amplification, lost
    work accepted during it, shed; as the report's section has them, in one line each."""
    lines = []
    for window in faults.windows if faults else []:
        lines.append(f"{window.name} ({window.what}), {window.start_s:g}-{window.end_s:g} s")
        if window.not_applied:
            lines.append(f"  not applied: {window.not_applied}")
        for name, w in window.workloads.items():
            amplified = w.amplification
            lines.append(
                f"  {name}: errors during {w.during.errors:,} of {w.during.calls:,}; time to "
                f"recover {_said(w.time_to_recover)}"
                + (f"; amplification {_said(amplified)}" if amplified else "")
                + f"; accepted during and lost {w.accepted_during.lost:,}"
                + f"; shed {w.shed_during:,}"
            )
    return lines


def _said(check: FaultCheck) -> str:
    """A window's measure as its reading, its status beside when it is not plain."""
    if check.status in ("pass", "recovered", "reported"):
        return check.reading
    return f"{check.status}: {check.reading}"


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    out = (
        args.out or ROOT / RUNS_DIR / f"faults-{args.platform}-{args.fault}-{run_stamp()}"
    ).resolve()
    run_dir = out / "run"
    out.mkdir(parents=True, exist_ok=True)
    print(f"faults: load average before {os.getloadavg()[0]:.2f}", flush=True)
    try:
        with stopped_by_signals(), stack_for(args, out) as (stack, scenario):
            print(f"faults: {args.fault} on {args.platform}, scale {args.scale}", flush=True)
            command = locust_command(stack, run_dir, args.scale, scenario)
            run_load(command, stack.locust_env())
    except (RuntimeError, TimeoutError) as exc:
        print(f"faults: {exc}; logs are in {out / 'stack'}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"faults: {exc}: the stack is stopped; the run is in {run_dir}", file=sys.stderr)
        return 2
    print(f"faults: load average after {os.getloadavg()[0]:.2f}")
    summary = summary_of(run_dir)
    faults = (summary.faults or None) if summary else None
    for line in findings(faults):
        print(f"faults: {line}")
    (out / "findings.json").write_text(json.dumps(msgspec.to_builtins(faults), indent=2) + "\n")
    print(
        f"faults: the report is {run_dir / 'report.html'}; its fault window section is the finding"
    )
    code = verdict_exit_code(run_dir, 0.0)
    return 2 if code is None else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
