"""The HTML report read in a real headless Chromium at 1280 px and on a 390 px phone.

The first screen must state validity and the verdict with its sample counts
before any scrolling, and each workload's headline under them; on a laptop the
first chart starts within two screens; no table is ever cut off (none scrolls
sideways, at either width: cells wrap, and a phone shows a wide table as cards)
and the page itself never scrolls sideways. Chromium and its driver come from
Debian (.ci/run installs them).
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.synthetic_runs import synthetic_probes, synthetic_samples, write_run_dir
from inputs.scenario import load_scenario
from reports.build import build_report
from tests.support import browser

pytestmark = [pytest.mark.system, pytest.mark.browser]

SCENARIO = load_scenario().scaled(0.2)
# (width, height, device pixel ratio, mobile): a laptop, and a 390 px phone.
SCREENS = {"desktop": (1280, 800, 1, False), "phone": (390, 844, 3, True)}

# Where each thing the first screen must show sits, as the page lays it out.
FIRST_SCREEN = """
const glance = document.getElementById('at-a-glance');
const box = (el) => el.getBoundingClientRect();
const banner = glance.querySelector('.banner');
const [facts, headline] = glance.querySelectorAll('table');
const cells = [...facts.querySelectorAll('td')];
return {
  viewport: [window.innerWidth, window.innerHeight],
  pageWidth: document.documentElement.scrollWidth,
  verdict: [banner.querySelector('p').textContent, box(banner.querySelector('p')).bottom],
  finding: [banner.querySelector('li').textContent, box(banner.querySelector('li')).bottom],
  validity: [cells[cells.length - 1].textContent, box(cells[cells.length - 1]).bottom],
  headline: [...headline.querySelectorAll('tbody tr')].map(
    (tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)),
  firstChart: box(document.querySelector('figure.chart')).top,
  charts: [...document.querySelectorAll('figure.chart')].filter((f) => f.querySelector('svg'))
    .map((f) => ({
      overflows: f.scrollWidth > f.clientWidth,
      says: getComputedStyle(f.querySelector('figcaption'), '::after').content,
    })),
  cutOff: [...document.querySelectorAll('.table-wrap')]
    .filter((w) => w.scrollWidth > w.clientWidth || box(w).right > window.innerWidth)
    .map((w) => [w.closest('section') ? w.closest('section').id : 'glance',
                 w.querySelector('th').textContent, w.scrollWidth, w.clientWidth]),
};
"""


@pytest.fixture(scope="module")
def failing_report(tmp_path_factory):
    """A run whose agent_run was shed entirely in recover: FAIL, with counts to show."""
    samples = synthetic_samples(SCENARIO)
    shed = (samples.phase == "recover") & (samples.workload == "agent_run")
    samples.loc[shed, ["status", "ok", "outcome", "detail"]] = [429, 0, "shed", "HTTP 429"]
    samples.loc[shed, "ttft_ms"] = np.nan
    path = write_run_dir(
        tmp_path_factory.mktemp("phone") / "run", SCENARIO, samples, synthetic_probes(SCENARIO)
    )
    assert build_report(path) == 1
    return path / "report.html"


@pytest.fixture(scope="module")
def chromium(tmp_path_factory):
    with browser.chromium(tmp_path_factory.mktemp("chromium")) as session:
        yield session


@pytest.mark.parametrize("screen", SCREENS)
def test_first_screen_states_validity_and_the_verdict_with_counts(chromium, failing_report, screen):
    width, height, ratio, mobile = SCREENS[screen]
    chromium.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": ratio, "mobile": mobile},
    )
    chromium.get(failing_report.as_uri())
    page = chromium.execute_script(FIRST_SCREEN)
    assert page["viewport"] == [width, height]
    verdict, verdict_bottom = page["verdict"]
    finding, finding_bottom = page["finding"]
    validity, validity_bottom = page["validity"]
    assert verdict.startswith("FAIL (exit 1)") and verdict_bottom <= height
    assert "agent_run error rate in recover" in finding and "n=" in finding
    assert finding_bottom <= height, page
    assert validity.startswith("valid") and validity_bottom <= height
    # Each workload's headline: its p95 and error rate with their counts and limits.
    workloads = [row[0] for row in page["headline"]]
    assert workloads == list(SCENARIO.mix), page["headline"]
    assert all("(n=" in row[1] and "(n=" in row[2] and "≤" in row[2] for row in page["headline"])
    if screen == "desktop":
        assert page["firstChart"] <= 2 * height, page["firstChart"]
    # No table is cut off, and the page itself never scrolls sideways.
    assert page["cutOff"] == [], page["cutOff"]
    assert page["pageWidth"] <= width, page
    # A chart wider than the screen scrolls in its own box, and its caption says so.
    assert page["charts"], page
    for chart in page["charts"]:
        scrolls = "scroll sideways for the whole chart" in chart["says"]
        assert scrolls == chart["overflows"] == (screen == "phone"), chart
