"""A run directory's files are created new, never through a symlink planted in it.

Someone who can write in a run directory could leave ``samples.csv`` or ``report.md``
as a link to a file of the operator's; the kit must refuse the directory before any
load (one line), and never write through such a link even if it appears meanwhile.
"""

import pytest

from bench.synthetic_runs import write_run_dir
from engine import nofollow
from engine.dataset import SAMPLES, PartWriter
from engine.followups import write_followups
from inputs.bad_input import SettingsError
from probes.readings import ProbeParts
from reports.build import build_report
from runner.settings import check_new_run_dir

PRECIOUS = "the operator's own file\n"


@pytest.fixture
def precious(tmp_path):
    path = tmp_path / "precious.txt"
    path.write_text(PRECIOUS)
    return path


@pytest.mark.parametrize(
    "name", ["samples", "probes", "followups.parquet", "samples.csv", "run.json", "probes.csv"]
)
def test_a_link_planted_where_the_run_writes_refuses_the_directory(tmp_path, precious, name):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / name).symlink_to(precious)
    with pytest.raises(SettingsError) as err:
        check_new_run_dir(run_dir)
    assert str(err.value).startswith(f"--run-dir: {run_dir / name} is a symlink")
    assert "\n" not in str(err.value)


def test_a_dangling_link_is_refused_too(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "samples.csv").symlink_to(tmp_path / "nowhere")
    with pytest.raises(SettingsError, match="is a symlink"):
        check_new_run_dir(run_dir)


def test_a_link_that_appears_after_the_check_is_never_written_through(tmp_path, precious):
    """Every file of a run is made new (the samples' and probes' directories and parts,
    Locust's tables: nofollow.create) or written whole beside and renamed over (run.json, the
    follow-ups, the reports: nofollow.replace): a link planted after the check makes the first
    refuse and the second replace the link, never write through it."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    check_new_run_dir(run_dir)
    for name in ("samples", "probes", "followups.parquet", "locust_stats.csv"):
        (run_dir / name).symlink_to(precious)
    with pytest.raises(FileExistsError):
        PartWriter(run_dir / "samples", SAMPLES, "run")
    with pytest.raises(FileExistsError):
        ProbeParts(run_dir / "probes", "run")
    with pytest.raises(FileExistsError):
        nofollow.create(run_dir / "locust_stats.csv")
    write_followups(run_dir, "run", [])
    assert not (run_dir / "followups.parquet").is_symlink()
    (run_dir / "run.json.partial").symlink_to(precious)
    (run_dir / "run.json").symlink_to(precious)
    nofollow.replace(run_dir / "run.json", '{"run_id": "run"}\n')
    assert precious.read_text() == PRECIOUS
    assert not (run_dir / "run.json").is_symlink()
    assert (run_dir / "run.json").read_text() == '{"run_id": "run"}\n'


def test_a_report_replaces_a_planted_link_instead_of_writing_through_it(tmp_path, precious):
    run_dir = write_run_dir(tmp_path / "run")
    (run_dir / "report.md").symlink_to(precious)
    (run_dir / "summary.json.partial").symlink_to(precious)
    build_report(run_dir)
    assert precious.read_text() == PRECIOUS
    assert not (run_dir / "report.md").is_symlink()
    assert (run_dir / "report.md").read_text().startswith("# ")
