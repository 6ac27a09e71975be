"""What a pair of runs can answer: compare names what differs and claims nothing a difference of
plan, platform or machine explains.

Synthetic runs from one seed, so without injected damage they are sample-for-sample equal:
the same stack on other ephemeral ports is no difference; another scale is another plan
(refused, and judged nowhere when forced); another platform is side by side, never a gate;
a latency rise on a machine that held the platform back is left untold, never a pass.
"""

from __future__ import annotations

import pytest

from bench.synthetic_runs import synthetic_probes, synthetic_samples, write_run_dir
from inputs.scenario import load_scenario, scenario_from_dict
from reports.compare import Rules, compare, compare_runs
from reports.compare.changes import Measure, Outcome, Reading, check
from reports.compare.differences import Pairing, without_ephemeral_ports
from reports.rundir import load_run

SCENARIO = load_scenario().scaled(0.4)
# How the demo's stack writes its topology: the stub on a port the kernel picked.
TOPOLOGY = (
    "one host: reference target (1 uvicorn process, SQLite) and stub (http://127.0.0.1:{port}, "
    "default delays) on 127.0.0.1, Locust in one local process"
)


def run_dir(path, scenario=SCENARIO, probes=None, samples=None, **meta):
    return write_run_dir(
        path,
        scenario,
        samples if samples is not None else synthetic_samples(scenario, path.name, seed=7),
        probes if probes is not None else synthetic_probes(scenario, rss_mib=200),
        **meta,
    )


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("pairing")
    return run_dir(
        root / "base",
        topology=TOPOLOGY.format(port=47437),
        host="http://127.0.0.1:51020",
        platform={"name": "agenticos"},
        scale=0.4,
    )


def test_the_same_stack_on_other_ephemeral_ports_is_no_difference(base, tmp_path, capsys):
    again = run_dir(
        tmp_path / "again",
        topology=TOPOLOGY.format(port=58123),
        host="http://127.0.0.1:39001",
        platform={"name": "agenticos"},
    )
    comparison = compare(load_run(base), load_run(again))
    assert comparison.pairing is Pairing.GATE
    assert comparison.environment == ()
    assert compare_runs(base, again) == 0
    assert capsys.readouterr().out.startswith("0 regressions (exit 0), 0 improvements")
    assert "environments differ" not in (again / "compare-base.md").read_text()


def test_a_chosen_port_or_another_host_is_a_difference():
    assert without_ephemeral_ports("http://127.0.0.1:47437") == "http://127.0.0.1"
    assert without_ephemeral_ports("stub (http://[::1]:60999, x)") == "stub (http://[::1], x)"
    assert without_ephemeral_ports("http://stub:4020") == "http://stub:4020"
    assert without_ephemeral_ports("10.0.0.7:8000 and localhost:33000") == (
        "10.0.0.7:8000 and localhost"
    )


def test_another_scale_is_another_plan_refused_then_judged_nowhere(base, tmp_path, capsys):
    short = load_scenario().scaled(0.1)
    quick = run_dir(tmp_path / "quick", short, synthetic_probes(short), scale=0.1)
    # The shorter burst builds no queue: without the plan check it read as improvements.
    assert compare_runs(base, quick) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "ran different plans (phases: scale 0.4 in BASE, 0.1 in RUN; ramp 24 s at 4/s" in err
    assert "burst 18 s at 36/s in BASE, 4.5 s at 36/s in RUN" in err
    assert not list(quick.glob("compare-*"))
    forced = compare(load_run(base), load_run(quick), force=True)
    assert forced.pairing is Pairing.PLANS
    assert forced.found == () and forced.exit_code == 2
    assert compare_runs(base, quick, force=True) == 2
    markdown = (quick / "compare-base.md").read_text()
    assert markdown.index("The runs' plans differ") < markdown.index("## Per phase and workload")
    assert "Improvements" not in markdown and "Regressions" not in markdown


def test_other_rates_or_another_mode_are_other_plans(base, tmp_path):
    raw = SCENARIO.to_dict()
    raw["phases"][2]["rate"] = 48.0
    faster = scenario_from_dict(raw)
    burst = run_dir(tmp_path / "burst", faster, synthetic_probes(faster), scale=0.4)
    found = compare(load_run(base), load_run(burst), force=True).differences.plan
    assert found == ("phases: burst 18 s at 36/s in BASE, 18 s at 48/s in RUN",)
    users = run_dir(tmp_path / "users", mode="users", scale=0.4)
    assert "mode: open arrival in BASE, users in RUN" in (
        compare(load_run(base), load_run(users), force=True).differences.plan
    )


def test_two_platforms_are_side_by_side_never_a_gate(base, tmp_path, capsys):
    other = run_dir(
        tmp_path / "agno",
        probes=synthetic_probes(SCENARIO, rss_mib=400),
        samples=synthetic_samples(
            SCENARIO, "agno", seed=7, latency_factor={("sustain", "api_read"): 1.5}
        ),
        platform={"name": "agno"},
    )
    comparison = compare(load_run(base), load_run(other))
    assert comparison.pairing is Pairing.PLATFORMS
    assert comparison.regressions == () and comparison.exit_code == 2
    higher = {(c.where, c.workload, c.what.split()[0]) for c in comparison.rises}
    assert {("sustain", "api_read", "p95"), ("system", "api", "peak")} <= higher
    assert compare_runs(base, other) == 2
    out = capsys.readouterr().out
    assert out.startswith("two platforms (agenticos in BASE, agno in RUN), not a regression gate: ")
    assert "higher: system, api: peak RSS 200.1 MiB -> 400.1 MiB" in out
    markdown = (other / "compare-base.md").read_text()
    assert markdown.index("Two platforms (agenticos in BASE, agno in RUN)") < markdown.index(
        "## Per phase and workload"
    )
    assert "## Regressions" not in markdown and "### Higher in RUN" in markdown


def slower(tmp_path, name, probes):
    """The base run's samples with api_read 3x slower and every upload failing in sustain."""
    return run_dir(
        tmp_path / name,
        probes=probes,
        samples=synthetic_samples(
            SCENARIO,
            name,
            seed=7,
            latency_factor={("sustain", "api_read"): 3.0},
            error_rates={("sustain", "ingest"): 1.0},
        ),
        platform={"name": "agenticos"},
        scale=0.4,
    )


def test_a_rise_on_a_busy_machine_is_left_untold_but_errors_still_count(base, tmp_path):
    busy = slower(tmp_path, "busy", synthetic_probes(SCENARIO, cpu_wait=80.0))
    comparison = compare(load_run(base), load_run(busy))
    assert (
        "the API process waited for a CPU this share of its ready time, BASE -> RUN: ramp 4% "
        "-> 63%, sustain 5% -> 66%"
    ) in " ".join(comparison.environment)
    found = {(c.where, c.workload, c.what.split()[0]) for c in comparison.regressions}
    assert ("sustain", "ingest", "error") in found
    assert ("sustain", "api_read", "p95") not in found
    untold = [c for c in comparison.untold if c.where == "sustain" and c.workload == "api_read"]
    assert untold and "the machine's or the release's, untold" in untold[0].what
    assert "waited for a CPU 5% of its ready time in BASE and 66% in RUN in sustain" in (
        untold[0].what
    )
    assert comparison.exit_code == 1


def reads_slower(tmp_path, name, cpu_wait):
    """The base run's stack with api_read 3x slower in sustain, its API waiting ``cpu_wait``
    percent of a core for a CPU."""
    return run_dir(
        tmp_path / name,
        probes=synthetic_probes(SCENARIO, cpu_wait=cpu_wait),
        samples=synthetic_samples(
            SCENARIO, name, seed=7, latency_factor={("sustain", "api_read"): 3.0}
        ),
        topology=TOPOLOGY.format(port=47437),
        platform={"name": "agenticos"},
        scale=0.4,
    )


def test_a_busy_machine_with_only_latency_rises_is_no_answer_not_a_pass(base, tmp_path, capsys):
    busy = reads_slower(tmp_path, "busy", cpu_wait=80.0)
    assert compare_runs(base, busy) == 2
    out = capsys.readouterr().out
    assert out.startswith("0 regressions (exit 2), 0 improvements, ")
    assert "the machine leaves untold" in out.splitlines()[0]
    assert "not a pass" in (busy / "compare-base.md").read_text()
    # The same slower run on a machine that left the platform alone is a regression.
    assert compare_runs(base, reads_slower(tmp_path, "quiet", cpu_wait=2.0)) == 1


def test_the_kits_own_lag_alone_excuses_no_rise(base, tmp_path):
    """A slower platform on one host keeps the generator waiting too: its lag is said on top,
    but only the platform's own wait for a CPU can leave a rise untold."""
    lagging = synthetic_probes(SCENARIO)
    lag = (lagging.probe == "generator.0") & (lagging.metric == "loop_lag_ms")
    lagging.loc[lag, "value"] = 40.0
    comparison = compare(load_run(base), load_run(slower(tmp_path, "lagging", lagging)))
    assert "the kit's own processes waited longer for a CPU during RUN" in " ".join(
        comparison.environment
    )
    assert ("sustain", "api_read") in {(c.where, c.workload) for c in comparison.regressions}


def test_one_regression_is_said_in_the_singular(base, tmp_path, capsys):
    bigger = run_dir(
        tmp_path / "bigger",
        probes=synthetic_probes(SCENARIO, rss_mib=300),
        platform={"name": "agenticos"},
    )
    assert compare_runs(base, bigger) == 1
    assert capsys.readouterr().out.startswith("1 regression (exit 1), 0 improvements")
    assert "1 regression (exit 1)." in (bigger / "compare-base.md").read_text()


def test_every_figure_goes_through_one_check():
    measure = Measure(floor=10.0, tolerance=0.2)
    rules = Rules(min_samples=30)

    def reading(old, new, counts=None):
        return Reading(old, new, f"x {old} -> {new}", counts)

    up, down, flat = reading(100, 150), reading(150, 100), reading(100, 105)
    assert check("p", "w", up, up, measure, rules).outcome is Outcome.ROSE
    assert check("p", "w", down, down, measure, rules).outcome is Outcome.FELL
    assert check("p", "w", flat, flat, measure, rules) is None
    few = reading(100, 150, counts=(29, 400))
    change = check("p", "w", few, few, measure, rules)
    assert change.outcome is Outcome.UNPROVEN and "too few samples (< 30)" in change.what
    # No figure on one side: nothing to say either way.
    assert check("p", "w", None, None, measure, rules) is None
