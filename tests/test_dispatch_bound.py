"""Bounded by design: a need beyond what the process can hold is said, and shows as lateness.

The generator runs with a small open-files limit against a platform whose model
answers slowly, so the schedule needs far more concurrent requests than the
process can hold. It must say so before load (one line) and in run.json and the
report, cap itself, and let the excess wait: the run is honestly invalid for its
lateness, every arrival still has its sample, and no sample is an OSError of the
generator's own (``Too many open files``).
"""

import math

import pytest

from engine.limits import FD_RESERVE, two_socket_share
from stack.generator_runs import lateness_ms, platform, read_run, read_samples, write_scenario
from tests.support.generator_env import expected_counts, run_local

pytestmark = [pytest.mark.system, pytest.mark.slow]

# Open files the generator may hold: its own needs (FD_RESERVE) and room for a few dozen.
OPEN_FILES = FD_RESERVE + 40
# What it can then hold: each arrival a socket, the cancelled chat turns a second one (half the
# mix is chat, a fifth of it cancelled).
BOUND = math.floor((OPEN_FILES - FD_RESERVE) / (1 + two_socket_share(0.5, 0.2)))
SLOW_STUB = ("--first-token-ms", "2500", "--token-ms", "5", "--tokens", "4")


def test_a_need_beyond_the_open_files_limit_is_capped_said_and_late_not_oserror(tmp_path):
    # 30/s of requests that each wait 2.5 s on the model: about 75 in flight, twice BOUND.
    workloads = {"agent_run": 1, "chat_stream": 1}
    scenario = write_scenario(tmp_path, [("sustain", 4.0, 30.0)], workloads=workloads)
    run_dir = tmp_path / "run"
    with platform(tmp_path / "platform", SLOW_STUB) as plat:
        result = run_local(plat, scenario, run_dir, open_files=OPEN_FILES)
    plan, _ = expected_counts(scenario)
    samples = read_samples(run_dir)
    record = read_run(run_dir)
    assert record["offered"] == len(samples) == plan.total(), result.stderr[-3000:]
    # Said before load, in one line, and kept in run.json and the report.
    note = record["connections_note"]
    assert f"capped at {BOUND}" in note and note in result.stderr
    assert record["connections"] == BOUND and record["connections_needed"] == 300
    assert note in (run_dir / "report.md").read_text()
    # No generator-side OSError: nothing failed; requests were served late (or, still
    # waiting for a slot when the drain ended, abandoned; or the lagging platform timed out).
    details = {s["detail"] for s in samples}
    assert not any("OSError" in d or "Too many" in d for d in details), details
    outcomes = {s["outcome"] for s in samples}
    assert "ok" in outcomes and outcomes <= {"ok", "cancelled", "timeout", "abandoned"}, details
    assert max(lateness_ms(s) for s in samples) > 1000
    # And the run is honestly invalid for it.
    assert result.returncode == 2, result.stderr[-3000:]
