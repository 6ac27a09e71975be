"""The sweep report from committed sweeps: the run report's Document, templates and number
formatting, the same figures as sweep.json, and tables a laptop and a phone can read; and
sweep.json, written and read through its type (reports/sweep/record.py).

The numbers themselves are measured by tests/test_capacity.py against real sweeps; here
two committed sweeps (users mode with memory, open arrival with the stub's overhead) are
rendered, and the HTML is read in headless Chromium as tests/test_reports_phone.py does.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pandas as pd
import pytest
from jsonschema import Draft202012Validator

from engine.sweep_steps import is_sweep
from reports import formatting as fmt
from reports.rundir import load_run
from reports.sweep.analysis import build
from reports.sweep.command import main, write
from reports.sweep.record import SCHEMA_FILE, SWEEP_FILE, read_sweep, sweep_text
from tests.support import browser

RESULTS = Path(__file__).parent.parent / "results"
SWEEPS = ("2026-12-01-sqlite-concurrency-sweep", "2026-12-01-sqlite-rate-sweep")
# Every sweep.json committed under results/, each as it was published.
COMMITTED = sorted(path.parent for path in RESULTS.rglob(SWEEP_FILE))
SCREENS = {"desktop": (1280, 800, 1, False), "phone": (390, 844, 3, True)}

LAYOUT = """
const box = (el) => el.getBoundingClientRect();
return {
  pageWidth: document.documentElement.scrollWidth,
  wraps: [...document.querySelectorAll('.table-wrap')].map((w) => ({
    section: w.closest('section').id,
    overflow: getComputedStyle(w).overflowX,
    right: box(w).right,
    scroll: w.scrollWidth,
    client: w.clientWidth,
  })),
  charts: document.querySelectorAll('figure.chart svg').length,
};
"""


@pytest.fixture(scope="module", params=SWEEPS)
def written(request, tmp_path_factory):
    """A committed sweep's run directory, copied, and its sweep report written anew."""
    run_dir = tmp_path_factory.mktemp("sweep") / request.param
    shutil.copytree(RESULTS / request.param, run_dir)
    sweep = build(load_run(run_dir))
    write(sweep, run_dir)
    return run_dir, sweep


def _escaped(text: str) -> str:
    return text.replace(">", "\\>").replace("<", "\\<")


def _row(markdown: str, *cells: str) -> str:
    start = "| " + " | ".join(cells) + " |"
    return next(line for line in markdown.splitlines() if line.startswith(start))


def test_the_markdown_is_the_document_with_the_run_report_s_formatting(written):
    run_dir, sweep = written
    markdown = (run_dir / "sweep.md").read_text()
    for title in ("Steps", "Latency per workload", "Overhead over the model", "Memory per"):
        assert f"\n## {title}" in markdown
    # Markdown backslash-escapes what would open HTML (the knee's ">"), as the run report does.
    assert f"Knee: {_escaped(sweep.knee_text)}." in markdown
    for step in read_sweep(run_dir).steps:
        row = _row(markdown, step.name)
        for figure in (
            fmt.count(step.offered),
            fmt.per_s(step.completed_per_s),
            fmt.per_s(step.successes_per_s),
            fmt.rate(step.error_rate),
            step.thresholds,
        ):
            assert f"| {figure} |" in row, (figure, row)
        for name, latency in step.latency.items():
            row = _row(markdown, step.name, name)
            assert f"| {fmt.count(latency.n)} | {fmt.ms(latency.p50_ms)} |" in row
            assert f"| {fmt.ms(latency.p95_ms)} |" in row
        for failed in step.failed:
            assert _escaped(failed) in markdown


def test_the_html_draws_the_chart_and_holds_tables_not_a_pre(written):
    run_dir, _ = written
    page = (run_dir / "sweep.html").read_text()
    assert "<pre" not in page and page.count("<table>") >= 3
    assert page.count("<svg") == 1 and 'id="chart-sweep"' in page
    assert (run_dir / "sweep.png").stat().st_size > 0


@pytest.fixture(scope="module")
def chromium(tmp_path_factory):
    with browser.chromium(tmp_path_factory.mktemp("chromium")) as session:
        yield session


@pytest.mark.system
@pytest.mark.browser
@pytest.mark.parametrize("screen", SCREENS)
def test_no_table_is_cut_off_on_a_laptop_or_a_phone(chromium, written, screen):
    run_dir, _ = written
    width, height, ratio, mobile = SCREENS[screen]
    chromium.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": ratio, "mobile": mobile},
    )
    chromium.get((run_dir / "sweep.html").as_uri())
    page = chromium.execute_script(LAYOUT)
    assert page["charts"] == 1
    # The page never scrolls sideways; a table wider than the screen scrolls in its own box.
    assert page["pageWidth"] <= width, page
    assert {w["section"] for w in page["wraps"]} >= {"steps", "latency"}
    for wrap in page["wraps"]:
        assert wrap["overflow"] == "auto" and wrap["right"] <= width, wrap
        if screen == "desktop":
            assert wrap["scroll"] <= wrap["client"], wrap


# A four-phase run that passed, and one whose plan was too small to judge some checks.
NOT_SWEEPS = ("2026-12-01-two-platforms/reference", "2026-12-01-three-platforms/reference")


@pytest.mark.parametrize("committed", NOT_SWEEPS)
def test_a_run_that_is_no_sweep_is_refused_in_one_line_and_left_as_it_was(
    committed, tmp_path, capsys
):
    run_dir = tmp_path / "run"
    shutil.copytree(RESULTS / committed, run_dir)
    before = sorted(p.name for p in run_dir.iterdir())
    assert main([str(run_dir)], prog="loadkit sweep") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"loadkit sweep: {run_dir} is not a sweep (its phases are ramp, sustain, burst, "
        "recover); a sweep's steps come from loadkit run --sweep-users or --sweep-rates\n"
    )
    assert sorted(p.name for p in run_dir.iterdir()) == before


def test_a_sweep_is_written_and_a_single_users_step_is_no_sweep(tmp_path, capsys):
    assert is_sweep(["c=1", "c=2", "c=4", "rest"]) and is_sweep(["rate=0.5/s", "rate=16/s"])
    assert is_sweep(["rate=1e-05/s"])
    assert not is_sweep(["users=10"]) and not is_sweep(["rest"]) and not is_sweep(["@10/s"])
    run_dir = tmp_path / "sweep"
    shutil.copytree(RESULTS / SWEEPS[1], run_dir)
    for written in run_dir.glob("sweep.*"):
        written.unlink()
    assert main([str(run_dir)], prog="loadkit sweep") == 0
    assert "knee" in capsys.readouterr().out
    assert {p.name for p in run_dir.glob("sweep.*")} == {
        "sweep.md",
        "sweep.html",
        "sweep.json",
        "sweep.png",
    }


def test_a_step_in_which_nothing_succeeded_does_not_hold(tmp_path):
    """Latency is over successes only: a step whose every answer failed has no latency to
    pass, and is not a step that held (it once was, and the knee moved past it)."""
    run_dir = tmp_path / "sweep"
    shutil.copytree(RESULTS / SWEEPS[1], run_dir)
    samples = pd.read_csv(run_dir / "samples.csv", dtype=str, keep_default_na=False)
    broken = samples["phase"] == "rate=16/s"
    samples.loc[broken, ["ok", "outcome", "detail", "ttft_ms"]] = ["0", "failed", "HTTP 500", ""]
    samples.to_csv(run_dir / "samples.csv", index=False)
    sweep = build(load_run(run_dir))
    step = next(s for s in sweep.steps if s.name == "rate=16/s")
    assert not step.holds and step.failed
    # Each latency threshold of the step is named for what it lacked, not left out as held.
    assert "api_read p95_ms not measured: 0 of 73 timed arrivals succeeded" in step.failed[0]
    latency = [w for w in step.failed if "_ms " in w]
    assert latency and all(" not measured: 0 of " in w for w in latency), step.failed
    assert sweep.knee == 8
    assert sweep.knee_text.startswith("8/s: every threshold holds up to it; at rate=16/s ")


def test_sweep_json_reads_back_through_its_type_to_the_sweep_written(written):
    run_dir, sweep = written
    assert read_sweep(run_dir) == sweep
    assert (run_dir / SWEEP_FILE).read_text() == sweep_text(sweep)


@pytest.mark.parametrize("run_dir", COMMITTED, ids=[str(r.relative_to(RESULTS)) for r in COMMITTED])
def test_every_committed_sweep_json_is_of_today_s_type(run_dir):
    """Read through the type, written back to the same text, and valid by the schema: the
    committed files carry the kind tags a reader tells a union's two records apart by."""
    assert len(COMMITTED) >= 11
    sweep = read_sweep(run_dir)
    assert sweep_text(sweep) == (run_dir / SWEEP_FILE).read_text()
    schema = json.loads(SCHEMA_FILE.read_text())
    Draft202012Validator(schema).validate(json.loads((run_dir / SWEEP_FILE).read_text()))


def test_a_memory_fit_without_its_kind_is_refused_naming_the_field(tmp_path):
    """Without the tag a decoder cannot tell a fit drawn from one not drawn: the file is
    refused where it is read, the field named, rather than read by key as either."""
    run_dir = tmp_path / "sweep"
    shutil.copytree(RESULTS / SWEEPS[0], run_dir)
    recorded = json.loads((run_dir / SWEEP_FILE).read_text())
    del recorded["memory"]["rss"]["kind"]
    (run_dir / SWEEP_FILE).write_text(json.dumps(recorded))
    with pytest.raises(msgspec.ValidationError, match=r"`\$\.memory\.rss`"):
        read_sweep(run_dir)
