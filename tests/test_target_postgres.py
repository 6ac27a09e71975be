"""Pool exhaustion on PostgreSQL fails the way it does on AgenticOS: wait the timeout, then 500.

A throwaway PostgreSQL 15 cluster, a target with one pooled connection
(DB_POOL_SIZE=1, DB_MAX_OVERFLOW=0, DB_POOL_TIMEOUT=1) and a stub whose first
token takes 2.5 s. One run holds the only connection across its model call;
two more sent at the same moment wait about a second and get 500. As on AgenticOS,
that 500 is an unhandled exception: uvicorn then closes the keep-alive connection
without having announced ``Connection: close`` (the race a client reusing it meets).
"""

from __future__ import annotations

import http.client
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
import requests

from stack.postgres import throwaway_postgres
from stack.reference_servers import stub_server, target_server
from tests.support.reference import make_agent, run_raw, signed_in
from workloads.agenticos.login import token_of

pytestmark = [pytest.mark.system, pytest.mark.slow]

FIRST_TOKEN_S = 2.5
SLOW_STUB = ("--first-token-ms", str(int(FIRST_TOKEN_S * 1000)), "--token-ms", "1", "--tokens", "4")
ONE_CONNECTION = {"DB_POOL_SIZE": "1", "DB_MAX_OVERFLOW": "0", "DB_POOL_TIMEOUT": "1"}
POOL_TIMEOUT_S = 1.0
# A refused run answers after the pool timeout; allow 1.5 s more for scheduling and HTTP
# on a busy 2-core machine, which still tells "waited the timeout" from "waited the model".
REFUSED_WITHIN_S = POOL_TIMEOUT_S + 1.5
# Seconds to wait for the server's close after a 500: well under uvicorn's 5 s keep-alive,
# so a close seen within it is the 500's, not the idle connection's.
CLOSE_WITHIN_S = 3.0


@dataclass
class Outcome:
    status: int
    seconds: float
    body: dict
    # The answer's Connection header ("" when absent), and whether the server then closed
    # the kept-alive connection (a 200's is asked to answer a second request instead).
    connection_header: str
    closed_after: bool


def timed_run(url: str, token: str, agent_id: str) -> Outcome:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    began = time.monotonic()
    conn.request(
        "POST",
        f"/api/v1/agents/{agent_id}/run",
        body=json.dumps({"prompt": "hold the connection"}),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    resp = conn.getresponse()
    body = json.loads(resp.read())
    seconds = time.monotonic() - began
    header = resp.getheader("Connection") or ""
    try:
        if resp.status == 200:
            conn.request("GET", "/api/v1/health")
            closed = conn.getresponse().status != 200
        else:
            conn.sock.settimeout(CLOSE_WITHIN_S)
            try:
                closed = conn.sock.recv(1) == b""
            except TimeoutError:
                closed = False
    finally:
        conn.close()
    return Outcome(resp.status, seconds, body, header, closed)


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
            futures = [
                pool.submit(timed_run, target.url, token_of(client.auth), agent_id)
                for _ in range(3)
            ]
            while not all(f.done() for f in futures):
                metrics = requests.get(target.url + "/metrics", timeout=5).text
                waiting_seen = max(waiting_seen, gauge(metrics, "pool_waiting"))
                checked_out_seen = max(checked_out_seen, gauge(metrics, "pool_checked_out"))
                time.sleep(0.05)
        outcomes = sorted((f.result() for f in futures), key=lambda o: o.status)
        recovered = run_raw(client, agent_id, "the pool is free again")
        runs = client.get("/runs", limit=100)["items"]

    assert [o.status for o in outcomes] == [200, 500, 500]
    held, *refused = outcomes
    assert held.seconds >= FIRST_TOKEN_S
    for outcome in refused:
        assert POOL_TIMEOUT_S * 0.95 <= outcome.seconds <= REFUSED_WITHIN_S, outcome
        assert outcome.body["error"]["code"] == "internal_error"
        assert "pool timeout" in outcome.body["error"]["message"]
        # Closed after the answer, as uvicorn does after an unhandled 500, unannounced.
        assert outcome.connection_header == "" and outcome.closed_after, outcome
    assert not held.closed_after, "a 200's keep-alive connection answers a second request"
    assert waiting_seen >= 1 and checked_out_seen == 1
    assert recovered["status"] == "completed"
    assert [r["status"] for r in runs] == ["completed", "completed"], "refused runs write no row"
