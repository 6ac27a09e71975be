"""Pool exhaustion on PostgreSQL fails the way it does on AgenticOS: wait the timeout, then 500.

A throwaway PostgreSQL 15 cluster, a target with one pooled connection
(DB_POOL_SIZE=1, DB_MAX_OVERFLOW=0, DB_POOL_TIMEOUT=1) and a stub whose first
token takes 2.5 s. One run holds the only connection across its model call;
two more sent at the same moment wait about a second and get 500.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
import requests

from tests.support.postgres import throwaway_postgres
from tests.support.reference import make_agent, signed_in, stub_server, target_server

pytestmark = [pytest.mark.system, pytest.mark.slow]

FIRST_TOKEN_S = 2.5
SLOW_STUB = ("--first-token-ms", str(int(FIRST_TOKEN_S * 1000)), "--token-ms", "1", "--tokens", "4")
ONE_CONNECTION = {"DB_POOL_SIZE": "1", "DB_MAX_OVERFLOW": "0", "DB_POOL_TIMEOUT": "1"}
POOL_TIMEOUT_S = 1.0
# A refused run answers after the pool timeout; allow 1.5 s more for scheduling and HTTP
# on a busy 2-core machine, which still tells "waited the timeout" from "waited the model".
REFUSED_WITHIN_S = POOL_TIMEOUT_S + 1.5


@dataclass
class Outcome:
    status: int
    seconds: float
    body: dict


def timed_run(url: str, token: str, agent_id: str) -> Outcome:
    began = time.monotonic()
    resp = requests.post(
        f"{url}/api/v1/agents/{agent_id}/run",
        json={"prompt": "hold the connection"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    return Outcome(resp.status_code, time.monotonic() - began, resp.json())


def gauge(metrics: str, name: str) -> float:
    return float(re.search(rf"^{name} (\S+)$", metrics, re.MULTILINE).group(1))


def test_runs_beyond_the_pool_wait_the_timeout_then_fail_with_500(tmp_path):
    with (
        throwaway_postgres(tmp_path) as database_url,
        stub_server(tmp_path, *SLOW_STUB) as stub,
        target_server(tmp_path, stub.url, database_url=database_url, env=ONE_CONNECTION) as target,
    ):
        client = signed_in(target.url)
        _, agent_id = make_agent(client, stub.url + "/v1")
        waiting_seen, checked_out_seen = 0.0, 0.0
        with ThreadPoolExecutor(3) as pool:
            futures = [pool.submit(timed_run, target.url, client.token, agent_id) for _ in range(3)]
            while not all(f.done() for f in futures):
                metrics = requests.get(target.url + "/metrics", timeout=5).text
                waiting_seen = max(waiting_seen, gauge(metrics, "pool_waiting"))
                checked_out_seen = max(checked_out_seen, gauge(metrics, "pool_checked_out"))
                time.sleep(0.05)
        outcomes = sorted((f.result() for f in futures), key=lambda o: o.status)
        recovered = client.run_agent(agent_id, "the pool is free again")
        runs = client.get("/runs", limit=100)["items"]

    assert [o.status for o in outcomes] == [200, 500, 500]
    held, *refused = outcomes
    assert held.seconds >= FIRST_TOKEN_S
    for outcome in refused:
        assert POOL_TIMEOUT_S * 0.95 <= outcome.seconds <= REFUSED_WITHIN_S, outcome
        assert outcome.body["error"]["code"] == "internal_error"
        assert "pool timeout" in outcome.body["error"]["message"]
    assert waiting_seen >= 1 and checked_out_seen == 1
    assert recovered["status"] == "completed"
    assert [r["status"] for r in runs] == ["completed", "completed"], "refused runs write no row"
