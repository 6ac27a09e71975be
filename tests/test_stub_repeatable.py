"""Same seed, same faults; same text, same vector; bad knobs refused in one line.

A resilience run is compared with the last one, which only means something if
the stub misbehaves the same way both times and its vectors never move.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
import struct
import subprocess
import sys
import urllib.error
import urllib.request

import aiohttp
import pytest

from stack.processes import ROOT, free_port, running
from stub.config import parse_config
from stub.faults import Fault, FaultPlan

FAULT_FLAGS = ["--error-rate", "0.25", "--rate-limit-rate", "0.2", "--timeout-rate", "0.1"]
N_REQUESTS = 40
# How often a waiting request checks whether the stub is holding it.
POLL_S = 0.02
_FATE = {Fault.ERROR: "500", Fault.RATE_LIMIT: "429", Fault.TIMEOUT: "held", None: "200"}


@contextlib.contextmanager
def _stub(tmp_path, name, *flags, env=None):
    port = free_port()
    args = ["-m", "stub", "--port", str(port), *flags]
    with running(args, "/health", port, tmp_path / f"{name}.log", env=env) as server:
        yield server


def _post(url: str, body: dict, timeout: float = 5.0) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=json.dumps(body).encode())
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def _fates(url: str) -> list[str]:
    """The fate of each of N_REQUESTS model requests, sent one after another.

    A request the stub holds never answers; it is recognised by the stub's own timeout
    count rising while the request waits, not by a client deadline a slow machine could miss.
    """

    async def run() -> list[str]:
        fates = []
        async with aiohttp.ClientSession() as session:
            for k in range(N_REQUESTS):
                path = "/v1/embeddings" if k % 2 else "/api/embed"
                held_before = _stats(url)["faults"]["timeouts"]
                answer = asyncio.create_task(session.post(url + path, json={"input": f"t{k}"}))
                while not answer.done():
                    await asyncio.wait([answer], timeout=POLL_S)
                    if not answer.done() and _stats(url)["faults"]["timeouts"] > held_before:
                        answer.cancel()
                        fates.append("held")
                        break
                else:
                    fates.append(str((await answer).status))
        return fates

    return asyncio.run(run())


def _stats(url: str) -> dict:
    with urllib.request.urlopen(url + "/stats", timeout=5) as resp:
        return json.load(resp)


@pytest.mark.system
def test_same_seed_same_fault_sequence(tmp_path):
    runs = []
    for name, seed in (("first", "7"), ("again", "7"), ("other", "8")):
        with _stub(tmp_path, name, "--seed", seed, *FAULT_FLAGS) as server:
            runs.append(_fates(server.url))
            stats = _stats(server.url)
        faults = stats["faults"]
        assert faults["errors"] == runs[-1].count("500")
        assert faults["rate_limited"] == runs[-1].count("429")
        assert faults["timeouts"] == runs[-1].count("held")
    first, again, other = runs
    assert first == again
    assert first != other
    assert {"200", "500", "429", "held"} <= set(first)
    # The k-th model request gets the k-th draw of the seeded plan, whatever its endpoint.
    plan = FaultPlan(parse_config(["--seed", "7", *FAULT_FLAGS]))
    assert first == [_FATE[plan.next_fault()] for _ in range(N_REQUESTS)]


def test_same_seed_same_jitter():
    config = parse_config(["--seed", "3", "--jitter", "0.5"])
    plans = [FaultPlan(config), FaultPlan(config)]
    spreads = [[plan.spread(1.0) for _ in range(20)] for plan in plans]
    assert spreads[0] == spreads[1]
    assert all(0.5 <= s <= 1.5 for s in spreads[0])
    assert len(set(spreads[0])) == 20


def _vectors(url: str, text: str) -> list[list[float]]:
    """The vector of text from every embedding path and encoding the stub serves."""
    _, plain = _post(url + "/v1/embeddings", {"input": text, "encoding_format": "float"})
    _, packed = _post(url + "/v1/embeddings", {"input": [text], "encoding_format": "base64"})
    _, embed = _post(url + "/api/embed", {"model": "nomic-embed-text", "input": text})
    _, legacy = _post(url + "/api/embeddings", {"model": "nomic-embed-text", "prompt": text})
    raw = base64.b64decode(json.loads(packed)["data"][0]["embedding"])
    return [
        json.loads(plain)["data"][0]["embedding"],
        list(struct.unpack(f"<{len(raw) // 4}f", raw)),
        json.loads(embed)["embeddings"][0],
        json.loads(legacy)["embedding"],
    ]


@pytest.mark.system
def test_same_text_same_vector_across_paths_and_processes(tmp_path):
    with _stub(tmp_path, "one", "--seed", "1") as server:
        one = _vectors(server.url, "the same words")
        different = _vectors(server.url, "other words")[0]
    with _stub(tmp_path, "two", "--seed", "2") as server:
        two = _vectors(server.url, "the same words")
    for vector in one + two:
        assert vector == pytest.approx(one[0], abs=1e-7)
    assert len(one[0]) == 768
    assert sum(v * v for v in one[0]) == pytest.approx(1.0, abs=1e-5)
    cosine = sum(a * b for a, b in zip(one[0], different, strict=True))
    assert abs(cosine) < 0.2


@pytest.mark.system
def test_embedding_dim_and_tokens_from_environment(tmp_path):
    env = {"STUB_EMBEDDING_DIM": "16", "STUB_TOKENS": "3", "STUB_FIRST_TOKEN_MS": "0"}
    with _stub(tmp_path, "env", env=env) as server:
        _, body = _post(server.url + "/v1/embeddings", {"input": "x"})
        assert len(json.loads(body)["data"][0]["embedding"]) == 16
        _, body = _post(server.url + "/v1/chat/completions", {"messages": []})
        assert json.loads(body)["usage"]["completion_tokens"] == 3


def _refusal(*flags: str, env: dict | None = None) -> str:
    """Run the stub with bad knobs; return its one line of complaint after checking the exit."""
    done = subprocess.run(
        [sys.executable, "-m", "stub", *flags],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.system
@pytest.mark.parametrize(
    ("flags", "env", "names"),
    [
        (["--first-token-ms", "-1"], None, "--first-token-ms must be >= 0"),
        (["--token-ms", "-0.5"], None, "--token-ms must be >= 0"),
        (["--error-rate", "1.5"], None, "--error-rate must be within [0, 1]"),
        (["--rate-limit-rate", "-0.1"], None, "--rate-limit-rate must be within [0, 1]"),
        (["--timeout-rate", "0.6", "--error-rate", "0.6"], None, "must be <= 1"),
        (["--tokens", "0"], None, "--tokens must be >= 1"),
        (["--tokens", "many"], None, "--tokens must be an integer"),
        ([], {"STUB_TIMEOUT_RATE": "2"}, "STUB_TIMEOUT_RATE must be within [0, 1]"),
        (["--no-such-flag"], None, "unrecognized arguments: --no-such-flag"),
    ],
)
def test_bad_knob_is_one_line_and_exit_2(flags, env, names):
    assert names in _refusal(*flags, env=env)


@pytest.mark.system
def test_port_in_use_is_one_line_and_exit_2():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = _refusal("--port", str(port))
        assert f"--port {port} is in use" in line
        assert "--processes" not in _refusal("--port", str(port), "--processes", "2")


@pytest.mark.system
def test_a_stopped_stub_gets_its_port_back_while_its_connections_linger(tmp_path):
    port = free_port()
    args = ["-m", "stub", "--port", str(port)]
    with running(args, "/health", port, tmp_path / "first.log"):
        client = socket.create_connection(("127.0.0.1", port))
        client.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert client.recv(1024).startswith(b"HTTP/1.1 200")
    # The stub closed the kept-alive connection first, so its side sits in TIME_WAIT.
    client.close()
    with running(args, "/health", port, tmp_path / "second.log") as again:
        assert again.proc.poll() is None
