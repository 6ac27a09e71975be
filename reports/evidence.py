"""Evidence beyond noise for a comparison: bootstrap intervals on a p95 and an error-rate change.

Both intervals are the ordinary nonparametric bootstrap (resample each run's
samples with replacement, recompute the statistic, take the difference), drawn
exactly instead of by resampling, so they cost the same for 50 samples or five
million and give the same answer every time:

- The k-th smallest of n values resampled from a sorted sample x is
  x[ceil(U * n)], where U is the k-th smallest of n uniforms, i.e. Beta(k, n-k+1).
  One Beta draw per bootstrap replicate gives a resample's nearest-rank p95.
- A resampled error count is Binomial(n, errors / n).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Replicates per interval: the interval's ends move by well under 1% between seeds.
DRAWS = 20_000
# Fixed, so one pair of runs always gets one answer.
SEED = 20261201


@dataclass(frozen=True)
class Interval:
    """A change (RUN minus BASE) and its bootstrap confidence interval."""

    change: float
    low: float
    high: float


def _nearest_rank_draws(values: np.ndarray, percent: int, rng: np.random.Generator) -> np.ndarray:
    ordered = np.sort(values)
    n = len(ordered)
    k = (percent * n + 99) // 100
    u = rng.beta(k, n - k + 1, size=DRAWS)
    index = np.clip(np.ceil(u * n).astype(np.int64) - 1, 0, n - 1)
    return ordered[index]


def nearest_rank(values: np.ndarray, percent: int) -> float:
    """The nearest-rank percentile, as the reports compute it."""
    ordered = np.sort(values)
    return float(ordered[(percent * len(ordered) + 99) // 100 - 1])


def percentile_change(
    base: np.ndarray, run: np.ndarray, confidence: float, percent: int = 95
) -> Interval:
    """RUN's nearest-rank percentile minus BASE's, with a two-sided bootstrap interval."""
    rng = np.random.default_rng(SEED)
    draws = _nearest_rank_draws(run, percent, rng) - _nearest_rank_draws(base, percent, rng)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    return Interval(nearest_rank(run, percent) - nearest_rank(base, percent), low, high)


def rate_change(
    base_errors: int, base_calls: int, run_errors: int, run_calls: int, confidence: float
) -> Interval:
    """RUN's error rate minus BASE's, with a two-sided bootstrap interval."""
    rng = np.random.default_rng(SEED)
    old = rng.binomial(base_calls, base_errors / base_calls, size=DRAWS) / base_calls
    new = rng.binomial(run_calls, run_errors / run_calls, size=DRAWS) / run_calls
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(new - old, [tail, 100 - tail])
    return Interval(run_errors / run_calls - base_errors / base_calls, low, high)
