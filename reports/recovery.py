"""Whether recover came back to sustain's band, workload by workload, and how fast.

A recover phase that stays broken fails the run (unless the scenario calls recovery
informational), because "did it come back" is what the run is for. "Recovered" is said
only of a workload whose sustain passed every threshold of its own on what is known:
there is no good band to come back to otherwise. Time to recover and the statistics of
its band (a sliding window, chance at sustain's own rate) are here too, since a fault
window's time to recover asks the same question (reports/faults.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from engine.followups import LOST, NOT_VERIFIABLE
from inputs.phases import BASELINE_PHASE, RECOVERY_PHASE
from reports import formatting as fmt
from reports.dataset import Samples, quoted
from reports.followups import AFTER
from reports.rundir import Run
from reports.stats import RunStats, WorkloadStats
from reports.thresholds import INCONCLUSIVE, NOT_MEASURED, PASS, UNTOUCHED, ThresholdResult, skipped

NOT_JUDGED = "not judged"


# Recovered: error rate within this of sustain's, and p95 within this ratio of it...
RECOVER_ERROR_POINTS = 0.01
RECOVER_P95_RATIO = 1.2
# ...or within this many ms of it: +6 ms on a 20 ms read is jitter, not a deployment
# that stayed degraded.
RECOVER_P95_SLACK_MS = 50.0
# Arrivals in the sliding window time to recover is judged over: enough that one slow
# request is not a p95 (nearest rank 19 of 20), few enough to resolve seconds at 12/s.
RECOVERY_WINDOW = 20
# A window of the baseline's own traffic falls outside its band by chance at most this
# rarely, so a steady platform (or steady injected faults) is not called "never".
BAND_CONFIDENCE = 0.99
# Outcomes that count as errors whatever the shed rule says (stats.Counts.failures).
ERROR_OUTCOMES = frozenset({"failed", "timeout", "abandoned"})

RECOVERY_RULE = (
    f"{BASELINE_PHASE}'s band for a workload is an error rate at most "
    f"{RECOVER_ERROR_POINTS * 100:g} percentage point above {BASELINE_PHASE}'s and a p95 latency "
    f"at most {RECOVER_P95_RATIO:g} x {BASELINE_PHASE}'s or at most {RECOVER_P95_SLACK_MS:g} ms "
    f"above it, each widened to what a window of {BASELINE_PHASE}'s own traffic stays within "
    f"{BAND_CONFIDENCE:.0%} of the time, so chance in a small window is not a finding. Over "
    f"the arrivals offered "
    f"in {RECOVERY_PHASE}, in order of their due time, a window of {RECOVERY_WINDOW} consecutive "
    f"arrivals slides one at a time; time to recover is the seconds from the start of "
    f"{RECOVERY_PHASE} to the first arrival whose window is inside the band and from which "
    f"every window keeps its errors inside it and the p95 over all the rest of the phase "
    f"stays inside it (p95 compared only over {RECOVERY_WINDOW} successes or more: below that "
    f"a nearest-rank p95 is the maximum; a window's p95 is its 19th value, so two slow "
    f"requests at the phase's end are not a platform that stayed degraded), and 'never, "
    f"within the phase' when no arrival qualifies. Lost accepted work counts as an error; "
    f"accepted work that cannot be "
    f"verified must be inside the band counted either way, else recovery is not measured. "
    f"A workload that recovers within the phase recovered; one whose {BASELINE_PHASE} did not "
    f"pass every threshold of its own is not judged (there is no good band to come back to), "
    f"and one with fewer arrivals in either phase than the scenario's minimum is inconclusive"
)


@dataclass(frozen=True)
class RecoveryCheck:
    """One workload's recover numbers against its sustain band, and when it came back.

    ``time_to_recover_s`` is None unless the status is "recovered"; ``window`` is how
    many arrivals each sliding window held (fewer than RECOVERY_WINDOW when the phase
    had fewer).
    """

    workload: str
    baseline: WorkloadStats
    recover: WorkloadStats
    status: str
    time_to_recover_s: float | None = None
    window: int = 0
    # Why a workload was not judged, not measured or inconclusive; empty otherwise.
    why: str = ""


@dataclass(frozen=True)
class Recovery:
    """Whether recover came back to sustain's numbers, workload by workload."""

    checks: tuple[RecoveryCheck, ...]
    status: str
    required: bool = True


RECOVERED = "recovered"
NOT_RECOVERED = "not recovered"
NEVER = "never, within the phase"


def recovery(
    run: Run, stats: RunStats, thresholds: tuple[ThresholdResult, ...] = ()
) -> Recovery | None:
    """Whether each workload came back to the baseline's band in recover, and how fast.

    None without both phases. A workload whose baseline did not pass every threshold
    of its own is "not judged": coming back to a broken or unknown band proves
    nothing. One with fewer arrivals than ``judging.min_counts.recovery`` in either
    phase is inconclusive. A workload skipped at preflight has its own row already.
    """
    baseline, recover = stats.phase(BASELINE_PHASE), stats.phase(RECOVERY_PHASE)
    if baseline is None or recover is None:
        return None
    unpassed: dict[str, list[str]] = {}
    for t in thresholds:
        if t.phase == BASELINE_PHASE and t.status != PASS:
            unpassed.setdefault(t.workload, []).append(f"{fmt.metric_name(t.metric)} {t.status}")
    need = run.scenario.judging.min_counts.recovery
    left_out = skipped(run)
    checks = []
    for before, after in zip(baseline.judged.workloads, recover.judged.workloads, strict=True):
        name = before.workload
        if name in left_out:
            continue
        if min(before.counts.calls, after.counts.calls) < need:
            why = (
                f"{fmt.plural(before.counts.calls, 'arrival')} in {BASELINE_PHASE} and "
                f"{after.counts.calls:,} in {RECOVERY_PHASE}; recovery needs {need:,} in each"
            )
            checks.append(RecoveryCheck(name, before, after, INCONCLUSIVE, why=why))
        elif name in unpassed:
            why = f"{BASELINE_PHASE} did not pass: " + ", ".join(unpassed[name])
            checks.append(RecoveryCheck(name, before, after, NOT_JUDGED, why=why))
        else:
            checks.append(_recovery_check(run, (before, after), recover.window.start_s))
    return Recovery(tuple(checks), _overall(checks), run.scenario.judging.recovery_required)


@dataclass(frozen=True)
class RecoverArrivals:
    """One workload's arrivals offered in recover, in order of due time (then of the file),
    as recovery reads them: due, a known error (a failure, lost work), accepted work nobody
    could verify, and the latency of each timed success (NaN otherwise)."""

    due: np.ndarray
    errors: np.ndarray
    unverified: np.ndarray
    latency: np.ndarray

    @classmethod
    def read(
        cls,
        samples: Samples,
        workload: str,
        shed_is_error: bool,
        span: tuple[float, float] | None = None,
    ) -> RecoverArrivals:
        """Recover's arrivals no fault window touched, or (``span``) those due from its start
        to its end, as a window's time to recover reads them."""
        outcomes = ERROR_OUTCOMES | ({"shed"} if shed_is_error else set())
        where = f"phase = ? {UNTOUCHED}"
        params: list[object] = [RECOVERY_PHASE]
        if span is not None:
            where, params = f"due_s >= ? AND due_s < ? {UNTOUCHED}", [*span]
        got = samples.arrays(
            f"SELECT due_s, outcome IN ({quoted(sorted(outcomes))}) OR {AFTER} IN "
            f"({quoted(LOST)}) AS errors, {AFTER} = '{NOT_VERIFIABLE}' AS unverified, "
            "CASE WHEN timed THEN latency_ms END AS latency FROM samples "
            f"WHERE {where} AND workload = ? ORDER BY due_s, seq",
            [*params, workload],
        )
        return cls(
            got["due_s"].astype("float64"),
            got["errors"].astype(bool),
            got["unverified"].astype(bool),
            got["latency"].astype("float64"),
        )


def baseline_latencies(samples: Samples, workload: str) -> np.ndarray:
    """The timed successes' latencies of ``workload`` in the baseline phase that no fault
    window touched, sorted."""
    return samples.arrays(
        f"SELECT latency_ms FROM samples WHERE phase = ? AND workload = ? AND timed {UNTOUCHED} "
        "AND latency_ms IS NOT NULL ORDER BY latency_ms",
        [BASELINE_PHASE, workload],
    )["latency_ms"].astype("float64")


def _recovery_check(
    run: Run, stats: tuple[WorkloadStats, WorkloadStats], start_s: float
) -> RecoveryCheck:
    """Recovered if inside the band with its unverifiable accepted work counted as lost; not
    recovered if outside even with that work counted as done; else not measured."""
    before, after = stats
    name, shed = before.workload, run.scenario.shed_counts_as_error
    rate = before.counts.error_rate or 0.0
    arrivals = RecoverArrivals.read(run.samples, name, shed)
    sustain = baseline_latencies(run.samples, name)
    seconds, window = time_to_recover(arrivals, sustain, rate, start_s, unverified_lost=True)
    if seconds is not None:
        return RecoveryCheck(name, before, after, RECOVERED, seconds, window)
    unverified = after.counts.after.unverified
    if unverified and time_to_recover(arrivals, sustain, rate, start_s)[0] is not None:
        why = (
            f"back in the band only if its {unverified:,} not verifiable accepted arrivals in "
            f"{RECOVERY_PHASE} were processed"
        )
        return RecoveryCheck(name, before, after, NOT_MEASURED, None, window, why)
    return RecoveryCheck(name, before, after, NOT_RECOVERED, None, window)


def _overall(checks: list[RecoveryCheck]) -> str:
    """The worst status among the workloads: what the recovery section's conclusion leads with."""
    statuses = {c.status for c in checks}
    for status in (NOT_RECOVERED, NOT_MEASURED, INCONCLUSIVE, RECOVERED, NOT_JUDGED):
        if status in statuses:
            return status
    return INCONCLUSIVE


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) <= k)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def _error_limit(window: int, rate: float) -> int:
    """Most errors a window may hold: sustain's rate + the points, or chance at sustain's rate.

    The chance part is the count a window of sustain's own traffic stays under with
    probability BAND_CONFIDENCE, so injected faults at a steady rate are not "never".
    """
    by_points = math.floor((rate + RECOVER_ERROR_POINTS) * window + 1e-9)
    by_chance = next(
        k for k in range(window + 1) if _binomial_cdf(k, window, rate) >= BAND_CONFIDENCE
    )
    return max(by_points, by_chance)


def _p95_limit(ordered: np.ndarray) -> float:
    """The highest in-band p95 of a window of RECOVERY_WINDOW timed successes, from the
    baseline's latencies in order.

    The larger of RECOVER_P95_RATIO x sustain's p95, sustain's p95 +
    RECOVER_P95_SLACK_MS, and the sustain latency that a window of sustain's own
    traffic keeps its p95 under with probability BAND_CONFIDENCE (a p95 over 20
    requests is their 19th: one in four such windows of a steady platform lies
    above the platform's own p95).
    """
    n = len(ordered)
    p95 = ordered[(95 * n + 99) // 100 - 1]
    rank = (95 * RECOVERY_WINDOW + 99) // 100
    # Smallest order statistic j with P(window p95 <= x_j) >= confidence; monotone in j.
    low, high = 1, n
    while low < high:
        j = (low + high) // 2
        if 1 - _binomial_cdf(rank - 1, RECOVERY_WINDOW, j / n) >= BAND_CONFIDENCE:
            high = j
        else:
            low = j + 1
    return float(max(RECOVER_P95_RATIO * p95, p95 + RECOVER_P95_SLACK_MS, ordered[low - 1]))


def time_to_recover(
    arrivals: RecoverArrivals,
    baseline_ms: np.ndarray,
    baseline_rate: float,
    start_s: float,
    unverified_lost: bool = False,
) -> tuple[float | None, int]:
    """Seconds from ``start_s`` to the first arrival from which the workload is back in the
    baseline's band and stays there: its window inside the band, every later window's
    errors inside it, and the p95 over the whole rest of the phase inside it.

    Returns (None, window) when no arrival qualifies: never, within the phase. Windows
    are RECOVERY_WINDOW consecutive arrivals by due time (all of them when there are
    fewer); an error is a failed sample or accepted work lost after it (and, with
    ``unverified_lost``, accepted work nobody could verify). Errors are held window by
    window, since a failure is never noise; latency is held as the p95 of the rest of the
    phase, since a window's p95 is its 19th value and two slow requests in the last
    seconds (a busy machine's pause) would otherwise read as a platform that never came
    back. A p95 is nearest-rank over timed successes and compared only over
    RECOVERY_WINDOW of them or more, when the baseline had some.
    """
    window = min(RECOVERY_WINDOW, len(arrivals.due))
    errors = arrivals.errors | (arrivals.unverified if unverified_lost else False)
    error_counts = sliding_window_view(errors.astype("int64"), window).sum(axis=1)
    errors_in_band = error_counts <= _error_limit(window, baseline_rate)
    # Back from an arrival on: every window from there holds its errors inside the band
    # (and, below, its own window its p95).
    back = np.flip(np.logical_and.accumulate(np.flip(errors_in_band)))
    latency = arrivals.latency
    limit = _p95_limit(baseline_ms) if len(baseline_ms) else np.inf
    if len(baseline_ms):
        # Below RECOVERY_WINDOW successes a nearest-rank p95 is the window's maximum:
        # such a window is judged by its errors alone.
        windows = sliding_window_view(latency, window)
        full = (~np.isnan(windows)).sum(axis=1) >= RECOVERY_WINDOW
        back &= ~full | (np.nan_to_num(_window_p95(windows), nan=np.inf) <= limit)
    # The nearest-rank p95 of the rest of the phase from each arrival on is inside the band
    # when at least its rank of those timed successes are: counted from the end, once.
    timed = ~np.isnan(latency)
    rest = np.cumsum(timed[::-1])[::-1]
    rest_in_band = np.cumsum((timed & (latency <= limit))[::-1])[::-1]
    p95_stays = (rest < RECOVERY_WINDOW) | (rest_in_band >= (95 * rest + 99) // 100)
    qualifies = np.flatnonzero(back & p95_stays[: len(back)])
    if len(qualifies) == 0:
        return None, window
    k = int(qualifies[0])
    return (0.0 if k == 0 else max(0.0, float(arrivals.due[k]) - start_s)), window


# Windows sorted at a time: each is RECOVERY_WINDOW values, so a block is a few MB.
WINDOW_BLOCK = 50_000


def _window_p95(windows: np.ndarray) -> np.ndarray:
    """Nearest-rank p95 of each row over its non-NaN values; NaN for a row with none (sorted a
    block of rows at a time: a sorted copy of every window of a long phase is twenty times
    the phase)."""
    out = np.empty(len(windows))
    for start in range(0, len(windows), WINDOW_BLOCK):
        block = windows[start : start + WINDOW_BLOCK]
        ordered = np.sort(block, axis=1)
        counts = (~np.isnan(block)).sum(axis=1)
        rank = np.maximum((95 * counts + 99) // 100 - 1, 0)
        values = ordered[np.arange(len(ordered)), rank]
        out[start : start + WINDOW_BLOCK] = np.where(counts > 0, values, np.nan)
    return out
