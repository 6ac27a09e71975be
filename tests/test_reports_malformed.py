"""Malformed run directories are refused with one line naming the file and the problem.

Each case damages a copy of the golden run in one way; build must exit 2, say
which file and what is wrong on a single stderr line, and write no report.
The command line is exercised as a real process, as a user or CI would run it.
"""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from bench.synthetic_runs import write_samples
from reports.build import build_report
from reports.compare import compare_runs
from tests.support.rundirs import edit_run_json, golden_copy

ROOT = Path(__file__).resolve().parent.parent


def _rewrite_samples(path: Path, change) -> None:
    lines = (path / "samples.csv").read_text().splitlines()
    (path / "samples.csv").write_text("\n".join(change(lines)) + "\n")


def _drop_columns(lines, names):
    header = lines[0].split(",")
    keep = [i for i, name in enumerate(header) if name not in names]
    return [",".join(line.split(",")[i] for i in keep) for line in lines]


def _set_cell(lines, row, column, value):
    header = lines[0].split(",")
    cells = lines[row].split(",")
    cells[header.index(column)] = value
    return [*lines[:row], ",".join(cells), *lines[row + 1 :]]


CASES = {
    "samples missing": (
        lambda p: (p / "samples.csv").unlink(),
        "samples: missing (nor is there a samples.csv); the generator writes one sample per "
        "arrival",
    ),
    "samples empty": (
        lambda p: (p / "samples.csv").write_text(""),
        "samples.csv: empty file; expected a header row (run_id,worker,index,",
    ),
    "samples missing columns": (
        lambda p: _rewrite_samples(p, lambda ls: _drop_columns(ls, {"ttft_ms", "tokens"})),
        "samples.csv: missing columns ttft_ms, tokens; see reports/README.md",
    ),
    "a time that is not a number": (
        lambda p: _rewrite_samples(p, lambda ls: _set_cell(ls, 4, "due_s", "soon")),
        "samples.csv: line 5, column due_s: 'soon' is not a number",
    ),
    "an infinite latency": (
        lambda p: _rewrite_samples(p, lambda ls: _set_cell(ls, 4, "latency_ms", "inf")),
        "samples.csv: line 5, column latency_ms: inf is not a number",
    ),
    "a minus-infinite due time": (
        lambda p: _rewrite_samples(p, lambda ls: _set_cell(ls, 3, "due_s", "-inf")),
        "samples.csv: line 4, column due_s: -inf is not a number",
    ),
    "a negative latency": (
        lambda p: _rewrite_samples(p, lambda ls: _set_cell(ls, 4, "latency_ms", "-3.5")),
        "samples.csv: line 5: latency_ms -3.5 is negative",
    ),
    "a negative sent time": (
        lambda p: _rewrite_samples(p, lambda ls: _set_cell(ls, 2, "sent_s", "-0.25")),
        "samples.csv: line 3: sent_s -0.25 is negative",
    ),
    "an unknown outcome": (
        lambda p: _rewrite_samples(p, lambda ls: _set_cell(ls, 3, "outcome", "meh")),
        "samples.csv: line 4: outcome 'meh' is not one of",
    ),
    "ok disagreeing with outcome": (
        lambda p: _rewrite_samples(p, lambda ls: _set_cell(ls, 7, "ok", "1")),
        "samples.csv: line 8: ok disagrees with outcome",
    ),
    "a repeated index": (
        lambda p: _rewrite_samples(p, lambda ls: _set_cell(ls, 6, "index", "0")),
        "samples.csv: line 7: index 0 repeats an earlier row's",
    ),
    "a workload outside the mix": (
        lambda p: _rewrite_samples(p, lambda ls: _set_cell(ls, 2, "workload", "ingest")),
        "samples.csv: line 3: workload 'ingest' is not in the scenario's mix",
    ),
    "samples from another run": (
        lambda p: _rewrite_samples(p, lambda ls: _set_cell(ls, 9, "run_id", "other")),
        "samples.csv: line 10: run_id 'other' differs from run.json's 'golden'",
    ),
    "run.json missing": (
        lambda p: (p / "run.json").unlink(),
        "run.json: missing; the generator writes it when load starts",
    ),
    "run.json not JSON": (
        lambda p: (p / "run.json").write_text("{oops"),
        "run.json: not valid JSON",
    ),
    "run.json without phases": (
        lambda p: (p / "run.json").write_text(
            json.dumps(
                {k: v for k, v in json.loads((p / "run.json").read_text()).items() if k != "phases"}
            )
        ),
        "run.json: Object missing required field `phases`",
    ),
    "run.json with a platform log ending before it starts": (
        lambda p: edit_run_json(
            p, platform_log={"path": "stack/target.log", "from_byte": 90, "to_byte": 10}
        ),
        "run.json: platform_log is {'path': 'stack/target.log', 'from_byte': 90, 'to_byte': 10}",
    ),
    "run.json with a broken scenario": (
        lambda p: edit_run_json(p, scenario={"lateness": {"max_late_fraction": 2}}),
        "run.json: scenario.lateness.max_late_fraction: 2 is outside 0 to 1",
    ),
    "probes.csv missing a column": (
        lambda p: (p / "probes.csv").write_text("t_s,probe,metric\n1,api,cpu_percent\n"),
        "probes.csv: missing columns value",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_malformed_input_is_refused_with_its_message(case, tmp_path, capsys):
    damage, message = CASES[case]
    path = golden_copy(tmp_path / "run")
    damage(path)
    assert build_report(path) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1, err
    assert not (path / "report.md").exists()
    assert not (path / "summary.json").exists()


def test_compare_refuses_another_plan_unless_forced_and_then_judges_nothing(tmp_path, capsys):
    base = golden_copy(tmp_path / "base")
    run = golden_copy(tmp_path / "run")
    edit_run_json(run, scenario={"name": "another"})
    assert compare_runs(base, run) == 2
    err = capsys.readouterr().err
    assert "ran different plans (name: golden in BASE, another in RUN)" in err
    assert "pass --force" in err
    assert err.count("\n") == 1
    assert not list(run.glob("compare-*"))
    # Forced, the two are shown side by side; nothing is judged, and a gate reads no answer.
    assert compare_runs(base, run, force=True) == 2
    assert capsys.readouterr().out.startswith("different plans, nothing judged (exit 2)")
    markdown = (run / "compare-golden.md").read_text()
    assert "The runs' plans differ" in markdown
    assert "Nothing is judged: the plans differ (exit 2)." in markdown


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reports", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.system
@pytest.mark.slow
def test_cli_build_exit_codes_and_one_line_refusal(tmp_path):
    path = golden_copy(tmp_path / "run")
    done = _cli("build", str(path))
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("  whole run ") and "\nFAIL (exit 1): " in done.stdout
    (path / "samples.csv").write_text("")
    refused = _cli("build", str(path))
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1
    assert "samples.csv: empty file" in refused.stderr


@pytest.mark.system
def test_cli_help_names_both_commands_and_the_exit_codes():
    top = _cli("--help")
    assert top.returncode == 0
    assert "build" in top.stdout and "compare" in top.stdout
    build = _cli("build", "--help")
    said = " ".join(build.stdout.split())
    assert "Exit 2 when the run is invalid" in said and "else 1 when a check fails" in said
    assert "else 2 when a check is inconclusive" in said and "else 0" in said


def _golden_dataset(path: Path, change=None, run_id: str = "golden") -> Path:
    """The golden run written as the kit writes runs now (the samples dataset, two parts of
    16 rows), its samples changed by ``change`` first."""
    golden_copy(path)
    samples = pd.read_csv(
        path / "samples.csv",
        keep_default_na=False,
        na_values={c: [""] for c in ("sent_s", "latency_ms", "ttft_ms")},
    )
    (path / "samples.csv").unlink()
    if change is not None:
        change(samples)
    write_samples(path, run_id, samples.iloc[:16], samples.iloc[16:], part_rows=16)
    return path


DATASET_CASES = {
    "a part written for another run": (
        lambda p: _golden_dataset(p, run_id="other"),
        "samples/part-000000.parquet: written for run 'other', not run.json's 'golden'",
    ),
    "an infinite latency": (
        lambda p: _golden_dataset(
            p,
            lambda s: s.__setitem__(
                "latency_ms", s["latency_ms"].where(s.index != 20, float("inf"))
            ),
        ),
        "samples/part-000001.parquet: row 5, column latency_ms: inf is not a number",
    ),
    "an unknown outcome": (
        lambda p: _golden_dataset(
            p, lambda s: s.__setitem__("outcome", s["outcome"].where(s.index != 2, "meh"))
        ),
        "samples/part-000000.parquet: row 3: outcome 'meh' is not one of",
    ),
    "an index repeated in a later part": (
        lambda p: _golden_dataset(
            p, lambda s: s.__setitem__("index", s["index"].where(s.index != 18, 3))
        ),
        "samples/part-000001.parquet: row 3: index 3 repeats an earlier row's",
    ),
}


@pytest.mark.parametrize("case", list(DATASET_CASES))
def test_each_malformed_dataset_is_refused_naming_its_part_and_row(case, tmp_path, capsys):
    damage, message = DATASET_CASES[case]
    path = damage(tmp_path / "run")
    assert build_report(path) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1, err
    assert not (path / "report.md").exists()


def test_the_golden_run_reads_the_same_from_its_dataset(tmp_path):
    """The same samples, as CSV and as the dataset: the same report, to the byte."""
    as_csv = golden_copy(tmp_path / "csv")
    as_dataset = _golden_dataset(tmp_path / "dataset")
    assert build_report(as_csv) == build_report(as_dataset)
    for name in ("report.md", "summary.json", "junit.xml", "report.html"):
        assert (as_csv / name).read_bytes() == (as_dataset / name).read_bytes(), name
