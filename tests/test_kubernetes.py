"""deploy/kubernetes/, two ways: validated against Kubernetes 1.33, and its commands run.

Validated: every object against Kubernetes 1.33's OpenAPI schemas in strict mode
(kubernetes-validate carries them, so no cluster and no network), plus what a schema
cannot say: secrets only by reference, non-root, requests on every container, one
worker count, the Service and the workers agreeing on the master's port, the
scenario ConfigMap being scenario.yaml, the commands mirroring docker-compose.yml's.
Run: there is no cluster here (kind and minikube need node images this machine
cannot pull), so the manifests' own commands and environment run as plain processes
on 127.0.0.1, with the Services' names swapped for loopback ports and the volumes'
paths for tmp_path: the stub, the seed (the Job's init container), the master and
two workers, against the reference platform; every arrival must be accounted for.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kubernetes_validate.utils import ValidationError, all_versions, validate

from stack.processes import ROOT, free_port, running, stop
from stack.reference_servers import target_server
from tests.support.generator_env import written

DEPLOY = ROOT / "deploy" / "kubernetes"
MANIFESTS = sorted(DEPLOY.rglob("*.yaml"))
OBJECTS = [doc for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text()) if doc]
KUBERNETES = "1.33.0"
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
# What the manifests may take from the Secret, and its name (docs/kubernetes.md creates it).
SECRET = "loadkit"
SECRET_KEYS = {"LOAD_PASSWORD", "DATABASE_URL"}
# The Dockerfile's user and working directory.
IMAGE_UID = 1000
WORKDIR = "/kit"
# Options the master has here and not in docker-compose.yml: the scenario comes from a
# ConfigMap, and Prometheus scrapes the master in the cluster.
MASTER_ONLY_HERE = {"--scenario", "--prometheus"}
# And in docker-compose.yml only: the log of a platform the stack itself started (demo).
MASTER_COMPOSE_ONLY = {"--platform-log"}
# The plain-process run: every phase at its 2 s minimum, a few seed documents.
SCALE = "0.02"
RUN_TIMEOUT_S = 180
PASSWORD = "kubernetes-test-password"


def _object(kind: str, name: str) -> dict:
    (found,) = [o for o in OBJECTS if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def _pod_spec(obj: dict) -> dict:
    return obj["spec"] if obj["kind"] == "Pod" else obj["spec"]["template"]["spec"]


def _containers(obj: dict) -> list[dict]:
    """The pod's init containers and containers; none for an object that runs no pod."""
    if obj["kind"] not in {"Job", "Deployment", "Pod"}:
        return []
    spec = _pod_spec(obj)
    return [*spec.get("initContainers", []), *spec["containers"]]


def _container(kind: str, name: str, container: str) -> dict:
    (found,) = [c for c in _containers(_object(kind, name)) if c["name"] == container]
    return found


def _option(words: list[str], name: str) -> str:
    return words[words.index(name) + 1]


def _options(words: list[str]) -> set[str]:
    return {w for w in words if w.startswith("--")}


MASTER = _container("Job", "loadkit-master", "master")
SEED = _container("Job", "loadkit-master", "seed")
WORKER = _container("Deployment", "loadkit-worker", "worker")
STUB = _container("Deployment", "loadkit-stub", "stub")


def test_the_validator_carries_kubernetes_1_33_offline():
    assert KUBERNETES in all_versions()
    import kubernetes_validate

    schemas = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    assert (schemas / f"v{KUBERNETES}-local-strict" / "job-batch-v1.json").is_file()


@pytest.mark.parametrize(
    "obj", OBJECTS, ids=[f"{o['kind']}/{o['metadata']['name']}" for o in OBJECTS]
)
def test_every_object_is_valid_kubernetes_1_33_in_strict_mode(obj):
    validate(obj, KUBERNETES, strict=True)


def test_strict_mode_refuses_a_field_kubernetes_does_not_have():
    job = copy.deepcopy(_object("Job", "loadkit-master"))
    job["spec"]["template"]["spec"]["containers"][0]["resource"] = {}
    with pytest.raises(ValidationError, match="'resource' was unexpected"):
        validate(job, KUBERNETES, strict=True)


def test_secrets_are_referenced_never_written():
    assert all(o["kind"] != "Secret" for o in OBJECTS)
    for obj in OBJECTS:
        for container in _containers(obj):
            for var in container.get("env", []):
                ref = var.get("valueFrom", {}).get("secretKeyRef")
                if var["name"] in SECRET_KEYS:
                    assert "value" not in var and ref == {**ref, "name": SECRET, "key": var["name"]}
                elif ref is not None:
                    pytest.fail(f"{var['name']} from a secret the docs do not create")
    assert {"LOAD_PASSWORD", "DATABASE_URL"} == {v["name"] for v in MASTER["env"]} & SECRET_KEYS
    (database,) = [v for v in MASTER["env"] if v["name"] == "DATABASE_URL"]
    assert database["valueFrom"]["secretKeyRef"]["optional"] is True


def test_every_pod_runs_as_the_images_user_with_requests_and_no_privileges():
    images = {COMPOSE[role]["image"] for role in ("master", "worker", "stub", "seed")}
    for obj in OBJECTS:
        if obj["kind"] not in {"Job", "Deployment", "Pod"}:
            continue
        security = _pod_spec(obj)["securityContext"]
        assert security["runAsNonRoot"] is True and security["runAsUser"] == IMAGE_UID
        for container in _containers(obj):
            name = f"{obj['metadata']['name']}/{container['name']}"
            assert {container["image"]} == images, name
            assert {"cpu", "memory"} <= set(container["resources"]["requests"]), name
            assert "cpu" not in container["resources"].get("limits", {}), name
            assert container["securityContext"]["allowPrivilegeEscalation"] is False, name
            assert container["securityContext"]["capabilities"]["drop"] == ["ALL"], name
            assert container["securityContext"]["readOnlyRootFilesystem"] is True, name
            # Python writes temporary files (the report's charts, matplotlib's cache) to /tmp.
            if container["command"][0] in {"python", "locust"}:
                mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
                assert "/tmp" in mounts, name


def test_the_master_is_a_job_that_runs_once_and_writes_the_run_volume():
    job = _object("Job", "loadkit-master")
    spec = _pod_spec(job)
    assert job["spec"]["backoffLimit"] == 0 and spec["restartPolicy"] == "Never"
    assert job["spec"]["activeDeadlineSeconds"] > 0
    claim = _object("PersistentVolumeClaim", "loadkit-runs")["metadata"]["name"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    for container in (SEED, MASTER):
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        runs = volumes[mounts[f"{WORKDIR}/runs"]]
        assert runs["persistentVolumeClaim"]["claimName"] == claim
        assert _option(container["command"], "--fixture") == "runs/fixture.json"
    scenario = Path(_option(MASTER["command"], "--scenario"))
    mounts = {m["mountPath"]: m["name"] for m in MASTER["volumeMounts"]}
    config = volumes[mounts[str(scenario.parent)]]["configMap"]["name"]
    data = _object("ConfigMap", config)["data"][scenario.name]
    assert data == (ROOT / "scenario.yaml").read_text(), (
        "deploy/kubernetes/scenario-configmap.yaml is not scenario.yaml: put scenario.yaml, "
        "indented four spaces, under its data.scenario.yaml"
    )


def test_one_worker_count_and_one_master_port():
    workers = _object("Deployment", "loadkit-worker")
    assert workers["spec"]["replicas"] == int(_option(MASTER["command"], "--expect-workers"))
    service = _object("Service", "loadkit-master")
    job = _object("Job", "loadkit-master")
    assert (
        service["spec"]["selector"].items() <= job["spec"]["template"]["metadata"]["labels"].items()
    )
    assert _option(WORKER["command"], "--master-host") == service["metadata"]["name"]
    ports = {p["name"]: p for p in service["spec"]["ports"]}
    container_ports = {p["name"]: p["containerPort"] for p in MASTER["ports"]}
    assert {p["targetPort"] for p in ports.values()} <= set(container_ports)
    master_port = _option(MASTER["command"], "--master-bind-port")
    assert int(master_port) == container_ports["master"] == ports["master"]["port"]
    assert _option(WORKER["command"], "--master-port") == master_port
    metrics = _option(MASTER["command"], "--prometheus")
    assert metrics.endswith(f":{container_ports['metrics']}")
    annotations = job["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(container_ports["metrics"])


@pytest.mark.parametrize(
    ("role", "container"),
    [("master", MASTER), ("worker", WORKER), ("seed", SEED), ("stub", STUB)],
)
def test_commands_and_environment_mirror_docker_compose(role, container):
    compose = [re.sub(r"\$\{[^}]*\}", "", w) for w in COMPOSE[role]["command"]]
    ours = container["command"]
    assert ours[:3] == compose[:3]
    extra, left_out = (
        (MASTER_ONLY_HERE, MASTER_COMPOSE_ONLY) if role == "master" else (set(), set())
    )
    assert _options(ours) == (_options(compose) - left_out) | extra
    names = {v["name"] for v in container.get("env", [])}
    wanted = set(COMPOSE[role].get("environment", {}))
    if role == "stub":
        # Compose gives every kit role the password (x-kit); the stub never reads it.
        wanted.discard("LOAD_PASSWORD")
    assert wanted <= names


def _local(words: list[str], swap: dict[str, str], options: dict[str, str]) -> list[str]:
    """A manifest's command as a process here: cluster names and paths swapped for local ones,
    some options' values set, ``python``/``locust`` from this environment."""
    words = [swap.get(w, w) for w in words]
    for name, value in options.items():
        if name in words:
            words[words.index(name) + 1] = value
    program = {"python": [sys.executable], "locust": [sys.executable, "-m", "locust"]}
    return [*program[words[0]], *words[1:]]


def _env(container: dict) -> dict[str, str]:
    """The container's environment as the cluster would give it, with the test's secret."""
    secrets = {"LOAD_PASSWORD": PASSWORD}
    env = {}
    for var in container.get("env", []):
        ref = var.get("valueFrom", {}).get("secretKeyRef")
        if ref is None:
            env[var["name"]] = var["value"]
        elif ref["key"] in secrets:
            env[var["name"]] = secrets[ref["key"]]
    return {**os.environ, **env}


@pytest.mark.system
@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 180)
def test_the_manifests_commands_run_a_distributed_run_that_accounts_for_every_arrival(tmp_path):
    stub_port, master_port = free_port(), free_port()
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(_object("ConfigMap", "loadkit-scenario")["data"]["scenario.yaml"])
    fixture, run_dir = tmp_path / "fixture.json", tmp_path / "run"
    swap = {
        "0.0.0.0": "127.0.0.1",
        "*": "127.0.0.1",
        "4020": str(stub_port),
        "http://loadkit-stub:4020": f"http://127.0.0.1:{stub_port}",
        "loadkit-master": "127.0.0.1",
        "5557": str(master_port),
        "8089": str(free_port()),
        "0.0.0.0:9646": f"127.0.0.1:{free_port()}",
        "runs/fixture.json": str(fixture),
        _option(MASTER["command"], "--scenario"): str(scenario),
    }
    stub = _local(STUB["command"], swap, {})
    with running(stub[1:], "/health", stub_port, tmp_path / "stub.log", _env(STUB)) as model:
        env = {"TARGET_ADMIN_PASSWORD": PASSWORD}
        with target_server(tmp_path, model.url, env=env) as target:
            swap |= {
                "http://agenticos:8000": target.url,
                "http://agenticos:8000/metrics": f"{target.url}/metrics",
            }
            seeded = subprocess.run(
                _local(SEED["command"], swap, {"--documents": "8"}),
                cwd=ROOT,
                env=_env(SEED),
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT_S,
            )
            assert seeded.returncode == 0, seeded.stderr[-2000:]
            master_cmd = _local(MASTER["command"], swap, {"--scale": SCALE})
            master_cmd += ["--run-dir", str(run_dir), "--prometheus-linger-s", "0"]
            code = _run_master_and_workers(
                tmp_path, master_cmd, _local(WORKER["command"], swap, {})
            )
    record = json.loads((run_dir / "run.json").read_text())
    rows = written(run_dir)
    assert record["workers"] == 2 and record["stopped"] == "completed"
    assert record["offered"] == rows > 0
    assert code == json.loads((run_dir / "summary.json").read_text())["exit_code"]


def _run_master_and_workers(tmp_path: Path, master_cmd: list[str], worker_cmd: list[str]) -> int:
    """The master and as many workers as the Deployment's replicas, to the master's exit."""
    replicas = _object("Deployment", "loadkit-worker")["spec"]["replicas"]
    logs = [(tmp_path / f"{name}.log").open("wb") for name in ("master", *range(replicas))]
    procs = []
    try:
        procs.append(
            subprocess.Popen(
                master_cmd, cwd=ROOT, env=_env(MASTER), stdout=logs[0], stderr=subprocess.STDOUT
            )
        )
        for log in logs[1:]:
            procs.append(
                subprocess.Popen(
                    worker_cmd, cwd=ROOT, env=_env(WORKER), stdout=log, stderr=subprocess.STDOUT
                )
            )
        code = procs[0].wait(RUN_TIMEOUT_S)
        for worker in procs[1:]:
            worker.wait(30)
        return code
    finally:
        for proc in procs:
            stop(proc)
        for log in logs:
            log.close()
