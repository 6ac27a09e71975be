"""Nearest rank, exactly, out of the samples table: reports/ranks.py against the textbook rule.

The kit's percentile is the ceil(p * n / 100)-th smallest value. DuckDB's own quantiles are
not that (checked here on the DuckDB the kit pins, so an upgrade that changes them is seen):
quantile_cont and median interpolate, and quantile_disc given a DOUBLE quantile computes the
position in floating point and is one rank off for some n. A rank taken as floor((n - 1) p),
the other common definition, is off too (n = 10, p95: the 9th value, where nearest rank says
the 10th). Each case below is one those definitions get wrong, so a change of ``pick`` to any
of them fails here.
"""

from __future__ import annotations

import math
import tempfile

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reports import dataset
from reports.charts import curve_ranks
from reports.dataset import Samples
from reports.ranks import pick


def textbook(values: list[float], p: float) -> float:
    """Nearest rank as defined: the ceil(p/100 * n)-th smallest value, in exact arithmetic."""
    ordered = sorted(values)
    return ordered[math.ceil(p * len(ordered) / 100) - 1]


def table(values, groups=None) -> Samples:
    """A samples table of ``value`` (and ``g``), as the reports query one."""
    frame = pd.DataFrame({"v": values, "g": 0 if groups is None else groups})
    con = duckdb.connect()
    con.register("frame", frame)
    con.execute("CREATE TABLE samples AS SELECT * FROM frame")
    return Samples(con, tempfile.TemporaryDirectory())


def percentiles(values, percents=(50, 95, 99, 100)) -> list[float]:
    ranks = lambda n: np.array([(p * n + 99) // 100 for p in percents])  # noqa: E731
    (picked,) = pick(table(values), "v", "TRUE", ["g"], ranks)
    return list(picked[0].values)


def test_p95_of_ten_is_the_tenth_value_not_the_ninth():
    values = [float(v) for v in range(1, 11)]
    assert percentiles(values, (95,)) == [10.0]
    # floor((n - 1) * p) would take index 8: the 9th value.
    assert sorted(values)[math.floor((len(values) - 1) * 0.95)] == 9.0


def test_duckdb_quantiles_are_not_nearest_rank_where_the_kit_computes_its_own():
    con = duckdb.connect()
    # Interpolated: the median of 1..10 is 5.5; nearest rank says 5.
    assert con.execute("SELECT median(x) FROM range(1, 11) t(x)").fetchone() == (5.5,)
    # A DOUBLE quantile, its position in floating point: n = 50, q = 0.56 gives the 29th.
    found = con.execute("SELECT quantile_disc(x, 0.56::DOUBLE) FROM range(1, 51) t(x)").fetchone()
    assert found == (29,) and textbook(list(range(1, 51)), 56) == 28
    assert percentiles([float(v) for v in range(1, 51)], (56,)) == [28.0]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([7.0], [7.0, 7.0, 7.0, 7.0]),
        ([2.0, 1.0], [1.0, 2.0, 2.0, 2.0]),  # p50 of two is the lower: rank ceil(1.0) = 1
        ([3.0, 1.0, 2.0], [2.0, 3.0, 3.0, 3.0]),
        ([5.0, 5.0, 5.0, 1.0], [5.0, 5.0, 5.0, 5.0]),  # ties: rank 2 of 1,5,5,5
        (list(range(1, 101)), [50.0, 95.0, 99.0, 100.0]),  # exact ranks, no interpolation
        (list(range(1, 21)), [10.0, 19.0, 20.0, 20.0]),  # p95 of 20: rank 19, not 19.05
    ],
)
def test_nearest_rank_by_hand(values, expected):
    assert percentiles([float(v) for v in values]) == expected


def test_every_n_to_a_thousand_at_every_percent_the_reports_print_and_two_others():
    percents = (50, 95, 99, 100, 56, 7)
    sizes = np.arange(1, 1001)
    groups = np.repeat(sizes, sizes)
    values = np.random.default_rng(0).random(len(groups)) * 1000
    (picked,) = pick(
        table(values, groups),
        "v",
        "TRUE",
        ["g"],
        lambda n: np.array([(p * n + 99) // 100 for p in percents]),
    )
    for n in sizes:
        mine = list(values[groups == n])
        assert list(picked[n].values) == [textbook(mine, p) for p in percents], n


def test_empty_cells_are_skipped_and_a_group_without_values_is_absent():
    (picked,) = pick(table([np.nan, 4.0, np.nan], [0, 0, 1]), "v", "TRUE", ["g"])
    assert set(picked) == {0}
    assert (picked[0].count, picked[0].values[0]) == (1, 4.0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.floats(0, 1e6, allow_nan=False)),
        min_size=1,
        max_size=300,
    ),
    st.integers(1, 40),
)
def test_groupings_share_one_sorted_pass_across_batches(rows, batch):
    """Two groupings of the same values (by group, and all together), streamed in batches
    smaller than a group: every percentile and curve rank is the textbook value."""
    groups = [g for g, _ in rows]
    values = [v for _, v in rows]
    saved = dataset.BATCH_ROWS
    dataset.BATCH_ROWS = batch
    try:
        by_group, together = pick(table(values, groups), "v", "TRUE", ["g", "0"], curve_ranks)
    finally:
        dataset.BATCH_ROWS = saved
    for g, picked in by_group.items():
        mine = sorted(v for gg, v in rows if gg == g)
        assert picked.count == len(mine)
        assert list(picked.values) == [mine[r - 1] for r in curve_ranks(len(mine))]
    everything = sorted(values)
    assert list(together[0].values) == [everything[r - 1] for r in curve_ranks(len(values))]
