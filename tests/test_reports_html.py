"""report.html parsed with html.parser: every section and chart present, nothing fetched.

The page must open offline and on a phone: one file, inline CSS and SVG, a
viewport, and no URL it would load. Its sections and headings match the
Markdown's, since both render one document.
"""

import re
from html.parser import HTMLParser

import pytest

from bench.synthetic_runs import synthetic_samples, write_run_dir
from inputs.scenario import load_scenario
from reports.build import build_report
from tests.support.rundirs import golden_copy

SECTIONS = [
    "charts",
    "limits",
    "what-was-run",
    "phase-ramp",
    "phase-sustain",
    "phase-burst",
    "phase-recover",
    "whole-run",
    "system",
    "verdict",
]
CHARTS = {
    "charts": ["throughput", "latency", "distribution", "errors", "ttft"],
    "system": ["cpu", "memory", "db"],
}


class Page(HTMLParser):
    """What a test needs from the page: sections, headings, charts and outside references."""

    def __init__(self):
        super().__init__()
        self.sections, self.charts, self.outside, self.tags = [], {}, [], set()
        self.h2, self.h3 = [], []
        self._chart, self._heading = None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.sections.append(attrs["id"])
        if tag == "figure":
            self._chart = attrs["id"].removeprefix("chart-")
            self.charts[self._chart] = {"section": self.sections[-1], "svg": False, "text": ""}
        if tag == "svg" and self._chart:
            self.charts[self._chart]["svg"] = True
        if tag in ("h2", "h3"):
            self._heading = tag
            getattr(self, tag).append("")
        for name in ("src", "href"):
            if name in attrs and not str(attrs[name]).startswith("#"):
                self.outside.append(attrs[name])
        self.tags.add(f"meta:{attrs.get('name')}" if tag == "meta" else tag)

    def handle_endtag(self, tag):
        if tag == "figure":
            self._chart = None
        if tag == self._heading:
            self._heading = None

    def handle_data(self, data):
        if self._chart:
            self.charts[self._chart]["text"] += data
        if self._heading:
            getattr(self, self._heading)[-1] += data


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    return page


@pytest.fixture(scope="module")
def golden_report(tmp_path_factory):
    path = golden_copy(tmp_path_factory.mktemp("html") / "run")
    assert build_report(path) == 1
    return path


def test_every_section_in_order_and_every_chart_in_its_section(golden_report):
    page = parse((golden_report / "report.html").read_text())
    assert page.sections == SECTIONS
    for section, charts in CHARTS.items():
        for chart in charts:
            assert page.charts[chart]["section"] == section
            assert page.charts[chart]["svg"], f"{chart} has data in the golden run"
    assert "Offered and completed requests per second" in page.charts["throughput"]["text"]


def test_self_contained_and_phone_readable(golden_report):
    text = (golden_report / "report.html").read_text()
    page = parse(text)
    assert page.outside == []
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    assert "meta:viewport" in page.tags
    assert "<style>" in text
    assert re.findall(r"url\((?!#)", text) == [] and "@import" not in text
    # Inline SVGs share one id space: a clash would clip one chart with another's path.
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids))


def test_html_carries_the_markdown_headings(golden_report):
    page = parse((golden_report / "report.html").read_text())
    markdown = (golden_report / "report.md").read_text()
    assert page.h2 == re.findall(r"^## (.+)$", markdown, flags=re.M)
    assert page.h3 == re.findall(r"^### (.+)$", markdown, flags=re.M)


def test_a_chart_without_data_says_so(tmp_path):
    path = golden_copy(tmp_path / "run")
    (path / "probes.csv").unlink()
    build_report(path)
    page = parse((path / "report.html").read_text())
    for chart in CHARTS["system"]:
        assert not page.charts[chart]["svg"]
        assert "No data: No probes.csv in the run directory" in page.charts[chart]["text"]
    markdown = (path / "report.md").read_text()
    assert "No probes.csv in the run directory: nothing was recorded about the system." in markdown


def test_the_platforms_words_are_text_in_both_reports_never_markup(tmp_path):
    """An error message holding HTML (a hostile or broken platform's) is escaped in report.html
    as entities and in report.md with backslashes, so no viewer runs or renders it."""
    scenario = load_scenario().scaled(0.05)
    samples = synthetic_samples(scenario, error_rates={("sustain", "api_read"): 0.5})
    words = "HTTP 500 boom: <script>alert(1)</script> & <img src=x onerror=alert(2)>"
    samples.loc[samples["outcome"] == "failed", "detail"] = words
    path = write_run_dir(tmp_path / "run", scenario, samples)
    build_report(path)
    markdown = (path / "report.md").read_text()
    page = (path / "report.html").read_text()
    # Every "<" the Markdown holds is escaped, but for the report's own section anchors.
    text = re.sub(r'<a id="[a-z0-9-]+"></a>', "", markdown)
    assert not re.findall(r"(?<!\\)<", text)
    assert r"\<script\>alert(1)\</script\> \& \<img src=x onerror=alert(2)\>" in markdown
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page
