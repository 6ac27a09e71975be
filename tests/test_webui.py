"""The web UI as an operator uses it, in a real headless Chromium against real processes.

The start form asks first how load is offered, the rate alone at the top in arrival-rate
mode, users chosen plainly, and shows no field that does nothing for the shape. Start a
run at an arrival rate, change the rate while it runs, and read the "Verdict so far" tab:
the workloads, from our samples, with their thresholds and validity, then the report's
verdict once the run is stopped, judging nothing. Locust's own view tells the truth too:
its Users chart shows the offered rate (not a flat 0) beside its RPS, the completed rate,
and its request count is the offered count. Then users mode, chosen in the same form.
One stack and one Locust web UI serve the module. Chromium and its driver come from
Debian (.ci/run installs them).
"""

from __future__ import annotations

import json
import urllib.request

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from stack.generator_runs import read_samples
from stack.local import StackOptions, child_env
from stack.platforms import local_stack
from stack.processes import free_port, running
from stack.reference_servers import FAST_STUB
from stack.ui import locust_ui_command
from tests.support.browser import chromium
from tests.support.generator_env import written

pytestmark = [pytest.mark.system, pytest.mark.browser]

# Long enough for the UI to start a run and for samples to reach the tab on a busy machine.
WAIT_S = 60


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("chromium")) as session:
        yield session


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """The local stack (stub, reference target, seeded fixture) every UI of the module uses."""
    root = tmp_path_factory.mktemp("webui")
    options = StackOptions(workdir=root / "stack", documents=4, stub_args=FAST_STUB)
    with local_stack(options) as started:
        yield started, root


@pytest.fixture(scope="module")
def ui(stack):
    """Locust's web UI on the stack, for the module's runs; its first test's run directory is
    ``run``, the next ``run-2``."""
    started, root = stack
    port = free_port()
    command = locust_ui_command(started, root / "run", port)[1:]
    with running(command, "/", port, root / "locust.log", child_env()) as server:
        yield server.url, root


def shown(browser, css: str) -> list:
    """The elements matching ``css`` that the page shows."""
    return [e for e in browser.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()]


def kit_field(browser, name: str):
    """The start form's own block's field called ``name``, once the page has drawn it."""
    css = f"#loadkit-load [data-kit-name='{name}']"
    patiently(browser).until(lambda b: shown(b, css))
    return shown(browser, css)[0]


def new_test_form(browser, url: str) -> None:
    """Locust's start form: the page itself before any test, its "New" dialog after one."""
    browser.get(url)

    def drawn(b) -> bool:
        block = b.find_elements(By.CSS_SELECTOR, "#loadkit-load")
        again = [e for e in b.find_elements(By.XPATH, "//button[.='New']") if e.is_displayed()]
        if again and not block:
            again[0].click()
        return bool(block)

    patiently(browser).until(drawn)


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


@pytest.mark.timeout(120)
def test_the_form_asks_how_load_is_offered_first_and_hides_what_does_not_apply(ui, browser):
    url, _ = ui
    new_test_form(browser, url)
    rate = kit_field(browser, "rate")
    host = browser.find_element(By.NAME, "host")
    # The rate alone at the top: above the host, with Locust's users fields not shown.
    assert rate.location["y"] < host.location["y"]
    assert not shown(browser, "input[name='userCount']:not([data-kit])")
    assert not shown(browser, "input[name='spawnRate']:not([data-kit])")
    assert not shown(browser, "#loadkit-load [data-kit-name='userCount']")
    # The custom parameters hold no rate, and no sweep or scale field this shape ignores.
    browser.find_element(By.XPATH, "//button[contains(., 'Custom parameters')]").click()
    patiently(browser).until(lambda b: shown(b, "input[name='scenario']"))
    assert len(browser.find_elements(By.CSS_SELECTOR, "input[name='rate']")) == 1
    for field in ("sweepUsers", "sweepRates", "stepS", "restS", "sweepStop", "scale"):
        assert browser.find_elements(By.NAME, field), field
        assert not shown(browser, f"[name='{field}']"), field
    # Users mode, chosen plainly: its two fields in place of the rate.
    Select(browser.find_element(By.NAME, "load_mode")).select_by_value("users")
    assert kit_field(browser, "userCount").is_displayed()
    assert kit_field(browser, "spawnRate").is_displayed()
    assert not shown(browser, "#loadkit-load [data-kit-name='rate']")
    # A start without a rate is refused in the form, with the reason.
    Select(browser.find_element(By.NAME, "load_mode")).select_by_value("rate")
    kit_field(browser, "rate")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_for_text(browser, "Arrival rate: set how many arrivals to offer per second")


@pytest.mark.timeout(300)
def test_operator_sets_a_rate_changes_it_and_reads_the_verdict_tab(ui, browser):
    url, root = ui
    new_test_form(browser, url)
    ui_url, run_dir = url, root / "run"
    type_into(browser, "rate", "6")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_for_text(browser, "Verdict so far")
    assert current_rate(ui_url) == 6
    # Load is flowing: a change from now on is a second phase, not the first rate.
    WebDriverWait(browser, WAIT_S).until(lambda _: written(run_dir) > 0)
    # Locust's Users chart: the offered rate over its RPS's seconds (no users here): the
    # form's 6/s, once ten seconds of it are behind the run.
    WebDriverWait(browser, WAIT_S).until(
        lambda _: locust_stats(ui_url)["user_count"] == pytest.approx(6, abs=0.15)
    )

    # The operator changes the rate in a second tab, leaving the run's page open.
    run_page = browser.current_window_handle
    browser.switch_to.new_window("tab")
    browser.get(ui_url + "/arrival-rate")
    type_into(browser, "rate", "10")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_for_text(browser, "Now: 10")
    assert current_rate(ui_url) == 10
    browser.close()
    browser.switch_to.window(run_page)

    browser.find_element(By.XPATH, "//button[contains(., 'Verdict so far')]").click()
    # "so far: 7 of 10 thresholds pass", or on a machine too busy to send on time "so far:
    # INVALID, 7 of 10 thresholds would pass": the tab says which, as the report would.
    patiently(browser).until(
        lambda b: "thresholds pass" in page_text(b) or "thresholds would pass" in page_text(b)
    )
    table = page_text(browser)
    for workload in ("api_read", "chat_stream", "agent_run", "rag_query"):
        assert workload in table
    assert "offered" in table and "recorded" in table
    assert "tolerance 1.00%" in table
    assert ("so far: invalid" in table) == ("invalid: the driver fell behind" in table)

    # Stop once the new rate is in the samples (it starts a second after it is set).
    WebDriverWait(browser, WAIT_S).until(
        lambda _: any(s["phase"].endswith("@10/s") for s in read_samples(run_dir))
    )
    browser.find_element(By.XPATH, "//button[contains(., 'Stop')]").click()
    wait_for_text(browser, "stopped")
    record = run_dir / "run.json"
    WebDriverWait(browser, WAIT_S).until(lambda _: json.loads(record.read_text())["ended_at"])
    # After Stop the tab shows the report's verdict: a stopped run is not a result, and
    # the tab judges nothing, saying so, where it said "pass" while the run went.
    wait_for_text(browser, "final: invalid (exit 2)")
    wait_for_text(browser, "nothing is judged: the operator stopped the run")
    table = page_text(browser)
    assert "not judged (stopped by the operator)" in table
    assert ": pass" not in table
    # Locust counted one request per offered arrival: no first token of its own.
    offered = json.loads(record.read_text())["offered"]
    assert offered == written(run_dir)
    # (Locust caches its answer for 2 s: the last one may predate the end.)
    WebDriverWait(browser, WAIT_S).until(
        lambda _: locust_stats(ui_url)["stats"][-1]["num_requests"] == offered
    )
    assert all("TTFT" not in row["name"] for row in locust_stats(ui_url)["stats"])
    rates = [phase["rate"] for phase in json.loads(record.read_text())["phases"]]
    # The schedule followed the operator: 6/s from the form, then 10/s from the rate page.
    assert rates == [6, 10]


@pytest.mark.timeout(300)
def test_users_mode_is_chosen_in_the_same_form(ui, browser):
    url, root = ui
    new_test_form(browser, url)
    Select(browser.find_element(By.NAME, "load_mode")).select_by_value("users")
    for name in ("userCount", "spawnRate"):
        kit_field(browser, name).send_keys("3")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    record = root / "run-2" / "run.json"
    WebDriverWait(browser, WAIT_S).until(lambda _: written(root / "run-2") > 0)
    browser.find_element(By.XPATH, "//button[contains(., 'Stop')]").click()
    WebDriverWait(browser, WAIT_S).until(
        lambda _: record.exists() and json.loads(record.read_text())["ended_at"]
    )
    run = json.loads(record.read_text())
    # Closed-loop users, as many as the form asked for, and no arrival rate.
    assert run["mode"] == "users"
    assert [phase["name"] for phase in run["phases"]] == ["users=3"]
    assert {phase["rate"] for phase in run["phases"]} == {0}


@pytest.mark.timeout(180)
def test_with_the_class_picker_each_shape_shows_only_the_fields_it_takes(stack, browser):
    started, root = stack
    port = free_port()
    command = [*locust_ui_command(started, root / "picker-run", port)[1:], "--class-picker"]
    with running(command, "/", port, root / "picker.log", child_env()) as server:
        new_test_form(browser, server.url)
        fields = ("sweepUsers", "sweepRates", "stepS", "scale")
        layout = """
          const box = (n) => document.querySelector(`[name=${n}]`).closest('.MuiFormControl-root');
          return {
            block: !document.querySelector('#loadkit-load').hidden,
            rate: !!document.querySelector('#loadkit-load [name=rate]'),
            users: !!document.querySelector('#loadkit-load [name=userCount]'),
            fields: arguments[0].filter((n) => getComputedStyle(box(n)).display !== 'none'),
          };
        """
        expected = {
            "ConstantRateShape": (True, True, False, []),
            "UsersShape": (True, False, True, []),
            "ConcurrencySweepShape": (False, False, False, ["sweepUsers", "stepS"]),
            "RateSweepShape": (False, False, False, ["sweepRates", "stepS"]),
            "FourPhaseShape": (False, False, False, ["scale"]),
        }
        for shape, (block, rate, users, applies) in expected.items():
            Select(browser.find_element(By.NAME, "shapeClass")).select_by_value(shape)
            want = {"block": block, "rate": rate, "users": users, "fields": applies}
            patiently(browser).until(lambda b, want=want: b.execute_script(layout, fields) == want)
