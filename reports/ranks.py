"""Nearest-rank values of millions of samples, exact, in bounded memory.

The reports' percentile is the k-th smallest observation of its group, k = ceil(p * n / 100)
computed in whole numbers, so it is always a value some request had. Here it is picked from
one pass over the values in order: DuckDB sorts them (out of core: a sort larger than its
memory limit spills to disk), and as the sorted rows stream by in batches each row's rank in
its group is counted, and only the values at the wanted ranks are kept. Any number of
groupings of the same values (by phase offered, by phase completed, the whole run) share the
one sort: each is a label column, the group's number or NULL.

Why not DuckDB's quantile functions (checked on DuckDB 2.0, tests/test_reports_ranks.py):
quantile_cont and median interpolate (the median of 1..10 is 5.5, where nearest rank says
5), and quantile_disc is the ceil(n * q)-th value only while q is an exact decimal: given a
DOUBLE q it computes the position in floating point and is one rank off for some n (n = 50,
q = 0.56: the 29th value, where nearest rank says the 28th; 171 such pairs below n = 3,000
among a dozen q). Its aggregate also holds every value of a group in memory at once, which
is what a day's report must not do. So every rank is computed here, in integers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc

from reports.dataset import Samples

# Groups with a wanted rank in one batch, up to which each is found by a scan of the batch
# rather than by ranking every row.
FEW_GROUPS = 32
# The percentiles every table prints, and the rank of each (100: the worst value).
PERCENTS = (50, 95, 99, 100)


def percentile_ranks(n: int) -> np.ndarray:
    """Nearest rank of p50, p95, p99 and the maximum over ``n`` observations (1-based)."""
    return np.array([(p * n + 99) // 100 for p in PERCENTS], dtype=np.int64)


@dataclass(frozen=True)
class Picked:
    """One group of one grouping: how many observations it holds, and the values at the ranks
    asked of it, in the order asked."""

    count: int
    values: np.ndarray


Ranks = Callable[[int], np.ndarray]


def pick(
    samples: Samples,
    value: str,
    where: str,
    labels: Sequence[str],
    ranks: Ranks | Sequence[Ranks] = percentile_ranks,
) -> list[dict[int, Picked]]:
    """For each label expression (an SQL integer, NULL outside every group), each group's count
    and its values at ``ranks(count)`` (one ``ranks`` for every label, or one each): the
    nearest-rank values of ``value`` over the samples where ``where`` holds and ``value`` is
    not NULL. Labels must be 0 or more."""
    where = f"({where}) AND ({value}) IS NOT NULL"
    each = [ranks] * len(labels) if callable(ranks) else list(ranks)
    groups = []
    for label, ranks in zip(labels, each, strict=True):
        rows = samples.rows(
            f"SELECT CAST({label} AS BIGINT), count(*) FROM samples "
            f"WHERE {where} AND ({label}) IS NOT NULL GROUP BY 1 ORDER BY 1"
        )
        groups.append(_Grouping([int(g) for g, _ in rows], [int(n) for _, n in rows], ranks))
    if any(g.codes.size for g in groups):
        columns = ", ".join(f"CAST({label} AS INTEGER)" for label in labels)
        query = f"SELECT {value}, {columns} FROM samples WHERE {where} ORDER BY 1"
        for batch in samples.batches(query):
            values = batch.column(0).to_numpy()
            for j, grouping in enumerate(groups):
                grouping.take(values, pc.fill_null(batch.column(j + 1), -1).to_numpy())
    return [g.picked() for g in groups]


class _Grouping:
    """The running ranks of one label's groups as sorted values stream by."""

    def __init__(self, codes: list[int], counts: list[int], ranks: Callable[[int], np.ndarray]):
        self.codes = np.array(codes, dtype=np.int64)
        self.counts = np.array(counts, dtype=np.int64)
        self.seen = np.zeros(len(codes), dtype=np.int64)
        # A label's group by direct look-up (labels are small numbers), and the smallest
        # integer type that holds a group's number (numpy sorts 16 bits by radix, in one pass).
        self._group_of = np.full(int(self.codes.max()) + 1 if codes else 1, -1, dtype=np.int64)
        self._group_of[self.codes] = np.arange(len(codes))
        self._small = np.int16 if len(codes) < 2**15 else np.int64
        wanted = [ranks(n) for n in counts]
        self._span = int(self.counts.max()) + 1 if counts else 1
        # Every (group, rank) wanted as one key, each distinct key once (p99 and the maximum
        # of a small group are one rank), and for each one asked, which key it is.
        group_of = np.arange(len(codes), dtype=np.int64).repeat([len(w) for w in wanted])
        asked = np.concatenate(wanted) if wanted else np.zeros(0, dtype=np.int64)
        self._keys, self._asked = np.unique(group_of * self._span + asked, return_inverse=True)
        self._found = np.full(len(self._keys), np.nan)
        self._wanted = wanted

    def take(self, values: np.ndarray, labels: np.ndarray) -> None:
        inside = (labels >= 0) & (labels < len(self._group_of))
        group = self._group_of[labels[inside]]
        kept = values[inside]
        inside = group >= 0
        if not inside.any():
            return
        group, kept = group[inside], kept[inside]
        counts = np.bincount(group, minlength=len(self.codes))
        # The groups with a wanted rank among this batch's rows: usually a few, each found
        # by its rows' positions; many (a chart's windows) are ranked all at once below.
        first = np.arange(len(self.codes)) * self._span + self.seen
        low = np.searchsorted(self._keys, first + 1)
        high = np.searchsorted(self._keys, first + counts, side="right")
        hit_groups = np.flatnonzero(high > low)
        if len(hit_groups) <= FEW_GROUPS:
            for g in hit_groups:
                rows = np.flatnonzero(group == g)
                wanted = self._keys[low[g] : high[g]] - first[g]
                self._found[low[g] : high[g]] = kept[rows[wanted - 1]]
            self.seen += counts
            return
        # Each row's rank in its group: the rows before this batch, then its place among the
        # batch's rows of the same group (a stable sort keeps their value order).
        order = np.argsort(group.astype(self._small), kind="stable")
        by_group = group[order]
        starts = np.flatnonzero(np.r_[True, by_group[1:] != by_group[:-1]])
        lengths = np.diff(np.r_[starts, len(by_group)])
        place = np.arange(len(by_group)) - np.repeat(starts, lengths)
        rank = self.seen[by_group] + place + 1
        keys = by_group * self._span + rank
        at = np.searchsorted(self._keys, keys)
        hit = at < len(self._keys)
        hit[hit] = self._keys[at[hit]] == keys[hit]
        self._found[at[hit]] = kept[order][hit]
        self.seen += counts

    def picked(self) -> dict[int, Picked]:
        values = self._found[self._asked]
        out, start = {}, 0
        for code, count, wanted in zip(self.codes, self.counts, self._wanted, strict=True):
            out[int(code)] = Picked(int(count), values[start : start + len(wanted)])
            start += len(wanted)
        return out
