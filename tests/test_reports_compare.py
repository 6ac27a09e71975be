"""`compare` finds an injected regression and exits 1, and stays quiet on identical runs.

Both runs are generated from the same seed, so without injected damage they are
sample-for-sample equal; the damage is a slower api_read in sustain, errors on a
zero-tolerance workload, and a bigger API process. The runs are long enough
(scale 0.4) that even ingest has more than the minimum sample count in sustain.
"""

from html.parser import HTMLParser

import pytest

from bench.synthetic_runs import synthetic_probes, synthetic_samples, write_run_dir
from inputs.scenario import load_scenario
from reports.compare import Rules, compare, compare_runs
from reports.rundir import load_run

SCENARIO = load_scenario().scaled(0.4)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    base = write_run_dir(
        root / "base",
        SCENARIO,
        synthetic_samples(SCENARIO, "base", seed=7),
        synthetic_probes(SCENARIO, rss_mib=200),
    )
    same = write_run_dir(
        root / "same",
        SCENARIO,
        synthetic_samples(SCENARIO, "same", seed=7),
        synthetic_probes(SCENARIO, rss_mib=200),
    )
    worse = write_run_dir(
        root / "worse",
        SCENARIO,
        synthetic_samples(
            SCENARIO,
            "worse",
            seed=7,
            latency_factor={("sustain", "api_read"): 1.5},
            error_rates={("sustain", "ingest"): 1.0},
        ),
        synthetic_probes(SCENARIO, rss_mib=300),
    )
    return base, same, worse


def test_identical_runs_have_no_regression(runs, capsys):
    base, same, _ = runs
    assert compare_runs(base, same) == 0
    assert "0 regressions (exit 0)" in capsys.readouterr().out
    assert "No regression beyond the rules (exit 0)." in (same / "compare-base.md").read_text()


def test_injected_regressions_are_each_found(runs):
    base, _, worse = runs
    regressions = compare(load_run(base), load_run(worse)).regressions
    found = {(r.where, r.workload, r.what.split()[0]) for r in regressions}
    assert ("sustain", "api_read", "p95") in found  # 1.5x latency, beyond 20%
    assert ("sustain", "ingest", "error") in found  # zero-tolerance workload
    assert ("system", "api", "peak") in found  # RSS 200 -> 300 MiB
    assert not any(where in ("ramp", "burst", "recover") for where, _, _ in found)


def test_compare_exits_1_and_writes_both_documents(runs, capsys):
    base, _, worse = runs
    assert compare_runs(base, worse) == 1
    out = capsys.readouterr().out
    assert "regressions (exit 1)" in out.splitlines()[0]
    markdown = (worse / "compare-base.md").read_text()
    assert markdown.index("## Per phase and workload") < markdown.index("## Regressions")
    assert "sustain, api_read: p95" in markdown
    sections = []

    class Sections(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag == "section":
                sections.append(dict(attrs)["id"])

    Sections().feed((worse / "compare-base.html").read_text())
    assert sections == ["runs", "phases", "system", "regressions"]


def test_a_looser_tolerance_forgives_the_latency(runs):
    base, _, worse = runs
    found = compare(load_run(base), load_run(worse), Rules(p95_tolerance=10.0)).regressions
    assert not any(r.workload == "api_read" and r.what.startswith("p95") for r in found)
    # Ingest's failures sit at its 60 s timeout: its latency rose 500-fold, beyond any tolerance.
    assert ("sustain", "ingest") in {(r.where, r.workload) for r in found if r.what[:3] == "p95"}


def test_a_big_change_on_a_few_samples_is_shown_but_not_counted(tmp_path):
    scenario = load_scenario().scaled(0.05)
    small = [
        write_run_dir(
            tmp_path / name,
            scenario,
            synthetic_samples(
                scenario, name, seed=7, latency_factor={("sustain", "trigger_fire"): factor}
            ),
        )
        for name, factor in (("small-base", 1.0), ("small-run", 3.0))
    ]
    comparison = compare(load_run(small[0]), load_run(small[1]))
    assert not comparison.regressions
    assert any(
        r.workload == "trigger_fire" and "too few samples" in r.what for r in comparison.unproven
    )


def test_a_different_environment_is_said_on_top(runs, tmp_path):
    base = runs[0]
    busy = synthetic_probes(SCENARIO, rss_mib=200)
    lag = (busy.probe == "generator.0") & (busy.metric == "loop_lag_ms")
    busy.loc[lag, "value"] = 40.0
    noisy = write_run_dir(
        tmp_path / "noisy",
        SCENARIO,
        synthetic_samples(SCENARIO, "noisy", seed=7),
        busy,
        machine={"hostname": "other", "cpus": 8},
    )
    comparison = compare(load_run(base), load_run(noisy))
    said = " ".join(comparison.environment)
    assert "machine's hostname: test in BASE, other in RUN" in said
    assert "machine's cpus: 2 in BASE, 8 in RUN" in said
    assert "generator's peak loop lag" in said
    assert comparison.exit_code == 0
    assert compare_runs(base, noisy) == 0
    text = (noisy / "compare-base.md").read_text()
    assert text.index("environments differ") < text.index("## Per phase and workload")
