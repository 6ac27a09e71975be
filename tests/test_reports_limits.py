"""The first screen's headline, the per-phase grid and the charts drawn against the limits.

On the hand-built golden run (tests/test_reports_golden.py works its numbers out):
each workload's p95 and error rate over the phases each is judged in, with the
count and the limit; every threshold in every phase, judged or marked not judged;
limit lines and the nearest-rank percentile curve in the charts.
"""

import math
import re

import numpy as np
import pytest

from reports.build import build_report
from reports.charts import (
    MAX_POINTS,
    curve_points,
    curve_ranks,
    distribution_chart,
    envelope,
    latency_chart,
    ttft_chart,
)
from reports.limits import headlines, measured_text, phase_grid
from reports.rundir import load_run
from reports.stats import run_stats
from reports.system import system_stats
from reports.verdict import judge
from tests.support.rundirs import GOLDEN, golden_copy


@pytest.fixture(scope="module")
def golden():
    run = load_run(GOLDEN)
    stats = run_stats(run)
    return run, stats, judge(run, stats, system_stats(run))


def test_headline_is_each_workload_over_its_judged_phases(golden):
    run, stats, verdict = golden
    api, chat = headlines(run, stats, verdict)
    # api_read in sustain: ok latencies 10, 20, 20, 20, 30, 40 and one HTTP 500.
    assert api.workload == "api_read" and api.latency_name == "p95"
    assert measured_text(api.latency) == "40.0 ms (n=6); ≤\u00a050.0 ms"
    assert api.latency.phases == ("sustain",)
    assert measured_text(api.errors) == "14.29% (n=7); ≤\u00a020.00%"
    # chat_stream's latency limit is its first token: 150 and 200 over ok == 1, p95 rank 2.
    assert chat.latency_name == "p95 first token"
    assert measured_text(chat.latency) == "200.0 ms (n=2); ≤\u00a0180.0 ms"
    assert measured_text(chat.errors) == "33.33% (n=3); ≤\u00a050.00%"
    assert chat.checks == "1 failed, 1 passed"


def test_grid_has_every_threshold_in_every_phase(golden):
    run, _, verdict = golden
    rows = {r.check: r for r in phase_grid(run, run_stats(run), verdict)}
    assert list(rows) == [
        "api_read p95",
        "api_read error rate",
        "chat_stream p95 first token",
        "chat_stream error rate",
        "api_read p99",
    ]
    ramp, sustain, burst, recover = rows["chat_stream p95 first token"].cells
    assert sustain == "FAIL: 200.0 ms (n=2)"
    assert all(cell.endswith(", not judged") for cell in (ramp, burst, recover))
    # api_read's p99 is judged in burst only, and its other phases still show their value.
    cells = rows["api_read p99"].cells
    assert cells[2].startswith(("pass: ", "FAIL: ")) and "(n=" in cells[2]
    assert cells[1].endswith("(n=6), not judged")


def test_first_screen_then_charts_in_the_markdown(tmp_path):
    path = golden_copy(tmp_path / "run")
    assert build_report(path) == 1
    markdown = (path / "report.md").read_text()
    glance, rest = markdown.split('<a id="charts"></a>')
    assert "| workload | p95 in sustain | error rate in sustain | checks |" in glance
    assert "| api_read | 40.0 ms (n=6); ≤\u00a050.0 ms | 14.29% (n=7); ≤\u00a020.00% |" in glance
    headings = re.findall(r"^## (.+)$", rest, flags=re.M)
    assert headings[:3] == ["Charts", "Each phase against the limits", "What was run"]


def test_latency_charts_draw_their_limits(golden):
    run, _, _ = golden
    assert "p95 limit" in latency_chart(run).svg
    assert "p95 limit" in ttft_chart(run).svg
    distribution = distribution_chart(run).svg
    assert "p95 limit (sustain)" in distribution and "p99 limit (burst)" in distribution
    # Each phase's curve carries its count: api_read has 6 timed successes in sustain.
    assert "sustain (n=6)" in distribution


@pytest.mark.parametrize("n", [1, 2, 97, 5000])
def test_percentile_curve_is_nearest_rank(n):
    values = np.random.default_rng(n).lognormal(3.0, 1.0, n)
    ordered = np.sort(values)
    # The values at the curve's ranks, as the report picks them (tests/test_reports_ranks.py).
    x, y = curve_points(n, ordered[curve_ranks(n) - 1])
    # Every drawn point is the value of the rank whose span starts there, ranks in order, the
    # maximum last (its step drawn on past the last start).
    starts, drawn = x[:-1], y[:-1]
    ranks = np.rint(n * (1.0 - 10.0**-starts)).astype(int) + 1
    assert np.array_equal(drawn, ordered[ranks - 1])
    assert ranks[0] == 1 and ranks[-1] == n and y[-1] == ordered[-1]
    assert np.all(np.diff(x) > 0) and np.all(np.diff(y) >= 0)
    if n <= 400:
        # Every rank drawn: the step under any percentile is its nearest-rank value.
        for p in (50.0, 95.0, 99.0):
            at = np.searchsorted(starts, -math.log10(1 - p / 100) - 1e-12, side="right") - 1
            assert drawn[at] == ordered[math.ceil(p * n / 100) - 1]


def test_a_long_probe_series_keeps_each_bins_lowest_and_highest_reading_in_time_order():
    t = np.arange(86_400.0)  # a day read every second
    values = np.random.default_rng(7).normal(size=t.size)
    kept_t, kept = envelope(t, values, 60.0)
    assert len(kept_t) == 2 * 1440 and np.all(np.diff(kept_t) > 0)
    for b in (0, 700, 1439):
        mine = values[b * 60 : (b + 1) * 60]
        assert sorted(kept[kept_t // 60 == b]) == [mine.min(), mine.max()]
    # A series a chart can draw whole is drawn whole.
    short = t[:MAX_POINTS]
    assert envelope(short, values[:MAX_POINTS], 60.0)[0] is short
