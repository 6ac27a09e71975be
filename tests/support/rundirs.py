"""The tests' own run directories: the hand-built golden run, a run.json edited by hand, and
a scenario judged at any count (synthetic runs are bench/synthetic_runs.py's).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from inputs.scenario import Scenario, scenario_from_dict
from inputs.thresholds import MinCounts

# A 32-arrival run built by hand; tests/test_reports_golden.py works its numbers out.
GOLDEN = Path(__file__).parents[1] / "data" / "reports_golden"

# Every minimum count at 1, so a short synthetic run is judged on what it has and a test of
# something else is not inconclusive; tests of the minimums use the shipped ones.
ANY_COUNT = dict.fromkeys(MinCounts.__struct_fields__, 1)


def judged_at_any_count(scenario: Scenario) -> Scenario:
    """The scenario with every check's minimum count at 1."""
    raw = scenario.to_dict()
    raw["judging"]["min_counts"] = ANY_COUNT
    for threshold in raw["thresholds"]:
        threshold.pop("min_count")
    return scenario_from_dict(raw)


def golden_copy(path: Path) -> Path:
    """A writable copy of the hand-built golden run directory at ``path``."""
    shutil.copytree(GOLDEN, path)
    return path


def edit_run_json(path: Path, **changes: object) -> None:
    """Change top-level keys of a run directory's run.json (``scenario`` merged one level)."""
    run = json.loads((path / "run.json").read_text())
    scenario = changes.pop("scenario", None)
    if isinstance(scenario, dict):
        run["scenario"].update(scenario)
    run.update(changes)
    (path / "run.json").write_text(json.dumps(run))
