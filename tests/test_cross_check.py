"""bench/cross_check.py end to end on the reference platform: the kit's users sweep and the
independent client (bench/closed_loop.py) on one stack, one step each, agree on a turn's
p50 (the seed's 2.04 s model turn and the platform's share, taken by two tools that share
no code)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.cross_check import REPORT
from stack.local import child_env
from stack.processes import ROOT


@pytest.mark.system
@pytest.mark.slow
def test_the_kit_and_the_independent_client_agree_on_the_reference_platform(tmp_path):
    out = tmp_path / "cross"
    command = [sys.executable, "-m", "bench.cross_check", "--targets", "reference-sqlite"]
    command += ["--users", "1,2", "--step-s", "6", "--out", str(out)]
    done = subprocess.run(
        command, cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # Each step as listed, on both.
    first, step = json.loads((out / "reference-sqlite" / "client.json").read_text())
    assert (first["users"], step["users"]) == (1, 2), (first, step)
    assert step["ok"] == step["started"] > 0, step
    # Two users on 2.04 s turns: nothing queues, so a turn is the stub's and little more.
    assert 2000 < step["p50_ms"] < 4000, step
    (row,) = [line for line in (out / REPORT).read_text().splitlines() if line.startswith("| 2 |")]
    kit_p50, client_p50, apart = (cell.strip() for cell in row.split("|")[2:5])
    assert abs(float(apart.rstrip("%"))) <= 10, row
    assert float(kit_p50.replace(",", "")) > 2000 and float(client_p50.replace(",", "")) > 2000
