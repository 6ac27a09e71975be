"""A streamed turn timed token by token, end to end: the reference platform relays a stub
that paces its tokens 20 ms apart and stalls 250 ms once, mid-answer.

Each completed turn's own numbers must be the stub's pace (the last token less the first
is the answer's gaps, the stall among them; the longest gap is the stall), summary.json's
percentiles the nearest rank of those, the report's table there, and a threshold on the
longest gap below the stall fails the run while one on inter-token latency above the pace
passes.
"""

import json
import math

import pytest

from reports.ranks import percentile_ranks
from reports.thresholds import FAIL, PASS
from stack.generator_runs import platform, read_samples, write_scenario
from tests.support.generator_env import invalid_reasons, run_local

pytestmark = [pytest.mark.system, pytest.mark.slow]

TOKEN_MS, STALL_AFTER, STALL_MS = 20.0, 16, 250.0
STUB = (
    "--first-token-ms", "30", "--token-ms", str(TOKEN_MS), "--tokens", "32",
    "--stall-after", str(STALL_AFTER), "--stall-ms", str(STALL_MS),
)  # fmt: skip
# What a busy 2-core machine may add to or take from one gap, as the client reads it: the
# first token read late shortens the interval, the last read late lengthens it.
SLACK_MS = 25.0
THRESHOLDS = [
    {"workload": "chat_stream", "metric": "max_stall_ms", "limit": 200, "phase": "sustain"},
    {"workload": "chat_stream", "metric": "p50_itl_ms", "limit": 1000, "phase": "sustain"},
]


def nearest_rank(values: list[float], p: int) -> float:
    return sorted(values)[percentile_ranks(len(values))[(50, 95, 99).index(p)] - 1]


def completed(run_dir) -> list[dict]:
    """The completed turns, their numbers read as numbers."""
    numbers = ("tokens", "ttft_ms", "first_event_ms", "last_token_ms", "stall_ms")
    return [
        {**s, **{k: float(s[k]) for k in numbers}}
        for s in read_samples(run_dir)
        if s["outcome"] == "ok"
    ]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("stream-timing")
    with platform(tmp / "platform", model_knobs=STUB) as plat:
        scenario = write_scenario(
            tmp,
            [("sustain", 8.0, 3.0)],
            workloads={"chat_stream": 100},
            chat_cancel_share=0,
            thresholds=THRESHOLDS,
        )
        run_dir = tmp / "run"
        result = run_local(plat, scenario, run_dir)
        assert result.returncode in (0, 1), invalid_reasons(run_dir, result)
        yield run_dir, result


def test_each_turns_gaps_are_the_stubs_pace_with_its_stall(run):
    run_dir, _ = run
    done = completed(run_dir)
    assert len(done) >= 20
    for s in done:
        tokens = s["tokens"]
        assert tokens > STALL_AFTER
        answered = (tokens - 1) * TOKEN_MS + STALL_MS
        assert answered - SLACK_MS <= s["last_token_ms"] - s["ttft_ms"] <= 1.5 * answered
        assert STALL_MS - SLACK_MS <= s["stall_ms"] <= STALL_MS + 8 * SLACK_MS
        assert 0 < s["first_event_ms"] <= s["ttft_ms"]


def test_the_summary_is_the_nearest_rank_of_the_turns_and_the_report_shows_it(run):
    run_dir, _ = run
    done = completed(run_dir)
    chat = json.loads((run_dir / "summary.json").read_text())["whole_run"]["workloads"][
        "chat_stream"
    ]
    itl = [(s["last_token_ms"] - s["ttft_ms"]) / (s["tokens"] - 1) for s in done]
    tpot = [s["last_token_ms"] / s["tokens"] for s in done]
    for name, values in (
        ("itl_ms", itl),
        ("tpot_ms", tpot),
        ("stall_ms", [s["stall_ms"] for s in done]),
    ):
        assert chat[name]["count"] == len(done), name
        for q in ("p50", "p95", "p99"):
            # The report derives from times kept to the microsecond.
            assert math.isclose(chat[name][q], nearest_rank(values, int(q[1:])), abs_tol=1e-2), (
                name,
                q,
            )
    assert chat["output_tokens"] == sum(s["tokens"] for s in done)
    # A pace of 20 ms with one 250 ms stall in 31 gaps: about 28 ms a token, never 20.
    assert TOKEN_MS + (STALL_MS - SLACK_MS) / 31 <= chat["itl_ms"]["p50"] <= 1.5 * 28.1
    report = (run_dir / "report.md").read_text()
    assert "Streams token by token: requests offered in sustain" in report
    assert "| chat_stream | inter-token |" in report


def test_a_limit_on_the_longest_gap_below_the_stall_fails_the_run(run):
    run_dir, result = run
    assert result.returncode == 1
    checks = {
        t["metric"]: t["status"]
        for t in json.loads((run_dir / "summary.json").read_text())["thresholds"]
    }
    assert checks == {"max_stall_ms": FAIL, "p50_itl_ms": PASS}
