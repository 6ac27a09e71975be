"""The Compose roles, run as plain processes with the very commands docker-compose.yml holds.

No Docker engine runs here, so the distributed topology is tested the way it runs
on any machines: stub, target, seed, a master and two workers, each started from
its service's command with ``${VAR:-default}`` filled in for 127.0.0.1.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
import sys
from collections import Counter

import pytest
import yaml

from engine.mix import Mix
from scenario import load_scenario
from stack.processes import ROOT, free_port, running, stop

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
VARIABLE = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}")

# Every phase at its 2 s minimum: 8 s of load, 128 arrivals, all four phases.
SCALE = "0.02"
# Bounds the whole distributed run, drain included, on a busy 2-core machine.
RUN_TIMEOUT_S = 180


def expand(text: str, values: dict[str, str]) -> str:
    """Compose's ``${VAR:-default}`` substitution, from ``values`` only."""
    return VARIABLE.sub(lambda m: values.get(m.group(1), m.group(2) or ""), text)


def command(service: str, values: dict[str, str]) -> list[str]:
    """The service's command as this machine runs it: ``python``/``locust`` from our venv."""
    words = [expand(word, values) for word in SERVICES[service]["command"]]
    program = {"python": [sys.executable], "locust": [sys.executable, "-m", "locust"]}
    return [*program[words[0]], *words[1:]]


def environment(service: str, values: dict[str, str]) -> dict[str, str]:
    """os.environ plus the service's own ``environment`` block, expanded."""
    block = SERVICES[service].get("environment", {})
    return {**os.environ, **{k: expand(str(v), values) for k, v in block.items()}}


def test_compose_file_builds_every_kit_role_from_the_dockerfile():
    assert (ROOT / "Dockerfile").exists()
    assert {"stub", "master", "worker", "target", "postgres", "seed", "ui"} <= set(SERVICES)
    assert SERVICES["target"]["profiles"] == ["demo"]
    assert SERVICES["ui"]["profiles"] == ["ui"]
    for name, service in SERVICES.items():
        if name == "postgres":
            continue
        assert service["build"] == ".", name
        words = service["command"]
        if words[0] == "python":
            assert words[1] == "-m", name
            module = ROOT / words[2].replace(".", "/")
            assert (module / "__main__.py").exists() or module.with_suffix(".py").exists(), name
        else:
            assert words[:2] == ["locust", "-f"], name
            assert (ROOT / words[2]).exists(), name


@pytest.mark.timeout(RUN_TIMEOUT_S + 120)
def test_master_and_two_workers_from_compose_account_for_every_arrival(tmp_path):
    stub_port, target_port, master_port = free_port(), free_port(), free_port()
    values = {
        "STUB_BIND": "127.0.0.1",
        "STUB_PORT": str(stub_port),
        "STUB_URL": f"http://127.0.0.1:{stub_port}",
        "TARGET_BIND": "127.0.0.1",
        "TARGET_PORT": str(target_port),
        "TARGET_DATABASE_URL": f"sqlite:///{tmp_path}/target.sqlite3",
        "API_URL": f"http://127.0.0.1:{target_port}",
        "METRICS_URL": f"http://127.0.0.1:{target_port}/metrics",
        "FIXTURE": str(tmp_path / "fixture.json"),
        "DOCUMENTS": "8",
        "MASTER_BIND": "127.0.0.1",
        "MASTER_HOST": "127.0.0.1",
        "MASTER_PORT": str(master_port),
        "WORKERS": "2",
        "SCALE": SCALE,
    }
    run_dir = tmp_path / "run"
    stub_cmd = command("stub", values)[1:]
    target_cmd = command("target", values)[1:]
    with (
        running(stub_cmd, "/health", stub_port, tmp_path / "stub.log", environment("stub", values)),
        running(
            target_cmd,
            "/api/v1/health",
            target_port,
            tmp_path / "target.log",
            environment("target", values),
        ),
    ):
        seeded = subprocess.run(
            command("seed", values),
            cwd=ROOT,
            env=environment("seed", values),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
        assert seeded.returncode == 0, seeded.stderr[-2000:]
        logs = {name: (tmp_path / f"{name}.out").open("wb") for name in ("master", "w1", "w2")}
        master = subprocess.Popen(
            [*command("master", values), "--run-dir", str(run_dir)],
            cwd=ROOT,
            env=environment("master", values),
            stdout=logs["master"],
            stderr=subprocess.STDOUT,
        )
        workers = [
            subprocess.Popen(
                command("worker", values),
                cwd=ROOT,
                env=environment("worker", values),
                stdout=logs[name],
                stderr=subprocess.STDOUT,
            )
            for name in ("w1", "w2")
        ]
        try:
            code = master.wait(RUN_TIMEOUT_S)
            for worker in workers:
                worker.wait(30)
        finally:
            for proc in (master, *workers):
                stop(proc)
            for log in logs.values():
                log.close()
    output = (tmp_path / "master.out").read_text(errors="replace")
    record = json.loads((run_dir / "run.json").read_text())
    with (run_dir / "samples.csv").open() as f:
        samples = list(csv.DictReader(f))
    scenario = load_scenario().scaled(float(SCALE))
    # Arrival j of a phase is due at start + j / rate, offered while that is before its end.
    expected = sum(math.ceil(p.duration_s * p.rate) for p in scenario.phases)
    assert record["workers"] == 2, output[-2000:]
    assert record["stopped"] == "completed"
    assert record["offered"] == len(samples) == expected
    assert sorted(int(s["index"]) for s in samples) == list(range(expected))
    assert {s["worker"] for s in samples} == {"0", "1"}
    counts = Counter(s["workload"] for s in samples)
    assert counts == Mix.from_scenario(scenario).counts(range(expected))
    assert code == json.loads((run_dir / "summary.json").read_text())["exit_code"]


def test_compose_master_command_leaves_the_run_directory_to_its_timestamp_default():
    # A fixed --run-dir would be refused on the second `docker compose up`.
    assert "--run-dir" not in SERVICES["master"]["command"]
