"""A platform package outside the kit, found, checked, seeded and run with no edit of the kit.

examples/echo-platform is a team's own platform (three files: its pyproject.toml with the
entry point, its package's two modules) for a tiny agent service of its own
(service.py). pip installs it into a directory put on the kit's path, where the kit
finds it as it finds any installed distribution's entry point (importlib.metadata reads
every dist-info on the path); a test never changes the shared environment itself. Then:
``loadkit platforms`` lists it with where it came from, ``loadkit check-platform``
holds it to the contract and sends one request of each workload it offers, and a seed
and a four-phase run go through with exact accounting and no LOAD_PASSWORD (the service
has no sign-in). A package that breaks the contract is refused by ``check-platform`` and
by the run, before load, in one line naming what is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from engine.dataset import STUB_CALLS
from stack.generator_runs import read_samples, read_table
from stack.local import LOCUST
from stack.processes import ROOT, free_port, running

EXAMPLE = ROOT / "examples" / "echo-platform"
# The repository's scenario at 4% of its length: about 14 s of load.
SCALE = 0.04
STUB_ARGS = ("--first-token-ms", "20", "--token-ms", "20", "--tokens", "8")
RUN_TIMEOUT_S = 600
pytestmark = [pytest.mark.system, pytest.mark.slow, pytest.mark.timeout(2 * RUN_TIMEOUT_S)]

# A package that says what it offers and leaves trigger_fire unsaid.
BROKEN = """
import dataclasses
from echo_platform.platform import PLATFORM

PLATFORM = dataclasses.replace(
    PLATFORM,
    name="broken",
    not_offered={k: v for k, v in PLATFORM.not_offered.items() if k != "trigger_fire"},
)
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The example installed by pip into a directory of its own (built from a copy, so the
    build writes nothing into the checkout), and a broken module beside."""
    target = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("source") / "echo-platform"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", ".*"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr
    (target / "broken_platform.py").write_text(BROKEN)
    return target


def _env(site: Path) -> dict[str, str]:
    """The kit's environment with the example on its path and no password: the echo service
    has no sign-in."""
    env = {k: v for k, v in os.environ.items() if k != "LOAD_PASSWORD"}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])
    return env


def _loadkit(site: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "loadkit", *args],
        cwd=ROOT,
        env=_env(site),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )


def _run(site: Path, url: str, fixture: Path, run_dir: Path, *more: str):
    """A short headless run of the shipped scenario against ``url``."""
    command = [*LOCUST, "--headless", "--only-summary", "--host", url, "--fixture", str(fixture)]
    command += ["--run-dir", str(run_dir), "--scale", str(SCALE), *more]
    return subprocess.run(
        command, cwd=ROOT, env=_env(site), capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )


@pytest.fixture(scope="module")
def service(site, tmp_path_factory):
    """The stub, and the echo service on it."""
    logs = tmp_path_factory.mktemp("echo")
    stub_port, port = free_port(), free_port()
    stub_args = ["-m", "stub", "--port", str(stub_port), *STUB_ARGS]
    with running(stub_args, "/health", stub_port, logs / "stub.log") as stub:
        args = [str(EXAMPLE / "service.py"), "--port", str(port), "--model-url", stub.url]
        with running(args, "/health", port, logs / "service.log") as echo:
            yield stub, echo


def test_the_installed_package_is_found_by_its_entry_point(site):
    listed = _loadkit(site, "platforms")
    line = next(line for line in listed.stdout.splitlines() if line.startswith("echo "))
    assert "entry point of loadkit-echo-platform 0.1.0" in line
    assert "(echo_platform.platform:PLATFORM)" in line
    assert "    trigger_fire not offered: the echo service takes no webhooks" in listed.stdout


def test_the_package_is_small(site):
    """The goal of issue 43: a new HTTP platform with a streamed chat turn in at most three
    files and 200 lines."""
    files = [EXAMPLE / "pyproject.toml", *sorted((EXAMPLE / "echo_platform").glob("*.py"))]
    assert len(files) <= 3
    assert sum(len(f.read_text().splitlines()) for f in files) <= 200


def test_check_platform_holds_it_to_the_contract_and_sends_one_of_each(site, service):
    stub, echo = service
    done = _loadkit(site, "check-platform", "echo", "--api-url", echo.url, "--stub-url", stub.url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].startswith("contract: echo holds it")
    assert "reached, no sign-in" in done.stdout
    assert done.stdout.count(" ok in ") == 3


def test_a_broken_package_is_refused_naming_what_is_missing(site, service, tmp_path):
    stub, echo = service
    checked = _loadkit(site, "check-platform", "broken", "--platform-module", "broken_platform")
    assert checked.returncode == 1
    said = checked.stderr.strip().splitlines()
    assert len(said) == 1 and "trigger_fire neither offered nor not_offered" in said[0], said
    fixture = tmp_path / "fixture.json"
    fixture.write_text(
        json.dumps(
            {
                "api_url": echo.url,
                "stub_url": stub.url,
                "platform": "broken",
                "module": "broken_platform",
                "seeded": {},
            }
        )
    )
    run_dir = tmp_path / "run"
    ran = _run(site, echo.url, fixture, run_dir)
    ours = [line for line in ran.stderr.splitlines() if line.startswith("agent-loadkit: ")]
    assert ran.returncode == 2 and len(ours) == 1, ran.stderr[-2000:]
    assert "trigger_fire neither offered nor not_offered" in ours[0]
    assert not run_dir.exists()


def test_it_is_seeded_and_run_through_four_phases_without_a_password(site, service, tmp_path):
    stub, echo = service
    fixture = tmp_path / "fixture.json"
    seeded = _loadkit(
        site,
        "seed",
        "--platform",
        "echo",
        "--api-url",
        echo.url,
        "--stub-url",
        stub.url,
        "--fixture",
        str(fixture),
    )
    assert seeded.returncode == 0, seeded.stderr
    assert json.loads(fixture.read_text())["platform"] == "echo"
    run_dir = tmp_path / "run"
    ran = _run(site, echo.url, fixture, run_dir, "--stub-url", stub.url)
    assert (run_dir / "summary.json").exists(), ran.stderr[-2000:]
    record = json.loads((run_dir / "run.json").read_text())
    assert [p["name"] for p in record["scenario"]["phases"]] == [
        "ramp",
        "sustain",
        "burst",
        "recover",
    ]
    samples = read_samples(run_dir)
    assert len(samples) == len({s["index"] for s in samples}) == record["offered"] > 0
    outcomes = Counter((s["workload"], s["outcome"]) for s in samples)
    assert set(outcomes) == {
        ("api_read", "ok"),
        ("agent_run", "ok"),
        ("chat_stream", "ok"),
        ("chat_stream", "cancelled"),
    }, Counter((s["workload"], s["detail"]) for s in samples if s["outcome"] != "ok")
    calls = Counter(int(c["arrival"]) for c in read_table(run_dir, STUB_CALLS))
    runs = [int(s["index"]) for s in samples if s["workload"] == "agent_run"]
    assert {calls[k] for k in runs} == {3}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["offered"] == summary["counts"]["recorded"] == len(samples)
