"""The target's limits and startup refusals: 429 with Retry-After, one-line config errors.

Each limit test starts its own target with a low limit, since the windows are
per process and a minute long; the startup tests run ``python -m platforms.reference``
with one bad knob each and read its stderr.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
import requests

from stack.processes import ROOT, free_port
from stack.reference_servers import stub_server, target_server
from tests.support.reference import make_agent, run_raw
from workloads.agenticos.client import AgenticOSClient
from workloads.setup_client import APIError

pytestmark = pytest.mark.system

# Seconds a refused start may take: a cold import of FastAPI and SQLAlchemy on a busy machine.
STARTUP_TIMEOUT_S = 60
ADMIN_PASSWORD = "limits-Test-Password-91"


@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    with stub_server(tmp_path_factory.mktemp("limits_stub")) as server:
        yield server


def login(url: str, password: str = ADMIN_PASSWORD) -> requests.Response:
    form = {"username": "admin@loadkit.local", "password": password}
    return requests.post(url + "/api/v1/auth/login", data=form, timeout=10)


def test_sign_in_is_limited_per_minute_and_the_password_never_logged(tmp_path, stub):
    env = {"RATE_LIMIT_LOGIN_PER_MINUTE": "3", "TARGET_ADMIN_PASSWORD": ADMIN_PASSWORD}
    with target_server(tmp_path, stub.url, env=env) as target:
        statuses = [login(target.url).status_code for _ in range(3)]
        refused = login(target.url)
        output = target.output()
    assert statuses == [200, 200, 200]
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert refused.json()["error"]["code"] == "rate_limited"
    assert ADMIN_PASSWORD not in output


def test_runs_are_limited_per_user_with_retry_after(tmp_path, stub):
    env = {"RATE_LIMIT_RUN_PER_MINUTE": "2", "TARGET_ADMIN_PASSWORD": ADMIN_PASSWORD}
    with target_server(tmp_path, stub.url, env=env) as target:
        client = AgenticOSClient(target.url)
        client.sign_in("admin@loadkit.local", ADMIN_PASSWORD)
        _, agent_id = make_agent(client, stub.url + "/v1")
        done = [run_raw(client, agent_id, "hi")["status"] for _ in range(2)]
        with pytest.raises(APIError) as shed:
            run_raw(client, agent_id, "hi")
        runs = client.get("/runs")["total"]
    assert done == ["completed", "completed"]
    assert shed.value.status == 429
    assert 1 <= int(shed.value.headers["Retry-After"]) <= 60
    assert runs == 2, "a shed run must not write a run row"


def refused_start(*args: str, env: dict[str, str] | None = None) -> str:
    """Start ``python -m platforms.reference`` expecting a refusal; its one-line stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "platforms.reference", *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT_S,
    )
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_an_unsupported_database_url_is_one_line():
    line = refused_start("--database-url", "mysql://root@127.0.0.1/db", "--port", "0")
    assert "DATABASE_URL" in line and "sqlite:///" in line


def test_a_bad_pool_knob_is_one_line():
    line = refused_start("--port", "0", env={"DB_POOL_SIZE": "five"})
    assert line.startswith("target: DB_POOL_SIZE='five'")


def test_an_unreachable_database_is_one_line_without_its_password(tmp_path):
    url = f"postgresql://loadkit:pw-Secret-77@127.0.0.1:{free_port()}/loadkit"
    line = refused_start("--database-url", url, "--port", "0")
    assert "cannot prepare the database" in line and "DATABASE_URL" in line
    assert "pw-Secret-77" not in line


def test_a_taken_port_is_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = refused_start(
            "--port", str(port), "--database-url", f"sqlite:///{tmp_path / 'db.sqlite3'}"
        )
    assert f"cannot listen on 127.0.0.1:{port}" in line and "--port" in line
