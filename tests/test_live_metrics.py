"""The master's live metrics, counted from sample batches as the master takes them in.

No process here: batches go straight into RunMetrics and come out as Prometheus's text
format, parsed back by prometheus_client. tests/test_prometheus.py has a real Prometheus
scrape a real run.
"""

import itertools
import random
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import msgspec
import pandas as pd
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from bench.synthetic_runs import write_run_dir
from engine.run_record import PhaseRecord
from engine.samples import OUTCOMES, Sample, columns
from inputs.bad_input import SettingsError
from inputs.scenario import load_scenario
from reports.rundir import load_run
from runner.live_metrics import LATENCY_GRID_MS, RunMetrics
from runner.messages import Offered
from runner.options import PROMETHEUS, PROMETHEUS_LINGER_S

SCENARIO = load_scenario()
PHASES = [p.name for p in SCENARIO.phases]
WORKLOADS = [w.name for w in SCENARIO.workloads]


def _scrape(metrics: RunMetrics) -> dict[str, list]:
    """Every sample of every family, as Prometheus would read them: name -> [(labels, value)]."""
    registry = CollectorRegistry()
    registry.register(metrics)
    text = generate_latest(registry).decode()
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def _total(scraped, name, **labels) -> float:
    return sum(v for lab, v in scraped.get(name, []) if labels.items() <= lab.items())


def _random_samples(rng: random.Random, first: int, n: int) -> list[Sample]:
    """Samples of every outcome, some late, some never sent, some exactly at a bucket edge."""
    samples = []
    for index in range(first, first + n):
        due = index * 0.01
        outcome = rng.choice(OUTCOMES)
        sent = (
            None
            if outcome == "abandoned" and rng.random() < 0.5
            else due + rng.choice([0.0, 0.0004, 0.099, 0.1, 0.1005, 0.3])
        )
        latency = rng.choice([0.004, 0.3, 0.31, 1.2, 4.0, 95.0])
        samples.append(
            Sample(
                index,
                rng.choice(WORKLOADS),
                rng.randrange(len(PHASES)),
                due,
                sent,
                (sent if sent is not None else due) + latency,
                None,
                0,
                200,
                outcome,
                "",
                10,
            )
        )
    return samples


def _as_report_reads_them(samples: list[Sample], run_dir: Path) -> pd.DataFrame:
    """The samples as the master writes them (engine.samples.columns) and the report loads
    them: its samples table, with its own rules for what was late and what is timed."""
    # Batches here reuse indexes (a run never does); neither rule reads the index.
    frame = pd.DataFrame(columns(0, PHASES, samples)).assign(run_id="r", index=range(len(samples)))
    with load_run(write_run_dir(run_dir, SCENARIO, frame)) as run:
        return run.samples.frame("SELECT workload, latency_ms, late, timed FROM samples")


def test_counts_are_the_samples_taken_in_as_the_report_counts_them(tmp_path):
    rng = random.Random(7)
    metrics = RunMetrics()
    metrics.begin("r", SCENARIO, PHASES)
    batches = [
        (slot, _random_samples(rng, k * 500 + slot, 250)) for k in range(4) for slot in (0, 1)
    ]
    for slot, batch in batches:
        metrics.take("r", slot, batch, PHASES, [])
    every = [s for _, batch in batches for s in batch]
    scraped = _scrape(metrics)
    report = _as_report_reads_them(every, tmp_path / "run")

    assert _total(scraped, "loadkit_samples_total") == len(every)
    by_outcome = Counter(s.outcome for s in every)
    for outcome in OUTCOMES:
        assert _total(scraped, "loadkit_samples_total", outcome=outcome) == by_outcome[outcome]
    assert _total(scraped, "loadkit_late_total") == report["late"].sum() > 0
    timed = report[report["timed"]]
    assert _total(scraped, "loadkit_latency_seconds_count") == len(timed) > 0
    for workload in WORKLOADS:
        mine = timed[timed["workload"] == workload]
        assert _total(scraped, "loadkit_latency_seconds_count", workload=workload) == len(mine)
        assert _total(scraped, "loadkit_latency_seconds_sum", workload=workload) == pytest.approx(
            mine["latency_ms"].sum() / 1000, abs=1e-3
        )


def test_every_series_exists_at_zero_from_the_start():
    metrics = RunMetrics()
    metrics.begin("r", SCENARIO, PHASES)
    scraped = _scrape(metrics)
    series = scraped["loadkit_samples_total"]
    assert len(series) == len(WORKLOADS) * len(PHASES) * len(OUTCOMES)
    assert all(value == 0 for _, value in series)
    assert len(scraped["loadkit_offered_total"]) == len(WORKLOADS) * len(PHASES)


def test_the_latency_buckets_hold_the_scenarios_limits_and_timeouts_as_edges():
    metrics = RunMetrics()
    metrics.begin("r", SCENARIO, PHASES)
    limit = 0.3  # api_read's p95 limit in scenario.yaml, 300 ms
    at_limit = Sample(0, "api_read", 1, 0.0, 0.0, limit, None, 0, 200, "ok", "", 1)
    over = Sample(1, "api_read", 1, 0.0, 0.0, limit + 1e-6, None, 0, 200, "ok", "", 1)
    metrics.take("r", 0, [at_limit, over], PHASES, [])
    buckets = {
        lab["le"]: v
        for lab, v in _scrape(metrics)["loadkit_latency_seconds_bucket"]
        if lab["workload"] == "api_read" and lab["phase"] == PHASES[1]
    }
    edges = {float(le) for le in buckets if le != "+Inf"}
    assert {0.3, 1.2, 5.0, 60.0, 90.0} | {ms / 1000 for ms in LATENCY_GRID_MS} <= edges
    assert buckets["0.3"] == 1 and buckets["+Inf"] == 2
    assert all(b <= a * 2 for a, b in itertools.pairwise(LATENCY_GRID_MS))


def test_in_flight_is_offered_minus_recorded_and_the_end_takes_run_jsons_offered():
    metrics = RunMetrics()
    metrics.begin("r", SCENARIO, PHASES)
    sample = Sample(0, "api_read", 0, 0.0, 0.0, 0.01, None, 0, 200, "ok", "", 1)
    metrics.take("r", 0, [sample], PHASES, [Offered(0, "api_read", 5), Offered(0, "rag_query", 2)])
    metrics.take("r", 1, [], PHASES, [Offered(0, "api_read", 4)])
    scraped = _scrape(metrics)
    assert _total(scraped, "loadkit_offered_total") == 11
    assert _total(scraped, "loadkit_in_flight", workload="api_read") == 8
    assert _total(scraped, "loadkit_in_flight", workload="rag_query") == 2
    # A later batch replaces the process's earlier count (it is cumulative), never adds to it.
    metrics.take(
        "r", 1, [msgspec.structs.replace(sample, index=1)], PHASES, [Offered(0, "api_read", 6)]
    )
    scraped = _scrape(metrics)
    assert _total(scraped, "loadkit_offered_total", workload="api_read") == 11
    assert _total(scraped, "loadkit_in_flight", workload="api_read") == 9
    # The end: run.json's offered (here a lost process's share of the plan included).
    offered = {w: 0 for w in WORKLOADS} | {"api_read": 20, "rag_query": 3}
    phases = [PhaseRecord(p, 1.0, 0.0, 1.0, 0) for p in PHASES]
    metrics.end("r", [msgspec.structs.replace(phases[0], offered=offered), *phases[1:]])
    scraped = _scrape(metrics)
    assert _total(scraped, "loadkit_offered_total") == 23
    assert _total(scraped, "loadkit_in_flight") == 0
    assert _total(scraped, "loadkit_samples_total") == 2


def test_each_run_keeps_its_own_series():
    metrics = RunMetrics()
    sample = Sample(0, "api_read", 0, 0.0, 0.0, 0.01, None, 0, 200, "ok", "", 1)
    for run in ("first", "second"):
        metrics.begin(run, SCENARIO, PHASES)
        metrics.take(run, 0, [sample], PHASES, [Offered(0, "api_read", 1)])
    metrics.take("gone", 0, [sample], PHASES, [])
    scraped = _scrape(metrics)
    assert _total(scraped, "loadkit_samples_total", run_id="first") == 1
    assert _total(scraped, "loadkit_samples_total", run_id="second") == 1
    assert _total(scraped, "loadkit_samples_total") == 2


@pytest.mark.parametrize(
    ("given", "address"),
    [
        ("9646", ("127.0.0.1", 9646)),
        (":9646", ("127.0.0.1", 9646)),
        ("0.0.0.0:9646", ("0.0.0.0", 9646)),
        ("[::1]:9646", ("::1", 9646)),
        (None, None),
    ],
)
def test_a_port_alone_binds_loopback(given, address):
    assert PROMETHEUS.value(SimpleNamespace(prometheus=given)) == address


@pytest.mark.parametrize("given", ["metrics", "host:", "host:0", "host:65536", "host:9x"])
def test_a_bad_address_is_one_line_naming_the_option(given):
    with pytest.raises(SettingsError, match=r"^--prometheus: .* give e\.g\. --prometheus"):
        PROMETHEUS.value(SimpleNamespace(prometheus=given))


@pytest.mark.parametrize("given", ["-1", "soon", "nan"])
def test_a_bad_linger_is_refused(given):
    with pytest.raises(SettingsError, match=r"^--prometheus-linger-s: "):
        PROMETHEUS_LINGER_S.value(SimpleNamespace(prometheus_linger_s=given))


def test_the_stream_histograms_are_the_reports_inter_token_latency_longest_gap_and_tpot(tmp_path):
    """Chat turns of 0 to 32 tokens, every outcome: the inter-token, longest-gap and per-token
    histograms count and sum exactly the turns the report derives them for (completed, two
    tokens or more; one or more for time per output token), and the token counter is the
    report's output tokens."""
    rng = random.Random(11)
    samples = []
    for index in range(600):
        outcome = rng.choice(OUTCOMES)
        tokens = rng.choice([0, 1, 2, 8, 32])
        ttft = rng.uniform(5, 500) if tokens else None
        last = ttft + (tokens - 1) * rng.uniform(1, 40) if tokens else None
        stall = rng.uniform(1, 3000) if tokens >= 2 else None
        samples.append(
            Sample(
                index, "chat_stream", rng.randrange(len(PHASES)), index * 0.01, index * 0.01,
                index * 0.01 + 2.0, ttft, tokens, 200, outcome, "", 10,
                ttft and ttft - 1, last, stall,
            )
        )  # fmt: skip
    metrics = RunMetrics()
    metrics.begin("r", SCENARIO, PHASES)
    metrics.take("r", 0, samples, PHASES, [])
    scraped = _scrape(metrics)
    frame = pd.DataFrame(columns(0, PHASES, samples)).assign(run_id="r")
    with load_run(write_run_dir(tmp_path / "run", SCENARIO, frame)) as run:
        report = run.samples.frame(
            "SELECT itl_ms, stall_ms, tpot_ms, tokens FROM samples WHERE timed"
        )
    itl, stall = report["itl_ms"].dropna(), report["stall_ms"].dropna()
    tpot = report["tpot_ms"].dropna()
    assert len(itl) == len(stall) > 50 and len(tpot) > len(itl)
    assert _total(scraped, "loadkit_output_tokens_total") == report["tokens"].sum()
    measures = (
        ("inter_token_latency", itl),
        ("longest_gap", stall),
        ("time_per_output_token", tpot),
    )
    for name, values in measures:
        family = f"loadkit_{name}_seconds"
        assert _total(scraped, f"{family}_count") == len(values)
        # The report derives them from times kept to the microsecond; the live ones are exact.
        assert _total(scraped, f"{family}_sum") == pytest.approx(values.sum() / 1000, abs=1e-3)
