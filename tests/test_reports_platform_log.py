"""The platform's logged errors in the report: counted over the run's stretch of the log only,
shown in the system section and beside the verdict even on a pass, and absent when no log.

A log is written around the stretch run.json names, with errors before it (startup)
and after it (shutdown) that must not count, and inside it both formats the
reference platform writes (Python logging and uvicorn's) with a traceback between.
"""

from __future__ import annotations

import json

from reports.build import build_report
from tests.support.rundirs import edit_run_json, golden_copy

BEFORE = "2026-12-01 16:15:18,429 target ERROR startup failure that is not the run's\n"
DURING = (
    "2026-12-01 16:15:24,100 target INFO a turn\n"
    "2026-12-01 16:15:24,542 target ERROR Exception during reset or similar\n"
    "Traceback (most recent call last):\n"
    '  File "pool/base.py", line 1051, in _finalize_fairy\n'
    "asyncio.exceptions.CancelledError\n"
    "2026-12-01 16:15:25,049 target ERROR Exception during reset or similar\n"
    "ERROR:    Exception in ASGI application\n"
    "2026-12-01 16:15:26,001 target CRITICAL the pool is gone\n"
    "2026-12-01 16:15:27,000 target WARNING database pool timeout on GET /api/v1/agents\n"
)
AFTER = "2026-12-01 16:16:00,000 target ERROR shutdown failure after the run\n"
EXPECTED = (
    "the platform logged 3 ERROR and 1 CRITICAL lines during the run (stack/target.log); "
    "most frequent, 2 times: Exception during reset or similar"
)


def _run_with_log(tmp_path, during: str):
    run = golden_copy(tmp_path / "run")
    (run / "stack").mkdir()
    (run / "stack" / "target.log").write_text(BEFORE + during + AFTER)
    start = len(BEFORE.encode())
    stretch = {"path": "stack/target.log", "from_byte": start, "to_byte": start + len(during)}
    # No thresholds: the golden run then passes, and the errors must still show.
    edit_run_json(run, platform_log=stretch, scenario={"thresholds": []})
    return run


def test_errors_in_the_runs_stretch_are_counted_and_shown_beside_a_pass(tmp_path, capsys):
    run = _run_with_log(tmp_path, DURING)
    assert build_report(run) == 0
    logged = json.loads((run / "summary.json").read_text())["platform_log"]
    assert logged["by_level"] == {"ERROR": 3, "CRITICAL": 1}
    assert logged["errors"] == 4 and logged["most_frequent_count"] == 2
    assert logged["line"] == EXPECTED
    report = (run / "report.md").read_text()
    first_screen = report[: report.index("## ")]
    assert "PASS" in first_screen and EXPECTED in first_screen
    system = report[report.index("The system under test") :]
    assert "The platform logged 3 ERROR and 1 CRITICAL lines" in system
    assert EXPECTED in capsys.readouterr().out
    assert EXPECTED in (run / "report.html").read_text()


def test_a_clean_log_is_said_in_the_system_section_only(tmp_path):
    run = _run_with_log(tmp_path, "2026-12-01 16:15:24,100 target INFO a turn\n")
    assert build_report(run) == 0
    report = (run / "report.md").read_text()
    clean = "logged no ERROR or CRITICAL line during the run (stack/target.log)"
    assert clean not in report[: report.index("## ")]
    assert clean in report[report.index("The system under test") :]
    assert json.loads((run / "summary.json").read_text())["platform_log"]["errors"] == 0


def test_a_log_that_is_gone_is_named_and_a_run_without_one_says_nothing(tmp_path):
    run = _run_with_log(tmp_path, DURING)
    (run / "stack" / "target.log").unlink()
    assert build_report(run) == 0
    assert "platform's log was not read: stack/target.log" in (run / "report.md").read_text()
    plain = golden_copy(tmp_path / "plain")
    build_report(plain)
    assert json.loads((plain / "summary.json").read_text())["platform_log"] is None
    assert "platform's log" not in (plain / "report.md").read_text()


def test_a_run_that_counted_its_stretch_needs_no_log_to_be_rebuilt(tmp_path):
    """A committed run, rebuilt on another machine: the counts the run recorded as it ended
    stand for the log, which is not there (the real-platform runs' logs never are)."""
    counted = _run_with_log(tmp_path / "counted", DURING)
    assert build_report(counted) == 0
    logged = json.loads((counted / "summary.json").read_text())["platform_log"]
    moved = golden_copy(tmp_path / "moved")
    stretch = {"path": "../../elsewhere/api.log", "from_byte": 10, "to_byte": 10 + len(DURING)}
    stretch["counted"] = {
        "bytes_read": len(DURING),
        "by_level": logged["by_level"],
        "most_frequent": "Exception during reset or similar",
        "most_frequent_count": 2,
        "missing": None,
    }
    edit_run_json(moved, platform_log=stretch, scenario={"thresholds": []})
    assert build_report(moved) == 0
    line = json.loads((moved / "summary.json").read_text())["platform_log"]["line"]
    assert line == EXPECTED.replace("stack/target.log", "../../elsewhere/api.log")
