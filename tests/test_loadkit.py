"""The ``loadkit`` command: every subcommand's --help lists its options, and ``loadkit run``
exits with the verdict (0 pass, 1 fail, 2 otherwise), never with Locust's own status.

The console script is what ``make venv`` installs (pyproject.toml's [project.scripts]);
these tests run it as CI would, from outside the checkout too.
"""

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from stack.generator_runs import PASSWORD, write_scenario
from stack.platforms import STACKS, platform_stack
from stack.processes import ROOT

pytestmark = pytest.mark.system

LOADKIT = Path(sys.executable).with_name("loadkit")
TIMEOUT_S = 300

# Every subcommand, with options its --help must list.
HELP = {
    "demo": ["--scale", "--run-dir", "--platform", "--database-url"],
    "ui": ["--web-port"],
    "seed": [
        *("--platform", "--api-url", "--stub-url", "--documents", "--fixture", "--wait"),
        *("--ca-file", "--insecure"),
    ],
    "preflight": ["--fixture", "--email", "--ca-file", "--insecure"],
    "run": [
        # Locust's own, passed on
        "--host",
        "--users",
        "--run-time",
        "--master",
        "--expect-workers-max-wait",
        # the kit's
        "--rate",
        "--scenario",
        "--scale",
        "--connections",
        "--run-dir",
        "--fixture",
        "--database-url-file",
        "--ca-file",
        "--insecure",
        "--accept-encoding",
        # the sweeps'
        "--sweep-users",
        "--sweep-rates",
        "--step-s",
        "--rest-s",
        "--sweep-stop",
    ],
    "report": ["RUN_DIR"],
    "compare": ["--force", "--p95-tolerance", "--min-samples", "--p95-floor-ms"],
    "sweep": ["run_dir"],
}


def loadkit(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LOADKIT), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def test_make_venv_installed_the_console_script():
    assert LOADKIT.exists(), "make venv installs loadkit into .venv/bin"
    top = loadkit("--help")
    assert top.returncode == 0
    for name in HELP:
        assert f"  {name} " in top.stdout, top.stdout
    # Exit 1 is more than a threshold: a check not measured, a workload not recovered.
    assert "0 pass; 1 fail: a check failed or could not be measured, or a workload" in top.stdout
    assert "compare            0 no regression; 1 a regression; 2 no answer" in top.stdout
    assert "sweep              0 written; 2 unreadable or not a sweep" in top.stdout
    unknown = loadkit("nope")
    assert unknown.returncode == 2 and "is not a command" in unknown.stderr


@pytest.mark.parametrize("name", list(HELP))
def test_each_subcommand_lists_every_option_it_takes(name, tmp_path):
    """From another directory: the command works outside the checkout."""
    result = loadkit(name, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: loadkit {name}")
    for option in HELP[name]:
        assert option in result.stdout, f"{name} --help lacks {option}"


def test_run_help_shows_the_kits_defaults_and_not_what_it_sets_itself():
    shown = loadkit("run", "--help").stdout
    for default in (
        "(default scenario.yaml)",
        "(default 1)",
        "(default fixture.json)",
        "(default admin@loadkit.local)",
        "(default 15)",
        "(default 0)",
    ):
        assert default in shown, default
    # Locust's own options this command sets (or a headless run never reads) are not listed.
    listed = {line.split()[0].rstrip(",") for line in shown.splitlines() if line.startswith("  -")}
    for locusts in ("-f", "--headless", "--only-summary", "--autostart", "--web-port", "-T"):
        assert locusts not in listed, locusts
    assert "my_test.py" not in shown
    demo = " ".join(loadkit("demo", "--help").stdout.split())
    # Every platform with a local stack, each with what the demo starts for it.
    assert f"--platform {{{','.join(STACKS)}}}" in demo
    for name in STACKS:
        assert f"{name} ({platform_stack(name).WHAT})" in demo, name


def test_make_load_test_help_shows_the_sweeps_options():
    result = subprocess.run(
        ["make", "--no-print-directory", "load-test-help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr
    sweeps = result.stdout.split("agent-loadkit sweeps")[1]
    for option in ("--sweep-users", "--sweep-rates", "--step-s", "--rest-s", "--sweep-stop"):
        assert option in sweeps


def _run(plat, tmp_path, *args: str, thresholds=()) -> tuple[subprocess.CompletedProcess, Path]:
    scenario = write_scenario(
        tmp_path,
        [("sustain", 3.0, 20.0)],
        workloads={"api_read": 1},
        thresholds=list(thresholds),
    )
    run_dir = tmp_path / "run"
    env = {"LOAD_PASSWORD": PASSWORD, "PATH": "/usr/bin:/bin"}
    result = loadkit(
        "run",
        "--fixture",
        str(plat.fixture),
        "--scenario",
        str(scenario),
        "--run-dir",
        str(run_dir),
        *args,
        env=env,
    )
    return result, run_dir


def test_a_failed_threshold_exits_1_as_its_summary_says(plat, tmp_path):
    impossible = {"workload": "api_read", "metric": "p50_ms", "limit": 0.001}
    result, run_dir = _run(plat, tmp_path, thresholds=[impossible])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert result.returncode == summary["exit_code"] == 1, result.stderr[-2000:]


def test_a_run_that_meets_its_thresholds_exits_as_its_summary_says(plat, tmp_path):
    generous = {"workload": "api_read", "metric": "error_rate", "limit": 1.0}
    result, run_dir = _run(plat, tmp_path, thresholds=[generous])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert result.returncode == summary["exit_code"], result.stderr[-2000:]
    assert summary["exit_code"] in (0, 2) and summary["verdict"] != "fail"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("--rate", "inf"), "agent-loadkit: --rate: 'inf' is not a finite number"),
        (("--rate", "1e12"), "agent-loadkit: --rate: '1e12' is outside its bound"),
        (("--connections", "1" + "0" * 400), "characters) is not a finite number"),
        (("--not-an-option",), "unrecognized arguments: --not-an-option"),
        (
            ("--ca-file", "/nonexistent/ca.pem"),
            "agent-loadkit: --ca-file: cannot read /nonexistent/ca.pem (No such file or directory)",
        ),
        (
            ("--accept-encoding", "gzip, zstd"),
            "agent-loadkit: --accept-encoding: 'zstd' is not a coding the kit decodes",
        ),
    ],
)
def test_bad_input_and_locusts_own_refusals_exit_2_in_one_line(plat, tmp_path, args, line):
    """Locust exits 1 on some of its own refusals: loadkit run never lets that read as FAIL."""
    result, run_dir = _run(plat, tmp_path, *args)
    assert result.returncode == 2, result.stderr[-2000:]
    assert line in result.stderr and "Traceback" not in result.stderr
    assert not (run_dir / "summary.json").exists()


def test_the_options_numbers_the_fixture_and_the_scenario_are_refused_at_once(plat, tmp_path):
    """An operator who fixes one input should not meet the next on the following try."""
    missing = tmp_path / "none.json"
    result, run_dir = _run(
        plat, tmp_path, "--rate", "inf", "--scale", "-1", "--fixture", str(missing)
    )
    assert result.returncode == 2, result.stderr[-2000:]
    ours = [line for line in result.stderr.splitlines() if line.startswith("agent-loadkit: ")]
    assert [line.split(":")[1].strip() for line in ours] == ["--scale", "--rate", "fixture"], ours
    assert not (run_dir / "summary.json").exists()


def test_a_web_port_in_use_is_one_line_and_exit_2_before_anything_starts(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = loadkit("ui", "--web-port", str(port), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"ui: --web-port {port}: 127.0.0.1:{port} is taken (Address already in use); "
        "pass another --web-port (or WEB_PORT)"
    ]
    assert "starting stub" not in result.stdout


def test_a_bad_fixture_and_a_planted_link_are_refused_in_one_line_each_with_exit_2(plat, tmp_path):
    fixture = json.loads(plat.fixture.read_text())
    bad = tmp_path / "bad.json"
    seeded = {**fixture["seeded"], "collection_name": "x\r\nX-Evil: 1"}
    bad.write_text(json.dumps({**fixture, "api_url": 8000, "seeded": seeded}))
    result, _ = _run(plat, tmp_path, "--fixture", str(bad))
    ours = [line for line in result.stderr.splitlines() if line.startswith("agent-loadkit: ")]
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert [line.split(":")[1].strip() for line in ours] == [
        "fixture.api_url",
        "fixture.seeded.collection_name",
    ]
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "run.json").symlink_to(tmp_path / "elsewhere.json")
    result, _ = _run(plat, tmp_path, "--run-dir", str(linked))
    assert result.returncode == 2
    assert f"agent-loadkit: --run-dir: {linked / 'run.json'} is a symlink" in result.stderr
    assert not (tmp_path / "elsewhere.json").exists()
