"""The run as Prometheus metrics, served by the master while it runs and a scrape after.

Teams watch dashboards, not run directories. The master already holds every sample
as it arrives (it appends each batch to the run's samples), so it counts them right there:
samples by workload, phase and outcome (their sum is the samples' row count), late
dispatches (as the report counts them), what the processes offered, what is in
flight, and a latency histogram over successes (the report's latency). Workers do
nothing more per request. A completed chat turn also counts its inter-token latency, its
longest gap between two tokens (a stall) and its time per output token, each a histogram of
its own, and its tokens (a counter whose rate is output tokens per second).

The counts are plain dicts updated once per sample, turned into metric families
only when Prometheus scrapes: prometheus_client's custom collector, its way of
exposing numbers kept elsewhere. Its own Counter and Histogram take a lock and a
label lookup per sample on the master's one intake path, about twice what these
counts cost (docs/internals.md, "Figures behind the code").

Every series carries the run's id, so the runs of one web-UI session stay apart
and a dashboard picks one. Counters never go down within a run; when a run ends
its offered counts become run.json's (a lost process's share of the plan included)
and in-flight falls to 0, and the process keeps serving them for a while
(``--prometheus-linger-s``) so the last scrape sees every sample.
"""

from __future__ import annotations

import bisect
import logging
import signal
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import gevent
import gevent.event
from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

from engine.run_record import PhaseRecord
from engine.samples import OK, OUTCOMES, SUCCESSFUL, Sample
from engine.serve import CHAT
from inputs.scenario import Scenario
from runner.messages import Offered

if TYPE_CHECKING:  # the load processes import this module; reports is the master's, at the end
    from reports.summary import Summary

# How summary.json reads a window's time to recover that never came (reports/recovery.py NEVER).
NEVER = "never, within the phase"

log = logging.getLogger(__name__)

# Latency bucket edges in ms, 5 ms to 90 s: each edge at most twice the one before, so
# histogram_quantile's linear interpolation inside a bucket is off by less than the bucket
# (a list read's tens of milliseconds and an agent run's seconds both resolve); 60 and 90 s
# are the default timeouts, beyond which no success can be. Each run adds its scenario's
# latency limits and timeouts as edges, so the share of successes within a limit (what a
# p95 limit judges) is counted exactly, not interpolated.
LATENCY_GRID_MS = (
    5,
    10,
    20,
    30,
    50,
    75,
    100,
    150,
    200,
    300,
    500,
    750,
    1000,
    1500,
    2000,
    3000,
    5000,
    7500,
    10_000,
    15_000,
    20_000,
    30_000,
    60_000,
    90_000,
)
# Inter-token latency and longest-gap bucket edges in ms: a token every millisecond to a
# stream that stalls for a minute, each edge at most a little over twice the one before.
GAP_GRID_MS = (1, 2, 5, 10, 20, 30, 50, 75, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000)
# Send lateness within this many ms of late_after_ms is decided from the samples' stored
# microseconds, as the report decides it; further away float noise cannot change the answer.
LATE_EXACT_WITHIN_MS = 0.002
# Threshold metrics that are latency over successes, in ms (TTFT is not this histogram's).
LATENCY_LIMIT_METRICS = ("p50_ms", "p95_ms", "p99_ms", "max_ms")


@dataclass
class _RunCounts:
    """One run's counts, keyed by label values; phases are the plan's segment names."""

    run_id: str
    workloads: tuple[str, ...]
    late_after_ms: float
    edges_ms: tuple[float, ...]
    phases: list[str] = field(default_factory=list)
    samples: Counter = field(default_factory=Counter)
    late: Counter = field(default_factory=Counter)
    offered_by_slot: dict[int, Counter] = field(default_factory=dict)
    final_offered: Counter[tuple[str, str]] | None = None
    buckets: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    latency_sum: dict[tuple[str, str], float] = field(default_factory=dict)
    # A completed stream's inter-token latency, longest gap and time per output token, over
    # the turns that have them, and the tokens of every successful sample.
    itl: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    itl_sum: dict[tuple[str, str], float] = field(default_factory=dict)
    stall: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    stall_sum: dict[tuple[str, str], float] = field(default_factory=dict)
    tpot: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    tpot_sum: dict[tuple[str, str], float] = field(default_factory=dict)
    output_tokens: Counter = field(default_factory=Counter)
    # Each fault window's results once the report has them (summary.json's ``faults``):
    # (window, workload) -> seconds to recover (inf: never) / amplification; window -> 1 when
    # its undoing failed.
    recover_s: dict[tuple[str, str], float] = field(default_factory=dict)
    amplification: dict[tuple[str, str], float] = field(default_factory=dict)
    undo_failed: dict[str, int] = field(default_factory=dict)

    def offered(self) -> Counter[tuple[str, str]]:
        """(workload, phase) -> offered: run.json's once the run ended, else the sum of every
        process's last report."""
        if self.final_offered is not None:
            return self.final_offered
        total: Counter[tuple[str, str]] = Counter()
        for counts in self.offered_by_slot.values():
            total.update(counts)
        return total


class RunMetrics:
    """The runs' counts, updated by the master as it takes in samples; a prometheus_client
    collector (``collect``) that reads them when scraped."""

    def __init__(self) -> None:
        self._runs: dict[str, _RunCounts] = {}

    def begin(self, run_id: str, scenario: Scenario, phases: list[str]) -> None:
        """A run starts: its series exist from now, at 0 (so rate() sees the first samples)."""
        limits = [t.limit for t in scenario.thresholds if t.metric in LATENCY_LIMIT_METRICS]
        timeouts = [scenario.timeouts.for_workload(w.name) * 1000 for w in scenario.workloads]
        self._runs[run_id] = _RunCounts(
            run_id=run_id,
            workloads=tuple(w.name for w in scenario.workloads if w.share > 0),
            late_after_ms=scenario.lateness.late_after_ms,
            edges_ms=tuple(sorted({*map(float, LATENCY_GRID_MS), *limits, *timeouts})),
            phases=list(phases),
        )

    def take(
        self,
        run_id: str,
        slot: int,
        samples: Iterable[Sample],
        phases: list[str],
        offered: Iterable[Offered],
    ) -> None:
        """Count one batch from process ``slot`` (its samples, the phase of each segment, and
        the process's offered-so-far)."""
        run = self._runs.get(run_id)
        if run is None:
            return
        run.phases = phases
        counted, late, buckets, sums = run.samples, run.late, run.buckets, run.latency_sum
        edges, late_after_ms = run.edges_ms, run.late_after_ms
        for sample in samples:
            workload, outcome, sent_s = sample.workload, sample.outcome, sample.sent_s
            phase = phases[sample.segment]
            key = (workload, phase)
            counted[workload, phase, outcome] += 1
            if sent_s is None or _late(sent_s, sample.due_s, late_after_ms):
                late[key] += 1
            if sent_s is not None and (
                outcome == OK or (outcome in SUCCESSFUL and workload != CHAT)
            ):
                # The stored latency_ms, to the microsecond, so a sample at a limit is
                # in the limit's bucket exactly when the report counts it within.
                latency_ms = round((sample.finished_s - sent_s) * 1000, 3)
                if key not in buckets:
                    buckets[key] = [0] * (len(edges) + 1)
                buckets[key][bisect.bisect_left(edges, latency_ms)] += 1
                sums[key] = sums.get(key, 0.0) + latency_ms
                if tokens := sample.tokens:
                    run.output_tokens[key] += tokens
                    if (last_token_ms := sample.last_token_ms) is not None:
                        _gap(run.tpot, run.tpot_sum, key, last_token_ms / tokens)
                        ttft_ms, stall_ms = sample.ttft_ms, sample.stall_ms
                        # A stream timed past its first token has both (engine.seam.Turn).
                        if tokens >= 2 and ttft_ms is not None and stall_ms is not None:
                            itl_ms = (last_token_ms - ttft_ms) / (tokens - 1)
                            _gap(run.itl, run.itl_sum, key, itl_ms)
                            _gap(run.stall, run.stall_sum, key, stall_ms)
        run.offered_by_slot[slot] = Counter(
            {(o.workload, phases[o.segment]): o.count for o in offered}
        )

    def end(self, run_id: str, phases: list[PhaseRecord]) -> None:
        """The run ended: offered becomes run.json's (its ``phases``, each with ``name`` and
        ``offered`` per workload), never below what was already shown, and nothing is in
        flight any more."""
        run = self._runs.get(run_id)
        if run is None:
            return
        final: Counter[tuple[str, str]] = Counter(
            {(w, p.name): n for p in phases for w, n in p.offered.items()}
        )
        run.final_offered = run.offered() | final
        run.phases = [p.name for p in phases]

    def faults(self, run_id: str, summary: Summary | None) -> None:
        """The run's report is written: each fault window's time to recover and amplification
        per workload, and whether its undoing failed (summary.json's ``faults``), served as
        gauges from now on."""
        run = self._runs.get(run_id)
        if run is None or summary is None or not summary.faults:
            return
        for window in summary.faults.windows:
            name = window.name
            run.undo_failed[name] = int(bool(window.undo_failed))
            for workload, figures in window.workloads.items():
                recover = figures.time_to_recover
                if recover.measured is not None:
                    run.recover_s[name, workload] = recover.measured
                elif recover.reading == NEVER:
                    run.recover_s[name, workload] = float("inf")
                amplified = figures.amplification
                if amplified is not None and amplified.measured is not None:
                    run.amplification[name, workload] = amplified.measured

    @property
    def has_runs(self) -> bool:
        """Whether any run was counted (so there are final values worth a last scrape)."""
        return bool(self._runs)

    def collect(self) -> Iterator[Metric]:
        """The metric families as of now, every run's (prometheus_client calls this)."""
        samples = CounterMetricFamily(
            "loadkit_samples",
            "Samples recorded (one per offered arrival), as the run's samples hold them",
            labels=("run_id", "workload", "phase", "outcome"),
        )
        offered = CounterMetricFamily(
            "loadkit_offered",
            "Arrivals the load processes took off the schedule (run.json's offered at the end)",
            labels=("run_id", "workload", "phase"),
        )
        late = CounterMetricFamily(
            "loadkit_late",
            "Arrivals sent more than the scenario's late_after_ms after due, or never sent",
            labels=("run_id", "workload", "phase"),
        )
        in_flight = GaugeMetricFamily(
            "loadkit_in_flight",
            "Arrivals offered and not yet recorded, as of each process's last batch",
            labels=("run_id", "workload"),
        )
        latency = HistogramMetricFamily(
            "loadkit_latency_seconds",
            "Latency of successful samples (a chat turn: completed, not cancelled)",
            labels=("run_id", "workload", "phase"),
        )
        itl = HistogramMetricFamily(
            "loadkit_inter_token_latency_seconds",
            "A completed streamed turn's inter-token latency: (last - first token) / (tokens - 1)",
            labels=("run_id", "workload", "phase"),
        )
        stall = HistogramMetricFamily(
            "loadkit_longest_gap_seconds",
            "A completed streamed turn's longest gap between two tokens (a stall)",
            labels=("run_id", "workload", "phase"),
        )
        tpot = HistogramMetricFamily(
            "loadkit_time_per_output_token_seconds",
            "A completed streamed turn's time per output token: last token / tokens",
            labels=("run_id", "workload", "phase"),
        )
        output_tokens = CounterMetricFamily(
            "loadkit_output_tokens",
            "Tokens of successful samples (its rate is output tokens per second)",
            labels=("run_id", "workload", "phase"),
        )
        recover = GaugeMetricFamily(
            "loadkit_fault_time_to_recover_seconds",
            "Seconds from a fault window's end until the workload was back in sustain's band "
            "(+Inf: never, within the phase), once the run's report is written",
            labels=("run_id", "fault", "workload"),
        )
        amplification = GaugeMetricFamily(
            "loadkit_fault_amplification",
            "Model calls per turn at the stub during a fault window over before it",
            labels=("run_id", "fault", "workload"),
        )
        undo_failed = GaugeMetricFamily(
            "loadkit_fault_undo_failed",
            "1 when a fault window's undoing failed (the run is invalid), else 0",
            labels=("run_id", "fault"),
        )
        for run in list(self._runs.values()):
            self._collect_run(run, samples, offered, late, in_flight, latency)
            for (workload, phase), counts in run.itl.items():
                _add(itl, run, workload, phase, counts, run.itl_sum)
            for (workload, phase), counts in run.stall.items():
                _add(stall, run, workload, phase, counts, run.stall_sum)
            for (workload, phase), counts in run.tpot.items():
                _add(tpot, run, workload, phase, counts, run.tpot_sum)
            for (workload, phase), n in run.output_tokens.items():
                output_tokens.add_metric((run.run_id, workload, phase), n)
            for (name, workload), value in run.recover_s.items():
                recover.add_metric((run.run_id, name, workload), value)
            for (name, workload), value in run.amplification.items():
                amplification.add_metric((run.run_id, name, workload), value)
            for name, value in run.undo_failed.items():
                undo_failed.add_metric((run.run_id, name), value)
        yield from (samples, offered, late, in_flight, latency, itl, stall, tpot, output_tokens)
        # Only once a run with fault windows was reported: a run without any exposes what it did.
        if any(run.undo_failed for run in self._runs.values()):
            yield from (recover, amplification, undo_failed)

    def _collect_run(self, run, samples, offered, late, in_flight, latency) -> None:
        done = run.offered()
        recorded: Counter = Counter()
        phases = list(dict.fromkeys(run.phases))
        for workload in run.workloads:
            for phase in phases:
                for outcome in OUTCOMES:
                    n = run.samples.get((workload, phase, outcome), 0)
                    recorded[workload] += n
                    samples.add_metric((run.run_id, workload, phase, outcome), n)
                offered.add_metric((run.run_id, workload, phase), done.get((workload, phase), 0))
                late.add_metric((run.run_id, workload, phase), run.late.get((workload, phase), 0))
                self._histogram(run, latency, workload, phase)
            offered_here = sum(n for (w, _), n in done.items() if w == workload)
            still = 0 if run.final_offered is not None else offered_here - recorded[workload]
            in_flight.add_metric((run.run_id, workload), max(0, still))

    @staticmethod
    def _histogram(run: _RunCounts, family: HistogramMetricFamily, workload, phase) -> None:
        counts = run.buckets.get((workload, phase)) or [0] * (len(run.edges_ms) + 1)
        cumulative, buckets = 0, []
        for edge_ms, n in zip((*run.edges_ms, float("inf")), counts, strict=True):
            cumulative += n
            buckets.append((floatToGoString(edge_ms / 1000), cumulative))
        sum_s = run.latency_sum.get((workload, phase), 0.0) / 1000
        family.add_metric((run.run_id, workload, phase), buckets, sum_s)


def _gap(
    buckets: dict[tuple[str, str], list[int]],
    sums: dict[tuple[str, str], float],
    key: tuple[str, str],
    ms: float,
) -> None:
    """Count one stream's gap (ITL, its longest, or its time per token) into its GAP_GRID_MS
    bucket."""
    if key not in buckets:
        buckets[key] = [0] * (len(GAP_GRID_MS) + 1)
    buckets[key][bisect.bisect_left(GAP_GRID_MS, ms)] += 1
    sums[key] = sums.get(key, 0.0) + ms


def _add(
    family: HistogramMetricFamily,
    run: _RunCounts,
    workload: str,
    phase: str,
    counts: list[int],
    sums: dict[tuple[str, str], float],
) -> None:
    """One (workload, phase)'s gap histogram, cumulative, in seconds."""
    cumulative, buckets = 0, []
    for edge_ms, n in zip((*GAP_GRID_MS, float("inf")), counts, strict=True):
        cumulative += n
        buckets.append((floatToGoString(edge_ms / 1000), cumulative))
    family.add_metric((run.run_id, workload, phase), buckets, sums[workload, phase] / 1000)


def _late(sent: float, due: float, late_after_ms: float) -> bool:
    """Whether a sent arrival was late, as the report says (reports/dataset.py's ``late``): near
    the limit from sent and due as the samples store them (microseconds), their difference
    in ms rounded as pandas rounds it; elsewhere a subtraction decides the same, cheaper."""
    behind_ms = (sent - due) * 1000.0
    if abs(behind_ms - late_after_ms) > LATE_EXACT_WITHIN_MS:
        return behind_ms > late_after_ms
    lateness_ms = (float(f"{sent:.6f}") - float(f"{due:.6f}")) * 1000.0
    return round(lateness_ms * 1000) / 1000 > late_after_ms


def serve(address: tuple[str, int], metrics: RunMetrics) -> None:
    """Serve ``metrics`` (and the master process's CPU and memory) at http://HOST:PORT/metrics;
    OSError if the address cannot be bound (in use, or not this host's)."""
    registry = CollectorRegistry()
    registry.register(metrics)
    ProcessCollector(registry=registry)
    host, port = address
    start_http_server(port, addr=host, registry=registry)
    log.info("Prometheus metrics at http://%s:%d/metrics", _url_host(host), port)


def linger(seconds: float) -> None:
    """Keep the process (and so its metrics server) alive ``seconds`` more, so Prometheus's
    next scrape reads the final values; SIGINT or SIGTERM cuts it short."""
    if seconds <= 0:
        return
    cut = gevent.event.Event()
    handlers = [gevent.signal_handler(s, cut.set) for s in (signal.SIGINT, signal.SIGTERM)]
    log.info("serving the final metrics for %g s more (--prometheus-linger-s)", seconds)
    try:
        if cut.wait(seconds):
            log.info("metrics linger cut short by a signal")
    finally:
        for handler in handlers:
            handler.cancel()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
