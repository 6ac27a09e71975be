"""/stats arithmetic: histogram percentiles against raw nearest-rank, and shared counters.

The lateness figures are how a run proves the stub was not its bottleneck, so
the binned percentiles are checked against nearest-rank over the raw values
they came from, and the combined in-flight maximum against its definition.
"""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from stub.stats import N_BINS, Stats, bin_of, lateness_from_bins

# Bin widths: 10 us up to 100 ms, 1 ms up to 10 s.
_FINE_LIMIT_US, _FINE_US, _COARSE_US = 100_000, 10, 1_000


def _nearest_rank(values: list[int], p: float) -> int:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1]


@given(st.lists(st.integers(min_value=-9_000, max_value=9_000_000), min_size=1, max_size=400))
def test_binned_percentiles_bound_raw_nearest_rank(values_us):
    bins = [0] * N_BINS
    for v in values_us:
        bins[bin_of(v)] += 1
    got = lateness_from_bins(bins, max(values_us))
    assert got.count == len(values_us)
    assert got.worst_ms == round(max(values_us) / 1000, 3)
    for p, binned_ms in ((50, got.p50_ms), (99, got.p99_ms)):
        raw = _nearest_rank(values_us, p)
        width = _FINE_US if raw < _FINE_LIMIT_US else _COARSE_US
        # Never flatters: at or above the raw value, by less than one bin.
        assert raw / 1000 - 0.0005 <= binned_ms <= (raw + width) / 1000 + 0.0005


def test_empty_lateness_reads_as_not_measured():
    got = lateness_from_bins([0] * N_BINS, 0)
    assert (got.count, got.p50_ms, got.p99_ms, got.worst_ms) == (0, None, None, None)


def test_combined_maximum_is_of_the_sum_not_the_sum_of_maxima():
    memory, lock = Stats.shared(2)
    a, b = Stats(memory, lock, 0), Stats(memory, lock, 1)
    for _ in range(3):
        a.begin(0)
    for _ in range(3):
        a.end()
    for _ in range(2):
        b.begin(0)
    snap = a.snapshot()
    # Peaks 3 and 2 never overlapped: the true maximum is 3, not 5.
    assert snap["max_in_flight"] == 3
    assert [p["max_in_flight"] for p in snap["processes"]] == [3, 2]
    assert snap["in_flight"] == 2
    assert snap["requests"]["/v1/chat/completions"] == 5


def test_reset_zeroes_every_process_but_keeps_what_is_in_flight():
    memory, lock = Stats.shared(2)
    a, b = Stats(memory, lock, 0), Stats(memory, lock, 1)
    a.begin(1)
    b.begin(1)
    b.begin(1)
    b.fault(0)
    b.late(0, 0.002)
    b.end()
    a.reset()
    snap = b.snapshot()
    assert snap["in_flight"] == 2
    assert snap["max_in_flight"] == 2
    assert snap["requests"]["/v1/embeddings"] == 0
    assert snap["faults"]["errors"] == 0
    assert snap["lateness"]["first_token"]["count"] == 0
    b.begin(1)  # b's first write after the reset starts its region afresh
    snap = a.snapshot()
    assert snap["requests"]["/v1/embeddings"] == 1
    assert snap["max_in_flight"] == 3
