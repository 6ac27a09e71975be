"""`build`: one run directory in, report.md, report.html, summary.json and junit.xml out, an exit
code back.

The generator calls ``write_report`` when a run ends and exits with its code, so a
run's process status is its verdict: 2 the run is invalid, else 1 a check failed
or was not measured, else 2 a check was inconclusive, else 0 pass. It prints the
console text itself, last, after Locust has said everything it says on the way
out; ``build_report`` (the ``reports build`` command) prints it at once.
"""

from __future__ import annotations

import sys
from pathlib import Path

from engine import nofollow
from reports import render
from reports.charts import report_charts
from reports.console import console_text
from reports.junit import JUNIT_FILE, junit_xml
from reports.report import report_document
from reports.rundir import Run, RunDirError, load_run
from reports.stats import run_stats
from reports.summarise import summarise
from reports.summary import SUMMARY_FILE, summary_text
from reports.system import system_stats
from reports.verdict import judge

INVALID = 2


def build_report(run_dir: str | Path) -> int:
    """Write the run's report files, print the console text and return the exit code; a bad
    file is one line on stderr, code 2."""
    try:
        code, text = write_report(run_dir)
    except RunDirError as exc:
        print(f"reports: {exc}", file=sys.stderr)
        return INVALID
    print(text)
    return code


def write_report(run_dir: str | Path) -> tuple[int, str]:
    """Write the run's report files; return the exit code and the console text (each
    workload's figures, the verdict, where the report is). RunDirError when a file is
    missing or malformed: then no report is written (there is nothing honest to put in
    it); a run that is merely invalid still gets its report, under a banner saying why
    it cannot be used."""
    with load_run(run_dir) as run:
        return _write(run)


def _write(run: Run) -> tuple[int, str]:
    stats = run_stats(run)
    system = system_stats(run)
    verdict = judge(run, stats, system)
    document = report_document(run, stats, system, verdict, report_charts(run))
    nofollow.replace(run.path / "report.md", render.markdown(document))
    nofollow.replace(run.path / "report.html", render.html(document))
    facts = summarise(run, stats, system, verdict)
    nofollow.replace(run.path / SUMMARY_FILE, summary_text(facts))
    nofollow.replace(run.path / JUNIT_FILE, junit_xml(run, stats.lateness, verdict).encode())
    where = f"  report: {run.path / 'report.md'}, report.html, summary.json, {JUNIT_FILE}"
    return verdict.exit_code, f"{console_text(facts)}\n{where}"
