"""Per-phase, per-workload statistics from raw samples, with nearest-rank percentiles.

Percentiles are nearest-rank over the samples themselves, so every percentile is
a latency something actually observed; latency is over successes only, and every
percentile travels with the count it was taken over. Each phase is counted twice:
by the phase an arrival was offered in (how requests fared) and by completion
inside the phase's window (throughput), since the two diverge when the
deployment falls behind.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import cast

import numpy as np
import pandas as pd

from engine.mix import CANCEL_STEP
from engine.run_record import PhaseRecord
from inputs.scenario import Scenario
from reports.followups import NONE as NO_FOLLOW_UPS
from reports.followups import FollowUpCounts, counts_by_workload, lost_groups
from reports.loop import STEP_OVERHEAD_MS
from reports.rundir import Run

PERCENTS = (50, 95, 99)
STREAM_WORKLOAD = "chat_stream"


@dataclass(frozen=True)
class Percentiles:
    """Nearest-rank p50/p95/p99 and the worst value over ``count`` observations."""

    count: int
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None


NO_SAMPLES = Percentiles(0)


def percentile_table(frame: pd.DataFrame, keys: list[str], column: str) -> pd.DataFrame:
    """Nearest-rank percentiles of ``column`` per group of ``keys``, skipping empty cells.

    One sort of the whole frame serves every group: rank ``ceil(p * n / 100)`` is
    picked from each group's sorted run, so a million samples take one sort, not
    a Python loop per group. Columns: count, p50, p95, p99, max.
    """
    data = frame.loc[frame[column].notna(), [*keys, column]]
    data = data.sort_values([*keys, column], kind="stable")
    # Groups appear in sorted order, so their sizes give each group's first row.
    sizes = data.groupby(keys, observed=True, sort=False).size()
    n = sizes.to_numpy()
    starts = np.cumsum(n) - n
    values = data[column].to_numpy(dtype="float64")
    table = {"count": n}
    for p in PERCENTS:
        table[f"p{p}"] = values[starts + (p * n + 99) // 100 - 1]
    table["max"] = values[starts + n - 1]
    return pd.DataFrame(table, index=sizes.index)


def percentiles_by(frame: pd.DataFrame, key: str, column: str) -> dict[str, Percentiles]:
    """Percentiles of ``column`` for each value of ``key`` that has observations."""
    table = percentile_table(frame, [key], column)
    return {
        str(name): Percentiles(int(row["count"]), *(float(row[c]) for c in table.columns[1:]))
        for name, row in table.iterrows()
    }


def percentiles_of(values: pd.Series) -> Percentiles:
    """Percentiles of one set of observations (empty cells skipped)."""
    frame = values.to_frame("value").assign(group="")
    return percentiles_by(frame, "group", "value").get("", NO_SAMPLES)


@dataclass(frozen=True)
class Counts:
    """How a set of arrivals ended; ``errors`` is what the error rate counts."""

    calls: int = 0
    ok: int = 0
    failed: int = 0
    shed: int = 0
    cancelled: int = 0
    timeouts: int = 0
    abandoned: int = 0
    # Of the abandoned, those an operator's Stop cut off: never an error, not in any rate.
    stop_cut: int = 0
    errors: int = 0
    # What became of the work accepted with 202 (reports/followups.py): lost work is a failure.
    after: FollowUpCounts = NO_FOLLOW_UPS

    @property
    def successes(self) -> int:
        """Arrivals with ``ok == 1``: answered, or stopped on purpose and confirmed."""
        return self.ok + self.cancelled

    @property
    def judged(self) -> int:
        """Calls a rate is taken over: all but those an operator's Stop cut off."""
        return self.calls - self.stop_cut

    @property
    def error_rate(self) -> float | None:
        """Errors over judged calls; None when there were none (not measured, never 0)."""
        return self.errors / self.judged if self.judged else None

    @property
    def failures(self) -> int:
        """Failures other than shedding: failed, timed out, abandoned (not by an operator's
        Stop), and accepted work lost."""
        return self.failed + self.timeouts + self.abandoned - self.stop_cut + self.after.lost

    @property
    def failure_rate(self) -> float | None:
        """Failures other than shedding over judged calls."""
        return self.failures / self.judged if self.judged else None

    @property
    def shed_rate(self) -> float | None:
        """429s over judged calls."""
        return self.shed / self.judged if self.judged else None


@dataclass(frozen=True)
class WorkloadStats:
    """One workload in one slice: its counts and its latency over successes."""

    workload: str
    counts: Counts
    latency: Percentiles
    latency_due: Percentiles
    ttft: Percentiles
    # The platform's own time per step of the agent's loop (reports/loop.py), where measured.
    step_overhead: Percentiles = NO_SAMPLES
    # Arrivals whose latency is timed when they succeed: all but the chat turns the plan
    # cancels on purpose (a stream's whole-turn latency is over completed turns only).
    timeable: int = 0


@dataclass(frozen=True)
class FailureGroup:
    """Failures of one workload that share an outcome and a detail text."""

    workload: str
    outcome: str
    detail: str
    count: int


@dataclass(frozen=True)
class SliceStats:
    """Statistics over one set of samples (a phase by offer or by completion, or the run)."""

    window_s: float
    total: Counts
    workloads: tuple[WorkloadStats, ...]
    failures: tuple[FailureGroup, ...]

    def workload(self, name: str) -> WorkloadStats:
        return next(w for w in self.workloads if w.workload == name)

    @property
    def completed_per_s(self) -> float:
        return self.total.calls / self.window_s

    @property
    def successes_per_s(self) -> float:
        return self.total.successes / self.window_s


@dataclass(frozen=True)
class LatenessStats:
    """How far behind its schedule the driver sent; never-sent arrivals count as late."""

    recorded: int
    late: int
    never_sent: int
    lateness_ms: Percentiles

    @property
    def fraction(self) -> float | None:
        return self.late / self.recorded if self.recorded else None


@dataclass(frozen=True)
class PhaseStats:
    """A phase reported twice: arrivals offered in it, and arrivals completed in its window."""

    window: PhaseRecord
    recorded: int
    by_offer: SliceStats
    by_completion: SliceStats
    lateness: LatenessStats

    @property
    def name(self) -> str:
        return self.window.name

    @property
    def offered(self) -> int:
        return self.window.offered_total


@dataclass(frozen=True)
class RunStats:
    """Every phase, the whole run, and the driver's lateness over the whole run."""

    phases: tuple[PhaseStats, ...]
    whole: SliceStats
    lateness: LatenessStats

    def phase(self, name: str) -> PhaseStats | None:
        return next((p for p in self.phases if p.name == name), None)


def run_stats(run: Run) -> RunStats:
    """Statistics for every phase and the whole run of a loaded run directory, with a row
    for each workload the run offers (``Run.workloads``)."""
    samples = run.samples
    scenario = run.scenario
    names = run.workloads
    late = late_mask(samples, scenario.lateness.late_after_ms)
    stopped = run.stopped_by_operator
    if stopped:
        # An arrival the Stop cut off before it was sent was never due to be sent: not late.
        late &= ~((samples["outcome"] == "abandoned") & samples["sent_s"].isna()).to_numpy()
    phases = []
    for window in run.phases:
        offered_here = (samples["phase"] == window.name).to_numpy()
        finished = samples["finished_s"]
        done_here = ((finished >= window.start_s) & (finished < window.end_s)).to_numpy()
        phases.append(
            PhaseStats(
                window=window,
                recorded=int(offered_here.sum()),
                by_offer=slice_stats(
                    samples[offered_here], scenario, window.duration_s, names, stopped
                ),
                by_completion=slice_stats(
                    samples[done_here], scenario, window.duration_s, names, stopped
                ),
                lateness=lateness_stats(samples[offered_here], late[offered_here]),
            )
        )
    return RunStats(
        phases=tuple(phases),
        whole=slice_stats(samples, scenario, run.end_s, names, stopped),
        lateness=lateness_stats(samples, late),
    )


def send_lateness_ms(samples: pd.DataFrame) -> pd.Series:
    """``sent_s - due_s`` in ms, rounded to the microsecond so 0.1 s reads as 100, not 100.00001."""
    return ((samples["sent_s"] - samples["due_s"]) * 1000.0).round(3)


def late_mask(samples: pd.DataFrame, late_after_ms: float) -> np.ndarray:
    """True for arrivals sent more than ``late_after_ms`` after due, or never sent."""
    lateness_ms = send_lateness_ms(samples).to_numpy()
    return np.isnan(lateness_ms) | (lateness_ms > late_after_ms)


def lateness_stats(samples: pd.DataFrame, late: np.ndarray) -> LatenessStats:
    """Late count and the distribution of send lateness over the arrivals that were sent."""
    return LatenessStats(
        recorded=len(samples),
        late=int(late.sum()),
        never_sent=int(samples["sent_s"].isna().sum()),
        lateness_ms=percentiles_of(send_lateness_ms(samples)),
    )


def slice_stats(
    samples: pd.DataFrame,
    scenario: Scenario,
    window_s: float,
    names: tuple[str, ...],
    stopped: bool = False,
) -> SliceStats:
    """Counts, error rates and percentiles per named workload over ``samples``.

    Every named workload gets a row, with zero calls if it has no samples, so an
    absent workload shows up as absent instead of disappearing. ``stopped``: the
    operator stopped the run, so its abandoned arrivals were cut off, not failed.
    """
    listed = list(names)
    by_outcome = (
        samples.groupby(["workload", "outcome"], observed=True)
        .size()
        .unstack(fill_value=0)
        .reindex(index=listed, columns=list(_OUTCOME_FIELDS), fill_value=0)
    )
    success = samples["ok"] == 1
    latency_ok = timed_successes(samples)
    latency = percentiles_by(samples[latency_ok], "workload", "latency_ms")
    latency_due = percentiles_by(samples[latency_ok], "workload", "latency_due_ms")
    ttft = percentiles_by(samples[success], "workload", "ttft_ms")
    overhead = percentiles_by(samples, "workload", STEP_OVERHEAD_MS)
    after = counts_by_workload(samples)
    untimed = samples[planned_cancels(samples, scenario.chat_cancel_share)]
    cancelled = untimed.groupby("workload", observed=True).size()
    outcomes = {name: cast(pd.Series, by_outcome.loc[name]) for name in listed}
    workloads = tuple(
        WorkloadStats(
            workload=name,
            counts=_counts(
                outcomes[name],
                scenario.shed_counts_as_error,
                after.get(name, NO_FOLLOW_UPS),
                stopped,
            ),
            latency=latency.get(name, NO_SAMPLES),
            latency_due=latency_due.get(name, NO_SAMPLES),
            ttft=ttft.get(name, NO_SAMPLES),
            step_overhead=overhead.get(name, NO_SAMPLES),
            timeable=int(outcomes[name].sum()) - int(cancelled.get(name, 0) or 0),
        )
        for name in listed
    )
    return SliceStats(
        window_s=window_s,
        total=_counts(
            by_outcome.sum(), scenario.shed_counts_as_error, _summed(after.values()), stopped
        ),
        workloads=workloads,
        failures=_failures(samples[~success], lost_groups(samples)),
    )


def timed_successes(samples: pd.DataFrame) -> pd.Series:
    """Samples whose latency counts: ``ok == 1``, except a stream must have finished its turn.

    A cancelled turn is short by design, so a stream's whole-turn latency is over
    ``outcome == ok`` only; its time to first token is over every ``ok == 1``.
    """
    stream = samples["workload"] == STREAM_WORKLOAD
    return (samples["ok"] == 1) & (~stream | (samples["outcome"] == "ok"))


def planned_cancels(samples: pd.DataFrame, cancel_share: float) -> pd.Series:
    """Chat turns the plan stops after their first token (engine/mix.py ``Mix.cancels``,
    the same float operations on the same index): never timed as whole turns."""
    index = samples["index"].to_numpy(dtype="float64")
    planned = np.remainder(index * CANCEL_STEP, 1.0) < cancel_share
    return pd.Series(planned, index=samples.index) & (samples["workload"] == STREAM_WORKLOAD)


# Outcome in samples.csv -> field of Counts.
_OUTCOME_FIELDS = {
    "ok": "ok",
    "failed": "failed",
    "shed": "shed",
    "cancelled": "cancelled",
    "timeout": "timeouts",
    "abandoned": "abandoned",
}


def _counts(
    by_outcome: pd.Series, shed_is_error: bool, after: FollowUpCounts, stopped: bool
) -> Counts:
    fields = {_OUTCOME_FIELDS[o]: int(by_outcome[o]) for o in _OUTCOME_FIELDS}
    cut = fields["abandoned"] if stopped else 0
    counts = Counts(calls=sum(fields.values()), after=after, stop_cut=cut, **fields)
    return replace(counts, errors=counts.failures + (counts.shed if shed_is_error else 0))


def _summed(parts) -> FollowUpCounts:
    """Follow-up counts over several workloads."""
    names = FollowUpCounts.__dataclass_fields__
    parts = list(parts)
    return FollowUpCounts(**{n: sum(getattr(p, n) for p in parts) for n in names})


def _failures(failed: pd.DataFrame, lost: pd.Series) -> tuple[FailureGroup, ...]:
    """Failures grouped by workload, outcome and detail text, most frequent first; work lost
    after a 202 is grouped the same way, its follow-up state standing as the outcome."""
    groups = failed.groupby(["workload", "outcome", "detail"], observed=True).size()
    if len(lost):
        groups = pd.concat([groups, lost])
    groups = groups[groups > 0].sort_values(ascending=False, kind="stable")
    keyed = ((cast(tuple[str, str, str], key), n) for key, n in groups.items())
    return tuple(FailureGroup(str(w), str(o), str(d), int(n)) for (w, o, d), n in keyed)
