"""What the target is doing, in Prometheus text at GET /metrics.

AgenticOS exposes no metrics; the target does so the kit's probe path can be
tested against something real. Values are read at scrape time from the live
objects (the pool, the queues, the counters below) and never from the
database, so a scrape still answers while the pool is exhausted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass
class Counts:
    """Live counts the app updates as requests, runs and sockets come and go."""

    in_flight: int = 0
    websockets_open: int = 0
    runs_in_progress: int = 0
    requests: Counter = field(default_factory=Counter)
    runs: Counter = field(default_factory=Counter)


class _Collector:
    """Turns the live counts, pool status and queue depths into metric families."""

    def __init__(
        self,
        counts: Counts,
        pool_status: Callable[[], dict[str, int]],
        queue_depths: Callable[[], dict[str, int]],
    ) -> None:
        self.counts = counts
        self.pool_status = pool_status
        self.queue_depths = queue_depths

    def collect(self) -> Iterator[Metric]:
        counts = self.counts
        yield GaugeMetricFamily(
            "http_requests_in_flight", "HTTP requests being handled now", value=counts.in_flight
        )
        requests = CounterMetricFamily(
            "http_requests", "HTTP requests answered, by status", labels=["status"]
        )
        for status, number in sorted(counts.requests.items()):
            requests.add_metric([str(status)], number)
        yield requests
        yield GaugeMetricFamily(
            "websocket_connections_open", "Chat WebSockets open now", value=counts.websockets_open
        )
        pool = self.pool_status()
        yield GaugeMetricFamily("pool_size", "Database pool size", value=pool["size"])
        yield GaugeMetricFamily(
            "pool_checked_out", "Database connections checked out", value=pool["checked_out"]
        )
        yield GaugeMetricFamily(
            "pool_overflow", "Connections open beyond the pool size", value=pool["overflow"]
        )
        yield GaugeMetricFamily(
            "pool_waiting", "Callers waiting for a database connection", value=pool["waiting"]
        )
        for queue, depth in self.queue_depths().items():
            yield GaugeMetricFamily(
                f"{queue}_queue_depth", f"Jobs waiting in the {queue} queue", value=depth
            )
        yield GaugeMetricFamily(
            "runs_in_progress", "Agent runs holding a model call now", value=counts.runs_in_progress
        )
        runs = CounterMetricFamily(
            "runs", "Agent runs finished since start, by status", labels=["status"]
        )
        for status, number in sorted(counts.runs.items()):
            runs.add_metric([status], number)
        yield runs


def exposition(
    counts: Counts,
    pool_status: Callable[[], dict[str, int]],
    queue_depths: Callable[[], dict[str, int]],
) -> bytes:
    """The current metrics in Prometheus text format."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(counts, pool_status, queue_depths))
    return generate_latest(registry)
