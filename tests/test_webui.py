"""The web UI as an operator uses it, in a real headless Chromium against real processes.

Start a run from Locust's form at an arrival rate, change the rate while it runs,
and read the "Verdict so far" tab: the workloads, from our samples, with their
thresholds and validity, then the report's verdict once the run is stopped.
Locust's own view tells the truth too: its Users chart shows the offered rate (not a
flat 0) beside its RPS, the completed rate, and its request count is the offered count.
Chromium and its driver come from Debian (.ci/run installs them).
"""

from __future__ import annotations

import json
import urllib.request

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from stack.local import StackOptions, child_env
from stack.platforms import local_stack
from stack.processes import free_port, running
from stack.ui import locust_ui_command
from tests.support.browser import chromium
from tests.support.reference import FAST_STUB

pytestmark = [pytest.mark.system, pytest.mark.browser]

# Long enough for the UI to start a run and for samples to reach the tab on a busy machine.
WAIT_S = 60


@pytest.fixture
def browser(tmp_path):
    with chromium(tmp_path / "chromium") as session:
        yield session


def page_text(browser) -> str:
    """What the page shows, lower-cased: Locust's tabs are upper-cased by CSS."""
    return browser.find_element(By.TAG_NAME, "body").text.lower()


def patiently(browser) -> WebDriverWait:
    """A wait that reads a page replaced mid-read (a form's redirect) again, not fails."""
    return WebDriverWait(browser, WAIT_S, ignored_exceptions=(StaleElementReferenceException,))


def wait_for_text(browser, text: str) -> None:
    patiently(browser).until(lambda b: text.lower() in page_text(b))


def type_into(browser, name: str, text: str) -> None:
    """Type into a form field until it holds ``text``: React may re-render a field that
    was just revealed and drop what was typed, so the value is checked, not assumed."""

    def holds_text(b) -> bool:
        field = b.find_element(By.NAME, name)
        if field.is_displayed() and field.get_attribute("value") != text:
            field.clear()
            field.send_keys(text)
        return b.find_element(By.NAME, name).get_attribute("value") == text

    patiently(browser).until(holds_text)


def locust_stats(base: str) -> dict:
    """What Locust's page polls for its charts and tables."""
    with urllib.request.urlopen(base + "/stats/requests") as response:
        return json.loads(response.read())


def current_rate(base: str) -> float:
    with urllib.request.urlopen(base + "/arrival-rate") as response:
        page = response.read().decode()
    return float(page.split("<b>")[1].split("</b>")[0])


@pytest.mark.timeout(300)
def test_operator_sets_a_rate_changes_it_and_reads_the_verdict_tab(tmp_path, browser):
    options = StackOptions(workdir=tmp_path / "stack", documents=4, stub_args=FAST_STUB)
    with local_stack(options) as stack:
        port = free_port()
        command = locust_ui_command(stack, tmp_path / "run", port)[1:]
        with running(command, "/", port, tmp_path / "locust.log", child_env()) as ui:
            browser.get(ui.url)
            # Locust greys out its user fields for a shape; the rate is a custom parameter.
            users = browser.find_element(By.NAME, "userCount")
            assert not users.is_enabled()
            browser.find_element(By.XPATH, "//button[contains(., 'Custom parameters')]").click()
            type_into(browser, "rate", "6")
            browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
            wait_for_text(browser, "Verdict so far")
            assert current_rate(ui.url) == 6
            # Load is flowing: a change from now on is a second phase, not the first rate.
            samples = tmp_path / "run" / "samples.csv"
            WebDriverWait(browser, WAIT_S).until(
                lambda _: samples.exists() and samples.read_text().count("\n") > 1
            )
            # Locust's Users chart: the offered rate over its RPS's seconds (no users here): the
            # form's 6/s, once ten seconds of it are behind the run.
            WebDriverWait(browser, WAIT_S).until(
                lambda _: locust_stats(ui.url)["user_count"] == pytest.approx(6, abs=0.15)
            )

            # The operator changes the rate in a second tab, leaving the run's page open.
            run_page = browser.current_window_handle
            browser.switch_to.new_window("tab")
            browser.get(ui.url + "/arrival-rate")
            type_into(browser, "rate", "10")
            browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
            wait_for_text(browser, "Now: 10")
            assert current_rate(ui.url) == 10
            browser.close()
            browser.switch_to.window(run_page)

            browser.find_element(By.XPATH, "//button[contains(., 'Verdict so far')]").click()
            wait_for_text(browser, "thresholds pass")
            table = page_text(browser)
            for workload in ("api_read", "chat_stream", "agent_run", "rag_query"):
                assert workload in table
            assert "offered" in table and "recorded" in table

            assert "valid so far" in table and "tolerance 1.00%" in table

            # Stop once the new rate is in the samples (it starts a second after it is set).
            WebDriverWait(browser, WAIT_S).until(lambda _: "@10/s" in samples.read_text())
            browser.find_element(By.XPATH, "//button[contains(., 'Stop')]").click()
            wait_for_text(browser, "stopped")
            record = tmp_path / "run" / "run.json"
            WebDriverWait(browser, WAIT_S).until(
                lambda _: json.loads(record.read_text())["ended_at"]
            )
            # After Stop the tab shows the report's verdict: a stopped run is not a result.
            wait_for_text(browser, "final: invalid (exit 2)")
            # Locust counted one request per offered arrival: no first token of its own.
            offered = json.loads(record.read_text())["offered"]
            assert offered == samples.read_text().count("\n") - 1
            # (Locust caches its answer for 2 s: the last one may predate the end.)
            WebDriverWait(browser, WAIT_S).until(
                lambda _: locust_stats(ui.url)["stats"][-1]["num_requests"] == offered
            )
            assert all("TTFT" not in row["name"] for row in locust_stats(ui.url)["stats"])
    rates = [phase["rate"] for phase in json.loads(record.read_text())["phases"]]
    # The schedule followed the operator: 6/s from the form, then 10/s from the rate page.
    assert rates == [6, 10]
