"""docker-compose.yml, three ways: read, run as plain processes, and run in a real engine.

Read: the traps an operator met (a 0.5 GB build context, floating bases, root,
races between roles, two masters, two worker counts, ports on every address) stay
fixed. Plain processes: stub, target, seed, a master and two workers, each started
from its service's command with ``${VAR:-default}`` filled in for 127.0.0.1, so the
distributed topology is tested on any machine. Real engine: the operator guide's Compose
block, verbatim, in Docker (CI starts Debian's ``docker.io`` with ``ci/engine.sh``),
skipped with the reason where no engine answers.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
import yaml

from engine.mix import Mix
from inputs.scenario import load_scenario
from stack.generator_runs import read_samples
from stack.processes import ROOT, free_port, running, stop, wait_ready

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
# Compose's ${VAR:-default} (unset or empty) and ${VAR-default} (unset only).
VARIABLE = re.compile(r"\$\{(\w+)(?:(:?-)([^}]*))?\}")
# The operator guide holds the Compose commands this test runs verbatim (the README points there).
GUIDE = (ROOT / "docs" / "operator-guide.md").read_text()

# Every phase at its 2 s minimum: 8 s of load, 128 arrivals, all four phases.
SCALE = "0.02"
# Bounds the whole distributed run, drain included, on a busy 2-core machine.
RUN_TIMEOUT_S = 180
# The real engine's run: the operator guide's demo at a tenth of full length (~35 s of load).
ENGINE_SCALE = "0.1"
# Bounds one guide block in the engine, a build of the kit's image included (~1.5 min
# cold here) and a busy machine; `docker wait` is bounded by it too.
ENGINE_TIMEOUT_S = 900
# Seconds for the web-UI master to count both workers once the stack is up.
UI_JOIN_S = 180
# The UID the image's user has; a runs directory made by root is handed to it.
IMAGE_UID = 1000


def expand(text: str, values: dict[str, str]) -> str:
    """Compose's ``${VAR:-default}`` and ``${VAR-default}`` substitution, from ``values`` only."""

    def value(m: re.Match) -> str:
        name, form, default = m.groups()
        if name in values and (values[name] or form != ":-"):
            return values[name]
        return default or ""

    return VARIABLE.sub(value, text)


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
    assert set(SERVICES) == {"stub", "postgres", "target", "seed", "master", "worker"}
    assert SERVICES["target"]["profiles"] == ["demo"]
    for name, service in SERVICES.items():
        if name == "postgres":
            continue
        assert service["build"]["context"] == ".", name
        words = service["command"]
        if words[0] == "python":
            assert words[1] == "-m", name
            module = ROOT / words[2].replace(".", "/")
            assert (module / "__main__.py").exists() or module.with_suffix(".py").exists(), name
        else:
            assert words[:2] == ["locust", "-f"], name
            assert (ROOT / words[2]).exists(), name


def test_the_build_context_leaves_out_environments_history_and_run_output():
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".venv", ".git", "runs", "fixture.json"} <= ignored


def test_base_images_are_pinned_and_the_kit_runs_as_a_user():
    dockerfile = (ROOT / "Dockerfile").read_text()
    (base,) = re.findall(r"^FROM (\S+)", dockerfile, re.M)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm", base), base
    assert re.fullmatch(r"postgres:15\.\d+-bookworm", SERVICES["postgres"]["image"])
    (user,) = re.findall(r"^USER (\S+)", dockerfile, re.M)
    assert user not in {"root", "0"}
    for name, service in SERVICES.items():
        assert service.get("user", user) not in {"root", "0"}, name


def test_each_role_starts_after_what_it_needs_is_ready():
    def needs(service: str) -> dict[str, str]:
        return {k: v["condition"] for k, v in SERVICES[service].get("depends_on", {}).items()}

    for service in ("stub", "postgres", "target"):
        assert SERVICES[service]["healthcheck"]["test"][0] == "CMD", service
    assert needs("target") == {"postgres": "service_healthy", "stub": "service_healthy"}
    assert needs("seed") == {"stub": "service_healthy"}
    assert needs("master") == {"seed": "service_completed_successfully"}
    assert needs("worker") == {"master": "service_started"}
    # The seed cannot depend on the demo's target (a host platform has none): it waits itself.
    seed = SERVICES["seed"]["command"]
    assert seed[seed.index("--wait") + 1] == "${SEED_WAIT_S:-180}"


def test_one_master_and_one_worker_count():
    master = SERVICES["master"]["command"]
    assert master[master.index("--expect-workers") + 1] == "${WORKERS:-2}"
    assert SERVICES["worker"]["scale"] == "${WORKERS:-2}"
    assert SERVICES["worker"]["command"][-3:] == [
        "${MASTER_HOST:-master}",
        "--master-port",
        "${MASTER_PORT:-5557}",
    ]
    # The web UI is this master with HEADLESS=false, so workers can only join the one there is.
    assert "--headless" not in master
    assert SERVICES["master"]["environment"]["LOCUST_HEADLESS"] == "${HEADLESS:-true}"
    assert "--scale" not in readme_compose_block()
    assert "WORKERS=4 SCALE=0.1 compose --profile demo up -d --build" in GUIDE


def test_ports_are_published_on_loopback_and_the_host_is_reachable_on_linux():
    for name, service in SERVICES.items():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), (name, port)
        if "build" in service:
            assert "host.docker.internal:host-gateway" in service["extra_hosts"], name


@pytest.mark.system
@pytest.mark.timeout(RUN_TIMEOUT_S + 120)
@pytest.mark.slow
def test_master_and_two_workers_from_compose_account_for_every_arrival(tmp_path):
    stub_port, target_port, master_port = free_port(), free_port(), free_port()
    values = {
        "STUB_BIND": "127.0.0.1",
        "STUB_PORT": str(stub_port),
        "STUB_URL": f"http://127.0.0.1:{stub_port}",
        "PLATFORM_STUB_URL": f"http://127.0.0.1:{stub_port}",
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
        "PLATFORM_LOG": str(tmp_path / "platform" / "target.log"),
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
    samples = read_samples(run_dir)
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
    summary = json.loads((run_dir / "summary.json").read_text())
    assert code == summary["exit_code"]
    # The target's --log-file is the master's --platform-log: the report read what it logged.
    assert record["platform_log"]["path"] == "../platform/target.log"
    assert record["platform_log"]["to_byte"] >= record["platform_log"]["from_byte"] > 0
    assert summary["platform_log"]["missing"] is None


def test_compose_master_command_leaves_the_run_directory_to_its_timestamp_default():
    # A fixed --run-dir would be refused on the second `docker compose up`.
    assert "--run-dir" not in SERVICES["master"]["command"]


def readme_compose_block() -> str:
    """The operator guide's Compose commands, the ``sh`` block that defines ``compose``."""
    section = GUIDE[GUIDE.index("## Capacity runs") :]
    return re.search(r"```sh\n(compose\(\).*?)```", section, re.S).group(1)


def pinned_images() -> list[str]:
    """The base images the build and the demo need, by the names they are pinned to."""
    (base,) = re.findall(r"^FROM (\S+)", (ROOT / "Dockerfile").read_text(), re.M)
    return [base, SERVICES["postgres"]["image"]]


def compose_program() -> list[str] | None:
    """Compose v2 where the docker client has it, else v1's ``docker-compose``, else None."""
    if shutil.which("docker"):
        v2 = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=60)
        if v2.returncode == 0:
            return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


def engine_unavailable() -> str | None:
    """Why the guide's block cannot run in a real engine here, or None if it can."""
    missing = [
        name
        for name, found in (
            ("the docker client", shutil.which("docker")),
            ("Compose (docker compose or docker-compose)", compose_program()),
        )
        if not found
    ]
    if missing:
        return f"not installed: {' and '.join(missing)} (CI installs them: bash ci/engine.sh start)"
    info = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=60)
    if info.returncode != 0:
        said = (info.stderr.strip().splitlines() or ["no answer"])[-1]
        return f"no Docker engine answers ({said}); CI starts dockerd as root: ci/engine.sh start"
    for image in pinned_images():
        found = subprocess.run(["docker", "image", "inspect", image], capture_output=True)
        if found.returncode != 0:
            return (
                f"base image {image} is not in the engine and this test pulls nothing: "
                "build the stand-ins with ci/images/build.sh (or docker pull it)"
            )
    return None


def engine_env(tmp_path: Path, project: str, **settings: str) -> dict[str, str]:
    """The environment the guide's block runs in: its own project, runs dir and ports."""
    runs = tmp_path / "runs"
    runs.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPOSE_")}
    if os.getuid() == 0:
        os.chown(runs, IMAGE_UID, IMAGE_UID)
    else:
        env["LOADKIT_UID"] = str(os.getuid())
    return {
        **env,
        "COMPOSE_FILE": str(ROOT / "docker-compose.yml"),
        "COMPOSE_PROJECT_NAME": project,
        "RUNS_DIR": str(runs),
        "STUB_HOST_PORT": str(free_port()),
        "TARGET_HOST_PORT": str(free_port()),
        "WEB_HOST_PORT": str(free_port()),
        "DOCUMENTS": "8",
        **settings,
    }


def tear_down(env: dict[str, str]) -> None:
    """Containers, network and volumes of this test's project, whatever state it is in."""
    program = compose_program() or ["docker-compose"]
    subprocess.run(
        [*program, "--profile", "demo", "down", "-v", "--remove-orphans", "-t", "5"],
        env=env,
        capture_output=True,
        timeout=300,
    )


@pytest.mark.system
@pytest.mark.docker
@pytest.mark.timeout(ENGINE_TIMEOUT_S + 360)
@pytest.mark.slow
def test_readme_compose_demo_runs_verbatim_in_a_real_engine(tmp_path):
    reason = engine_unavailable()
    if reason:
        pytest.skip(reason)
    env = engine_env(tmp_path, f"loadkit-test-{os.getpid()}", SCALE=ENGINE_SCALE, WORKERS="2")
    try:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", readme_compose_block()],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=ENGINE_TIMEOUT_S,
        )
    finally:
        tear_down(env)
    said = f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, said
    (run_dir,) = run_dirs(tmp_path / "runs")
    summary = json.loads((run_dir / "summary.json").read_text())
    record = json.loads((run_dir / "run.json").read_text())
    samples = read_samples(run_dir)
    assert (run_dir / "report.md").stat().st_size > 0
    assert (run_dir / "report.html").stat().st_size > 0
    assert record["workers"] == 2 and record["stopped"] == "completed", said
    assert summary["counts"]["offered"] == summary["counts"]["recorded"] == len(samples) > 0
    assert {s["worker"] for s in samples} == {"0", "1"}
    # `docker wait` printed the master's exit code: the report's verdict.
    verdict = [line for line in done.stdout.splitlines() if line.strip().isdigit()]
    assert verdict == [str(summary["exit_code"])], said


@pytest.mark.system
@pytest.mark.docker
@pytest.mark.timeout(ENGINE_TIMEOUT_S + 360)
@pytest.mark.slow
def test_the_web_ui_master_replaces_the_headless_one_and_the_workers_join_it(tmp_path):
    reason = engine_unavailable()
    if reason:
        pytest.skip(reason)
    env = engine_env(tmp_path, f"loadkit-ui-{os.getpid()}", HEADLESS="false", WORKERS="2")
    up = [*compose_program(), "--profile", "demo", "up", "-d", "--build"]
    stats = f"http://127.0.0.1:{env['WEB_HOST_PORT']}/stats/requests"
    seen: dict = {}
    try:
        started = subprocess.run(
            up, env=env, capture_output=True, text=True, timeout=ENGINE_TIMEOUT_S
        )
        assert started.returncode == 0, started.stderr[-3000:]
        deadline = time.monotonic() + UI_JOIN_S
        while time.monotonic() < deadline and seen.get("worker_count") != 2:
            try:
                with urllib.request.urlopen(stats, timeout=5) as resp:
                    seen = json.load(resp)
            except OSError:
                pass
            time.sleep(1)
        masters = subprocess.run(
            [*compose_program(), "ps", "-q", "master"], env=env, capture_output=True, text=True
        ).stdout.split()
    finally:
        tear_down(env)
    assert seen.get("worker_count") == 2, seen
    assert seen.get("state") == "ready", seen
    assert len(masters) == 1
    # Nothing ran headless: no run directory, only the seed's fixture and the platform's log.
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["fixture.json", "platform"]


def run_dirs(runs: Path) -> list[Path]:
    """The run directories under ``runs``: not ``platform/``, where the demo's platform logs."""
    return [d for d in runs.iterdir() if d.is_dir() and d.name != "platform"]


def bridge_gateway() -> str:
    """The address ``host-gateway`` names, asked of the engine itself: a container resolves it.

    The default bridge's IPAM gateway is not it on every engine (Debian's docker.io 20.10 lists
    the subnet alone), so the address is read where Compose's ``host-gateway`` is resolved."""
    resolve = ["docker", "run", "--rm", "--add-host", "host.docker.internal:host-gateway"]
    resolve += ["--entrypoint", "getent", pinned_images()[0], "ahostsv4", "host.docker.internal"]
    answer = subprocess.run(resolve, capture_output=True, text=True, timeout=120, check=True)
    return answer.stdout.split()[0]


@pytest.mark.system
@pytest.mark.docker
@pytest.mark.timeout(ENGINE_TIMEOUT_S + 360)
@pytest.mark.slow
def test_a_platform_on_the_host_is_seeded_and_loaded_through_host_gateway(tmp_path):
    """The guide's host recipe on Linux: the platform on the host, the kit in containers."""
    reason = engine_unavailable()
    if reason:
        pytest.skip(reason)
    gateway, port = bridge_gateway(), free_port()
    env = engine_env(tmp_path, f"loadkit-host-{os.getpid()}", SCALE=SCALE, WORKERS="2")
    env |= {
        "API_URL": f"http://host.docker.internal:{port}",
        "PLATFORM_STUB_URL": f"http://127.0.0.1:{env['STUB_HOST_PORT']}",
        "METRICS_URL": "",
        "PLATFORM_LOG": "",
    }
    platform_env = {
        **os.environ,
        "RATE_LIMIT_RUN_PER_MINUTE": "100000",
        "TARGET_ADMIN_PASSWORD": env.get("LOAD_PASSWORD", "loadkit-admin"),
    }
    platform_args = ["--host", gateway, "--port", str(port)]
    platform_args += ["--database-url", f"sqlite:///{tmp_path / 'host.sqlite3'}"]
    platform_args += ["--embedding-url", env["PLATFORM_STUB_URL"]]
    with (tmp_path / "platform.log").open("wb") as log:
        platform = subprocess.Popen(
            [sys.executable, "-m", "platforms.reference", *platform_args],
            cwd=ROOT,
            env=platform_env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    program = compose_program()
    try:
        wait_ready(f"http://{gateway}:{port}/api/v1/health", platform)
        up = subprocess.run(
            [*program, "up", "-d", "--build"],
            env=env,
            capture_output=True,
            text=True,
            timeout=ENGINE_TIMEOUT_S,
        )
        assert up.returncode == 0, up.stderr[-3000:]
        master = subprocess.run(
            [*program, "ps", "-a", "-q", "master"], env=env, capture_output=True, text=True
        ).stdout.split()
        waited = subprocess.run(
            ["docker", "wait", *master], capture_output=True, text=True, timeout=ENGINE_TIMEOUT_S
        )
        project = f"label=com.docker.compose.project={env['COMPOSE_PROJECT_NAME']}"
        service = '{{.Label "com.docker.compose.service"}}'
        services = subprocess.run(
            ["docker", "ps", "-a", "--filter", project, "--format", service],
            capture_output=True,
            text=True,
        ).stdout.split()
    finally:
        tear_down(env)
        stop(platform)
    (run_dir,) = run_dirs(tmp_path / "runs")
    summary = json.loads((run_dir / "summary.json").read_text())
    record = json.loads((run_dir / "run.json").read_text())
    assert sorted(services) == ["master", "seed", "stub", "worker", "worker"]
    assert record["host"] == env["API_URL"]
    assert summary["counts"]["offered"] == summary["counts"]["recorded"] > 0
    assert summary["counts"]["ok"] > 0, summary["counts"]
    assert waited.stdout.split() == [str(summary["exit_code"])]
