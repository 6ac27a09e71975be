"""The real opencode serve (opencode-ai 1.18.33 from npm), started as the kit starts it.

One opencode per module, on the stub, through its launcher (platforms/opencode/):
basic auth on every route, the pinned version, nothing of the operator's
environment passed on and every way out of 127.0.0.1 closed, and the launcher's
refusals. ``make opencode-install`` installs it (.ci/run does first); the module
skips, saying why, only when that cannot install.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from stack.local import PlatformUnavailable, StackOptions, child_env, password, running_stub
from stack.opencode import basic_auth, ensure_opencode, running_opencode
from stack.processes import ROOT

pytestmark = [pytest.mark.system, pytest.mark.slow, pytest.mark.timeout(600)]

# Set in the test's environment: opencode must not see it (its environment is made afresh).
LEAK = "LOADKIT_TEST_LEAK"


@pytest.fixture(scope="module")
def opencode(tmp_path_factory):
    """One opencode serve on a quick stub, for the whole module."""
    try:
        ensure_opencode()
    except PlatformUnavailable as exc:
        pytest.skip(f"opencode cannot install here: {exc}")
    base = tmp_path_factory.mktemp("opencode")
    options = StackOptions(workdir=base, stub_args=("--first-token-ms", "20", "--tokens", "8"))
    env = {**child_env(), LEAK: "1", "HTTPS_PROXY": "http://203.0.113.9:3128"}
    with running_stub(options, env) as stub, running_opencode(base / "state", stub.url, env) as oc:
        yield oc


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_it_answers_as_the_pinned_version_with_the_password(opencode):
    status, _, body = _get(opencode.url + "/global/health", basic_auth(password()))
    assert status == 200
    assert json.loads(body) == {"healthy": True, "version": "1.18.33"}


@pytest.mark.parametrize("path", ["/global/health", "/session", "/doc"])
def test_every_route_refuses_without_the_password(opencode, path):
    status, headers, _ = _get(opencode.url + path)
    assert status == 401
    assert headers.get("www-authenticate", headers.get("WWW-Authenticate")).startswith("Basic")
    assert _get(opencode.url + path, basic_auth(password() + "x"))[0] == 401


def test_it_runs_with_an_environment_of_its_own_that_reaches_only_loopback(opencode):
    """The launcher became opencode (same PID) with nothing of ours: no operator variable,
    HOME under its state, the npm registry and every proxy at a closed loopback port."""
    raw = Path(f"/proc/{opencode.pid}/environ").read_bytes().decode()
    environ = dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)
    assert "opencode-ai" in os.readlink(f"/proc/{opencode.pid}/exe")
    assert LEAK not in environ
    state = str(opencode.log.parent / "state")
    assert environ["HOME"].startswith(state)
    assert all(environ[k].startswith(state) for k in environ if k.startswith("XDG_"))
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "npm_config_registry"):
        assert environ[key] == "http://127.0.0.1:9/"
    assert environ["NO_PROXY"] == "127.0.0.1,localhost"
    assert environ["OPENCODE_DISABLE_MODELS_FETCH"] == "1"


def test_the_launcher_refuses_without_a_password_in_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OPENCODE_SERVER_PASSWORD"}
    done = subprocess.run(
        [sys.executable, "-m", "platforms.opencode", "--data-dir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "platforms.opencode: export OPENCODE_SERVER_PASSWORD (make opencode passes LOAD_PASSWORD)"
    ]
