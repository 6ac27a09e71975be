"""`build`: one run directory in, report.md, report.html, summary.json and junit.xml out, an exit
code back.

The generator calls ``build_report`` when a headless run ends and exits with its
code, so a run's process status is its verdict: 2 the run is invalid, else 1 a
check failed or was not measured, else 2 a check was inconclusive, else 0 pass.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nofollow
from reports import render
from reports.charts import report_charts
from reports.headline import console_text
from reports.junit import JUNIT_FILE, junit_xml
from reports.report import report_document
from reports.rundir import RunDirError, load_run
from reports.stats import run_stats
from reports.summary import summary
from reports.system import system_stats
from reports.verdict import judge

INVALID = 2


def build_report(run_dir: str | Path) -> int:
    """Write the run's report files and return its exit code; a bad file is one line, code 2.

    When a file is missing or malformed no report is written (there is nothing
    honest to put in it); a run that is merely invalid still gets its report,
    under a banner saying why it cannot be used.
    """
    try:
        run = load_run(run_dir)
    except RunDirError as exc:
        print(f"reports: {exc}", file=sys.stderr)
        return INVALID
    stats = run_stats(run)
    system = system_stats(run)
    verdict = judge(run, stats, system)
    document = report_document(run, stats, system, verdict, report_charts(run))
    nofollow.replace(run.path / "report.md", render.markdown(document))
    nofollow.replace(run.path / "report.html", render.html(document))
    facts = summary(run, stats, system, verdict)
    nofollow.replace(run.path / "summary.json", json.dumps(facts, indent=2) + "\n")
    nofollow.replace(run.path / JUNIT_FILE, junit_xml(run, stats.lateness, verdict).encode())
    print(console_text(facts))
    print(f"  report: {run.path / 'report.md'}, report.html, summary.json, {JUNIT_FILE}")
    return verdict.exit_code
