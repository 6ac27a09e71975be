"""junit.xml and summary.json as CI and machines read them.

junit.xml is read back with junitparser, as a dashboard would: one test case per
check the exit code rests on plus validity, each status where a JUnit gate sees it
(failure, error, skipped, passed), a failure's message carrying measured, limit and
n. reports/summary.schema.json is generated from summary.json's type (``python -m
reports schema``) and must equal it; summary.json is validated against it (jsonschema's
Draft 2020-12 validator; the schema forbids fields it does not describe): the golden
run's, synthetic runs that pass, are inconclusive and invalid, committed real runs
rebuilt, and a real short run. Committed runs are validated as today's reports rebuild
them: a summary.json committed by an older kit has the shape of its day (fields added
since are missing), and tests/test_committed_results.py holds its verdict instead.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from jsonschema import Draft202012Validator
from junitparser import Error, Failure, JUnitXml, Skipped

from bench.synthetic_runs import write_run_dir
from inputs.scenario import load_scenario
from reports.build import build_report
from reports.formatting import metric_name
from reports.junit import INVALID_RUN, JUNIT_FILE
from reports.schemas import SCHEMAS, schema_text
from reports.summary import SCHEMA_FILE, Summary, read_summary
from stack.generator_runs import platform, write_scenario
from stack.processes import ROOT
from tests.support.generator_env import invalid_reasons, run_local
from tests.support.rundirs import edit_run_json, golden_copy

SCHEMA = json.loads(SCHEMA_FILE.read_text())
VALIDATOR = Draft202012Validator(SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)
DOCS = (ROOT / "docs" / "outputs.md").read_text()
# Real runs committed under results/, rebuilt with today's reports: open arrival, a second
# platform, and a sweep.
COMMITTED = [
    "2026-11-29-default-pool",
    "2026-12-01-two-platforms/agno",
    "2026-12-01-postgres-rate-sweep",
]


def _built(path: Path) -> tuple[int, dict, JUnitXml]:
    code = build_report(path)
    summary = json.loads((path / "summary.json").read_text())
    return code, summary, JUnitXml.fromfile(str(path / JUNIT_FILE))


def _cases(report: JUnitXml) -> dict[tuple[str, str], object]:
    (suite,) = list(report)
    return {(case.classname, case.name): case for case in suite}


def _kind(case) -> str:
    results = list(case.result)
    if not results:
        return "passed"
    (result,) = results
    return {Failure: "failure", Error: "error", Skipped: "skipped"}[type(result)]


def _checks(summary: dict) -> list[tuple[str, str, str]]:
    """(classname, name, status) of every check the exit code rests on, from summary.json."""
    scenario = summary["scenario"]
    checks = []
    for t in summary["thresholds"]:
        metric = metric_name(t["metric"])
        checks.append((f"{scenario}.{t['phase']}", f"{t['workload']} {metric}", t["status"]))
    recovery = summary["recovery"]
    if recovery is not None and recovery["required"]:
        for workload, c in recovery["workloads"].items():
            checks.append((f"{scenario}.recover", f"{workload} time to recover", c["status"]))
    return checks


# Where a JUnit gate sees each status.
JUNIT_KIND = {
    "pass": "passed",
    "recovered": "passed",
    "FAIL": "failure",
    "not measured": "failure",
    "not recovered": "failure",
    "inconclusive": "error",
    "not judged": "skipped",
}


def _assert_one_case_per_check(summary: dict, report: JUnitXml) -> None:
    cases = _cases(report)
    checks = _checks(summary)
    (suite,) = list(report)
    assert len(cases) == len(checks) + 1 == suite.tests
    assert set(cases) == {(c, n) for c, n, _ in checks} | {(summary["scenario"], "validity")}
    invalid = summary["validity"]["status"] == "invalid"
    for classname, name, status in checks:
        case = cases[classname, name]
        assert _kind(case) == ("skipped" if invalid else JUNIT_KIND[status]), (name, status)
    properties = {p.name: p.value for p in suite.properties()}
    assert properties["exit_code"] == str(summary["exit_code"])
    assert properties["verdict"] == summary["verdict"]


def test_the_golden_runs_junit_has_one_case_per_check_and_its_failure_says_measured_limit_n(
    tmp_path,
):
    code, summary, report = _built(golden_copy(tmp_path / "golden"))
    assert code == summary["exit_code"] == 1
    _assert_one_case_per_check(summary, report)
    cases = _cases(report)
    failed = [t for t in summary["thresholds"] if t["status"] == "FAIL"]
    assert failed
    for t in failed:
        case = cases[f"golden.{t['phase']}", f"{t['workload']} {metric_name(t['metric'])}"]
        (failure,) = list(case.result)
        assert failure.type == "FAIL"
        assert f"measured {t['reading']}" in failure.message
        assert re.search(r"vs limit ≤ [\d.,]+ (ms|%)", failure.message)
        assert failure.message.endswith(f"n={t['samples']:,}")
    validity = cases["golden", "validity"]
    assert _kind(validity) == "passed"
    assert validity.system_out.startswith("valid: offered 32, recorded 32; measured 6.25% late")
    # A recovery not judged (its sustain failed) is skipped, one that came back passed.
    kinds = {name: _kind(case) for (cls, name), case in cases.items() if cls == "golden.recover"}
    assert kinds["chat_stream time to recover"] == "skipped"
    assert kinds["api_read time to recover"] == "passed"
    assert VALIDATOR.is_valid(summary)


def test_an_invalid_run_fails_validity_with_its_reasons_and_judges_nothing(tmp_path):
    path = golden_copy(tmp_path / "golden")
    edit_run_json(path, offered=33)
    code, summary, report = _built(path)
    assert code == 2 and summary["verdict"] == "invalid"
    _assert_one_case_per_check(summary, report)
    validity = _cases(report)["golden", "validity"]
    (failure,) = list(validity.result)
    assert isinstance(failure, Failure) and failure.message.startswith("invalid: offered 33")
    assert "run.json says 33" in failure.text
    skipped = [c for key, c in _cases(report).items() if key[1] != "validity"]
    assert skipped and all(next(iter(c.result)).message == INVALID_RUN for c in skipped)
    assert VALIDATOR.is_valid(summary)


def test_an_inconclusive_check_is_an_error_a_gate_cannot_read_as_a_pass(tmp_path):
    code, summary, report = _built(write_run_dir(tmp_path / "small", load_scenario().scaled(0.05)))
    assert code == 2 and summary["verdict"] == "inconclusive"
    _assert_one_case_per_check(summary, report)
    (suite,) = list(report)
    assert suite.errors > 0 and suite.failures == 0
    errors = [c for c in suite if _kind(c) == "error"]
    assert all(next(iter(c.result)).message.startswith("inconclusive: ") for c in errors)
    assert VALIDATOR.is_valid(summary)


def test_a_passing_runs_junit_is_all_passed(tmp_path):
    code, summary, report = _built(write_run_dir(tmp_path / "full", load_scenario()))
    _assert_one_case_per_check(summary, report)
    if code == 0:
        (suite,) = list(report)
        assert suite.failures == suite.errors == suite.skipped == 0
    assert VALIDATOR.is_valid(summary)


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_real_runs_rebuilt_match_the_schema(tmp_path, name):
    path = tmp_path / "run"
    shutil.copytree(ROOT / "results" / name, path)
    _, summary, report = _built(path)
    errors = sorted(VALIDATOR.iter_errors(summary), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]
    _assert_one_case_per_check(summary, report)


def test_the_schema_is_a_valid_draft_2020_12_schema_that_refuses_undocumented_fields(tmp_path):
    Draft202012Validator.check_schema(SCHEMA)
    _, summary, _ = _built(golden_copy(tmp_path / "golden"))
    summary["surprise"] = 1
    assert not VALIDATOR.is_valid(summary)
    del summary["surprise"]
    summary["whole_run"]["workloads"]["api_read"]["latency_ms"]["p95"] = "40 ms"
    assert not VALIDATOR.is_valid(summary)


@pytest.mark.parametrize("file", list(SCHEMAS), ids=lambda file: file.name)
def test_each_committed_schema_is_the_one_its_type_generates(file):
    assert file.read_text() == schema_text(file), "run `python -m reports schema`"


def test_summary_json_reads_back_through_its_type_to_the_same_text(tmp_path):
    path = golden_copy(tmp_path / "golden")
    build_report(path)
    assert msgspec.to_builtins(read_summary(path)) == json.loads(
        (path / "summary.json").read_text()
    )


# Reads a run's verdict as `loadkit run` and `make demo` exit with it, then names what it imported
# of what builds a report.
READ_VERDICT = """
import sys
from pathlib import Path
import runner.run_end
code = runner.run_end.verdict_exit_code(Path(sys.argv[1]), 0)
print(code, sorted(m for m in ('pandas', 'duckdb', 'matplotlib') if m in sys.modules))
"""


@pytest.mark.system
def test_reading_the_verdict_imports_none_of_what_builds_the_report(tmp_path):
    path = golden_copy(tmp_path / "golden")
    code = build_report(path)
    read = subprocess.run(
        [sys.executable, "-c", READ_VERDICT, str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert read.stdout.split(maxsplit=1) == [str(code), "[]\n"], read.stdout + read.stderr


def test_every_top_level_field_is_described_in_the_docs():
    for name in Summary.__struct_fields__:
        assert f"`{name}`" in DOCS, name


@pytest.mark.system
@pytest.mark.slow
def test_a_real_short_run_writes_junit_and_a_summary_the_schema_accepts(tmp_path):
    run_dir = tmp_path / "run"
    with platform(tmp_path / "platform") as plat:
        scenario = write_scenario(
            tmp_path,
            [("ramp", 2.0, 8.0), ("sustain", 3.0, 16.0)],
            lateness={"late_after_ms": 250.0, "max_late_fraction": 0.05},
        )
        result = run_local(plat, scenario, run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert result.returncode == summary["exit_code"], invalid_reasons(run_dir, result)
    errors = list(VALIDATOR.iter_errors(summary))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]
    written = (run_dir / JUNIT_FILE).read_text()
    _assert_one_case_per_check(summary, JUnitXml.fromfile(str(run_dir / JUNIT_FILE)))
    # `python -m reports build RUN` (and loadkit report) writes it again, the same.
    (run_dir / JUNIT_FILE).unlink()
    rebuilt = subprocess.run(
        [sys.executable, "-m", "reports", "build", str(run_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rebuilt.returncode == summary["exit_code"], rebuilt.stderr
    assert (run_dir / JUNIT_FILE).read_text() == written
    assert JUNIT_FILE in rebuilt.stdout
