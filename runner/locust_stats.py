"""Locust's own statistics, fed from the kit's samples a batch at a time.

Locust's request table, its charts and its CSV files count what the kit offered: one
request per sample (an abandoned arrival a failure, a chat turn one request, its
first token no second one). Fed through ``events.request`` as each sample was
recorded, that cost a fifth of a list read's instructions (bench/instructions.py):
Locust logs a request twice (its entry and the total), each with the time of day and
a bucketed response time. A batch is instead taken in the way Locust's master takes
a worker's report: per request name, the counts, the response times bucketed by
Locust's own ``bucket_response_time`` and the requests per second by the second each
ended, as the serialized entry a worker sends, merged with ``StatsEntry.extend``.
Failures go through ``log_error`` one by one, so its failure table names each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from locust import stats as locust_stats
from locust.stats import RequestStats, StatsEntry

from engine.samples import SUCCESSFUL, Sample
from engine.serve import CHAT


class RequestFailed(Exception):
    """What Locust's failure table shows for a failed sample: its stable detail text."""


def kind_of(workload: str) -> str:
    """The request type Locust shows a workload under: a chat turn's WebSocket, else HTTP."""
    return "WS" if workload == CHAT else "HTTP"


def log_samples(stats: RequestStats, samples: Sequence[Sample], start_epoch: float) -> None:
    """Count ``samples`` (times on the run clock that starts at ``start_epoch``) into
    ``stats`` as Locust would have counted one request each."""
    tallies: dict[str, _Tally] = {}
    for sample in samples:
        tally = tallies.get(sample.workload)
        if tally is None:
            tally = tallies[sample.workload] = _Tally()
        sent = sample.sent_s
        latency_ms = (sample.finished_s - sent) * 1000 if sent is not None else 0
        tally.add(latency_ms, sample.bytes, start_epoch + sample.finished_s)
        if sample.outcome not in SUCCESSFUL:
            stats.log_error(kind_of(sample.workload), sample.workload, RequestFailed(sample.detail))
    for workload, tally in tallies.items():
        kind = kind_of(workload)
        entry = stats.get(workload, kind)
        other = tally.entry(stats, workload, kind, entry.start_time)
        entry.extend(other)
        stats.total.extend(other)


class _Tally:
    """One request name's part of a batch, as Locust's StatsEntry counts it."""

    __slots__ = ("bytes", "count", "last_s", "max_ms", "min_ms", "per_second", "times", "total_ms")

    def __init__(self) -> None:
        self.count, self.total_ms, self.bytes = 0, 0.0, 0
        self.min_ms, self.max_ms, self.last_s = float("inf"), 0.0, 0.0
        self.times: Counter[int] = Counter()
        self.per_second: Counter[int] = Counter()

    def add(self, latency_ms: float, size: int, ended: float) -> None:
        """One request of ``latency_ms`` and ``size`` bytes that ended at epoch ``ended``."""
        self.count += 1
        self.total_ms += latency_ms
        self.bytes += size
        self.min_ms = min(self.min_ms, latency_ms)
        self.max_ms = max(self.max_ms, latency_ms)
        self.last_s = max(self.last_s, ended)
        # Looked up on the module each time: Locust lets a user replace it (custom buckets).
        self.times[locust_stats.bucket_response_time(latency_ms)] += 1
        self.per_second[int(ended)] += 1

    def entry(self, stats: RequestStats, name: str, kind: str, start_time: float) -> StatsEntry:
        """The tally as the entry a Locust worker would report for it."""
        return StatsEntry.unserialize(
            {
                "name": name,
                "method": kind,
                "last_request_timestamp": self.last_s,
                "start_time": start_time,
                "num_requests": self.count,
                "num_none_requests": 0,
                "num_failures": 0,
                "total_response_time": self.total_ms,  # type: ignore[typeddict-item]
                "max_response_time": self.max_ms,  # type: ignore[typeddict-item]
                "min_response_time": self.min_ms,  # type: ignore[typeddict-item]
                "total_content_length": self.bytes,
                "response_times": dict(self.times),
                "num_reqs_per_sec": dict(self.per_second),
                "num_fail_per_sec": {},
            },
            stats,
        )
