"""Locust's statistics fed a batch at a time count what Locust's own per-request path counts.

The same samples go through Locust's ``log_request``/``log_error`` one by one (what
``events.request`` did) and through ``log_samples`` at once; every entry and the total
must agree: requests, failures and the failure table, response times (sum, least,
most, Locust's buckets), bytes, and the requests per second, by the second each ended.
"""

import importlib

import pytest

from engine.samples import Sample

START = 1_700_000_000.0
SAMPLES = [
    Sample(0, "api_read", 0, 0.0, 0.001, 0.013, None, 0, 200, "ok", "", 25),
    Sample(1, "api_read", 0, 0.2, 0.201, 1.45, None, 0, 500, "failed", "HTTP 500", 40),
    Sample(2, "chat_stream", 0, 0.4, 0.4, 2.9, 812.5, 9, 101, "ok", "", 300),
    Sample(3, "chat_stream", 0, 0.6, 0.6, 1.1, 300.0, 1, 101, "cancelled", "", 30),
    Sample(4, "agent_run", 0, 0.8, None, 12.0, None, 0, 0, "abandoned", "abandoned at end", 0),
    Sample(5, "api_read", 1, 1.0, 1.002, 1.02, None, 0, 200, "ok", "", 25),
]
FIELDS = (
    "num_requests",
    "num_failures",
    "num_none_requests",
    "total_content_length",
    "min_response_time",
    "max_response_time",
)


@pytest.fixture(scope="module")
def locust_stats():
    """runner.locust_stats, with Locust imported as a library: its gevent monkey patching is
    for a load process, and comes too late in pytest's (ssl is already imported)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOCUST_SKIP_MONKEY_PATCH", "1")
        yield importlib.import_module("runner.locust_stats")


def _one_by_one(m):
    stats = m.RequestStats()
    for s in SAMPLES:
        latency_ms = (s.finished_s - s.sent_s) * 1000 if s.sent_s is not None else 0
        stats.log_request(m.kind_of(s.workload), s.workload, latency_ms, s.bytes)
        if s.outcome not in ("ok", "cancelled"):
            stats.log_error(m.kind_of(s.workload), s.workload, m.RequestFailed(s.detail))
    return stats


def test_a_batch_counts_as_its_requests_one_by_one_would(locust_stats):
    expected, got = _one_by_one(locust_stats), locust_stats.RequestStats()
    locust_stats.log_samples(got, SAMPLES[:3], START)
    locust_stats.log_samples(got, SAMPLES[3:], START)
    assert set(got.entries) == set(expected.entries)
    for key, entry in [*expected.entries.items(), (None, expected.total)]:
        ours = got.total if key is None else got.entries[key]
        for name in FIELDS:
            assert getattr(ours, name) == getattr(entry, name), (key, name)
        assert ours.total_response_time == pytest.approx(entry.total_response_time)
        assert dict(ours.response_times) == dict(entry.response_times), key
        assert sum(ours.num_reqs_per_sec.values()) == entry.num_requests
    assert {k: e.occurrences for k, e in got.errors.items()} == {
        k: e.occurrences for k, e in expected.errors.items()
    }


def test_requests_are_counted_in_the_second_they_ended(locust_stats):
    stats = locust_stats.RequestStats()
    locust_stats.log_samples(stats, SAMPLES, START)
    assert dict(stats.total.num_reqs_per_sec) == {
        int(START): 1,
        int(START) + 1: 3,
        int(START) + 2: 1,
        int(START) + 12: 1,
    }
    assert stats.total.last_request_timestamp == START + 12.0
