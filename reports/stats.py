"""Per-phase, per-workload statistics from raw samples, with nearest-rank percentiles.

Percentiles are nearest-rank over the samples themselves, so every percentile is
a latency something actually observed; latency is over successes only, and every
percentile travels with the count it was taken over. Each phase is counted twice:
by the phase an arrival was offered in (how requests fared) and by completion
inside the phase's window (throughput), since the two diverge when the
deployment falls behind.

Every figure is a query of the run's ``samples`` table (reports/dataset.py): counts are
grouped there, and percentiles picked from one sorted pass per measure (reports/ranks.py),
so a day's samples are never held in memory. A *slicing* cuts the samples into disjoint
slices with one SQL expression (the slice's number, NULL outside every slice): the phases
by offer, the phases by completion, the whole run, or a headline's pooled phases; every
slicing of a report is counted in the same passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from engine.followups import LOST
from engine.run_record import PhaseRecord
from inputs.scenario import Scenario
from reports.dataset import Samples, double, quoted
from reports.followups import AFTER, AFTER_DETAIL, FIELDS, FollowUpCounts
from reports.followups import NONE as NO_FOLLOW_UPS
from reports.loop import STEP_OVERHEAD_MS
from reports.ranks import Picked, pick
from reports.rundir import TOUCHED, Run

# A slice's number and its workload's place in the mix, in one label (reports/ranks.py).
WORKLOAD_SLOTS = 64


@dataclass(frozen=True)
class Percentiles:
    """Nearest-rank p50/p95/p99 and the worst value over ``count`` observations."""

    count: int
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None


NO_SAMPLES = Percentiles(0)


def percentiles_of(picked: Picked | None) -> Percentiles:
    """A group's nearest-rank p50/p95/p99 and maximum, with its count (none: no samples)."""
    if picked is None:
        return NO_SAMPLES
    return Percentiles(picked.count, *(float(v) for v in picked.values))


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
    # A streamed turn timed token by token (docs/DESIGN.md "Streams timed token by token"):
    # its first event, inter-token latency, longest gap and time per output token, over the
    # completed turns that have each; and the tokens those turns brought.
    first_event: Percentiles = NO_SAMPLES
    itl: Percentiles = NO_SAMPLES
    stall: Percentiles = NO_SAMPLES
    tpot: Percentiles = NO_SAMPLES
    output_tokens: int = 0
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


NO_LATENESS = LatenessStats(0, 0, 0, NO_SAMPLES)


@dataclass(frozen=True)
class PhaseStats:
    """A phase reported twice: arrivals offered in it, and arrivals completed in its window."""

    window: PhaseRecord
    recorded: int
    by_offer: SliceStats
    by_completion: SliceStats
    lateness: LatenessStats
    # By offer without the arrivals a fault window touched (reports/rundir.py's in_fault);
    # None in a run without windows, where it would be by_offer itself.
    untouched: SliceStats | None = None

    @property
    def name(self) -> str:
        return self.window.name

    @property
    def judged(self) -> SliceStats:
        """What the phase's thresholds and sustain's band are judged on: the arrivals offered
        in it that no fault window touched (a window's own section judges those)."""
        return self.by_offer if self.untouched is None else self.untouched

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


@dataclass(frozen=True)
class Slicing:
    """Disjoint slices of the samples: ``label`` an SQL expression giving a sample its slice's
    number (NULL outside every slice), ``windows`` each slice's length in seconds."""

    label: str
    windows: dict[int, float]


# The measures a slice's WorkloadStats carries: (field, value, which samples it is over).
MEASURES = {
    "latency": ("latency_ms", "timed"),
    "latency_due": ("latency_due_ms", "timed"),
    "ttft": ("ttft_ms", "ok = 1"),
    "step_overhead": (STEP_OVERHEAD_MS, "TRUE"),
    "first_event": ("first_event_ms", "ok = 1"),
    "itl": ("itl_ms", "timed"),
    "stall": ("stall_ms", "timed"),
    "tpot": ("tpot_ms", "timed"),
}


# A threshold metric's measure by what follows its percentile (p95_itl_ms: "itl_ms").
METRIC_MEASURES = {
    "ms": "latency",
    "ttft_ms": "ttft",
    "step_overhead_ms": "step_overhead",
    "first_event_ms": "first_event",
    "itl_ms": "itl",
    "stall_ms": "stall",
    "tpot_ms": "tpot",
}


def measured_by(metric: str, stats: WorkloadStats) -> tuple[str, Percentiles]:
    """A latency metric's percentile name and the measure it is read from (p95_itl_ms: p95 of
    the inter-token latencies)."""
    name, _, rest = metric.partition("_")
    return name, getattr(stats, METRIC_MEASURES[rest])


@dataclass(frozen=True)
class SliceTables:
    """One slicing counted: per (slice, workload), outcomes, accepted work's fate, planned
    cancels, the measures' picks; per slice, failures and lost work by their words."""

    outcomes: dict[tuple[int, str], dict[str, int]] = field(default_factory=dict)
    after: dict[tuple[int, str], dict[str, int]] = field(default_factory=dict)
    cancels: dict[tuple[int, str], int] = field(default_factory=dict)
    # The tokens of the completed (timed) turns.
    tokens: dict[tuple[int, str], int] = field(default_factory=dict)
    failures: dict[int, list[tuple[str, str, str, int]]] = field(default_factory=dict)
    lost: dict[int, list[tuple[str, str, str, int]]] = field(default_factory=dict)
    picks: dict[str, dict[tuple[int, str], Picked]] = field(default_factory=dict)


def sliced(
    run: Run,
    slicings: Sequence[Slicing],
    names: tuple[str, ...],
    stopped: bool = False,
    measures: Sequence[str] = tuple(MEASURES),
) -> list[dict[int, SliceStats]]:
    """Statistics of every slice of every slicing, a row per named workload in each."""
    tables = _tables(run.samples, run.scenario, slicings, measures)
    out = []
    for slicing, table in zip(slicings, tables, strict=True):
        out.append(
            {
                number: _slice(table, number, window, run.scenario, names, stopped)
                for number, window in slicing.windows.items()
            }
        )
    return out


def _union(slicings: Sequence[Slicing], columns: str, where: str = "TRUE") -> str:
    """The samples once per slicing, each with its slicing's number ``j`` and slice ``label``."""
    return " UNION ALL ".join(
        f"SELECT {j} AS j, CAST({s.label} AS BIGINT) AS label, {columns} FROM samples "
        f"WHERE ({where}) AND ({s.label}) IS NOT NULL"
        for j, s in enumerate(slicings)
    )


def _tables(
    samples: Samples, scenario: Scenario, slicings: Sequence[Slicing], measures: Sequence[str]
) -> list[SliceTables]:
    tables = [SliceTables() for _ in slicings]
    grouped = samples.rows(
        f"SELECT j, label, workload, outcome, {AFTER}, planned_cancel, count(*) FROM "
        f"({_union(slicings, f'workload, outcome, {AFTER}, planned_cancel')}) GROUP BY ALL"
    )
    for j, label, workload, outcome, after, cancel, n in grouped:
        table, key = tables[j], (int(label), str(workload))
        counts = table.outcomes.setdefault(key, {})
        counts[outcome] = counts.get(outcome, 0) + int(n)
        if after:
            states = table.after.setdefault(key, {})
            states[after] = states.get(after, 0) + int(n)
        if cancel:
            table.cancels[key] = table.cancels.get(key, 0) + int(n)
    brought = samples.rows(
        f"SELECT j, label, workload, sum(tokens) FROM "
        f"({_union(slicings, 'workload, tokens', 'timed')}) GROUP BY ALL"
    )
    for j, label, workload, n in brought:
        tables[j].tokens[int(label), str(workload)] = int(n or 0)
    failed = samples.rows(
        f"SELECT j, label, workload, outcome, detail, count(*) FROM "
        f"({_union(slicings, 'workload, outcome, detail', 'ok = 0')}) GROUP BY ALL"
    )
    for j, label, workload, outcome, detail, n in failed:
        tables[j].failures.setdefault(int(label), []).append((workload, outcome, detail, int(n)))
    lost_work = f"{AFTER} IN ({quoted(LOST)})"
    lost = samples.rows(
        f"SELECT j, label, workload, {AFTER}, {AFTER_DETAIL}, count(*) FROM "
        f"({_union(slicings, f'workload, {AFTER}, {AFTER_DETAIL}', lost_work)}) GROUP BY ALL"
    )
    for j, label, workload, after, detail, n in lost:
        tables[j].lost.setdefault(int(label), []).append((workload, after, detail, int(n)))
    names = list(scenario.mix)
    labels = [f"({s.label}) * {WORKLOAD_SLOTS} + wi" for s in slicings]
    for measure in measures:
        value, where = MEASURES[measure]
        for table, picked in zip(tables, pick(samples, value, where, labels), strict=True):
            table.picks[measure] = {
                _slice_and_workload(code, names): group for code, group in picked.items()
            }
    return tables


def _slice_and_workload(code: int, names: list[str]) -> tuple[int, str]:
    """A (slice, workload) label back as the slice's number and the workload's name."""
    number, slot = divmod(code, WORKLOAD_SLOTS)
    return number, names[slot]


def _slice(
    table: SliceTables,
    number: int,
    window_s: float,
    scenario: Scenario,
    names: tuple[str, ...],
    stopped: bool,
) -> SliceStats:
    """Counts, error rates and percentiles per named workload in one slice.

    Every named workload gets a row, with zero calls if it has no samples, so an
    absent workload shows up as absent instead of disappearing. ``stopped``: the
    operator stopped the run, so its abandoned arrivals were cut off, not failed.
    """
    shed_is_error = scenario.shed_counts_as_error
    workloads = []
    totals: dict[str, int] = {}
    afters = []
    for name in names:
        key = (number, name)
        outcomes = table.outcomes.get(key, {})
        for outcome, n in outcomes.items():
            totals[outcome] = totals.get(outcome, 0) + n
        after = _follow_up_counts(table.after.get(key, {}))
        afters.append(after)
        picks = {m: table.picks.get(m, {}).get(key) for m in MEASURES}
        workloads.append(
            WorkloadStats(
                workload=name,
                counts=_counts(outcomes, shed_is_error, after, stopped),
                latency=percentiles_of(picks["latency"]),
                latency_due=percentiles_of(picks["latency_due"]),
                ttft=percentiles_of(picks["ttft"]),
                step_overhead=percentiles_of(picks["step_overhead"]),
                first_event=percentiles_of(picks["first_event"]),
                itl=percentiles_of(picks["itl"]),
                stall=percentiles_of(picks["stall"]),
                tpot=percentiles_of(picks["tpot"]),
                output_tokens=table.tokens.get(key, 0),
                timeable=sum(outcomes.values()) - table.cancels.get(key, 0),
            )
        )
    return SliceStats(
        window_s=window_s,
        total=_counts(totals, shed_is_error, _summed(afters), stopped),
        workloads=tuple(workloads),
        failures=_failures(table.failures.get(number, []), table.lost.get(number, [])),
    )


def _follow_up_counts(states: dict[str, int]) -> FollowUpCounts:
    if not states:
        return NO_FOLLOW_UPS
    fields = {FIELDS[state]: n for state, n in states.items() if n}
    return FollowUpCounts(sum(fields.values()), **fields)


def _phase_slicings(run: Run) -> tuple[Slicing, list[Slicing], Slicing]:
    """The phases by offer, by completion (windows that overlap go in slicings of their own,
    since a slicing's slices are disjoint), and the whole run."""
    offer = Slicing("pi", {i: p.duration_s for i, p in enumerate(run.phases)})
    families: list[list[int]] = []
    for i, p in enumerate(run.phases):
        home = next((f for f in families if not any(_overlap(p, run.phases[k]) for k in f)), None)
        if home is None:
            families.append([i])
        else:
            home.append(i)
    done = [
        Slicing(
            "CASE "
            + " ".join(
                f"WHEN finished_s >= {double(run.phases[i].start_s)} "
                f"AND finished_s < {double(run.phases[i].end_s)} THEN {i}"
                for i in family
            )
            + " END",
            {i: run.phases[i].duration_s for i in family},
        )
        for family in families
    ]
    return offer, done, Slicing("0", {0: run.end_s})


def _overlap(a: PhaseRecord, b: PhaseRecord) -> bool:
    return a.start_s < b.end_s and b.start_s < a.end_s


def run_stats(run: Run) -> RunStats:
    """Statistics for every phase and the whole run of a loaded run directory, with a row
    for each workload the run offers (``Run.workloads``)."""
    names = run.workloads
    stopped = run.stopped_by_operator
    offer, done, whole = _phase_slicings(run)
    untouched = (
        [Slicing(f"CASE WHEN NOT {TOUCHED} THEN pi END", offer.windows)] if run.windows else []
    )
    results = sliced(run, [offer, *done, whole, *untouched], names, stopped)
    if untouched:
        *results, clean = results
    by_offer, by_done, whole_stats = results[0], results[1:-1], results[-1]
    completed = {n: stats for part in by_done for n, stats in part.items()}
    lateness = _lateness(run, offer, whole, stopped)
    phases = tuple(
        PhaseStats(
            window=window,
            recorded=lateness[0].get(i, NO_LATENESS).recorded,
            by_offer=by_offer[i],
            by_completion=completed[i],
            lateness=lateness[0].get(i, NO_LATENESS),
            untouched=clean[i] if untouched else None,
        )
        for i, window in enumerate(run.phases)
    )
    return RunStats(phases=phases, whole=whole_stats[0], lateness=lateness[1].get(0, NO_LATENESS))


def _lateness(
    run: Run, offer: Slicing, whole: Slicing, stopped: bool
) -> tuple[dict[int, LatenessStats], dict[int, LatenessStats]]:
    """Late count and the distribution of send lateness over the arrivals that were sent, by
    phase offered and over the whole run; never-sent arrivals count as late. An arrival an
    operator's Stop cut off before it was sent was never due to be sent: not late."""
    late = "late"
    if stopped:
        late = "late AND NOT (outcome = 'abandoned' AND sent_s IS NULL)"
    rows = run.samples.rows(
        "SELECT j, label, count(*), count(*) FILTER (WHERE is_late), "
        "count(*) FILTER (WHERE sent_s IS NULL) "
        f"FROM ({_union([offer, whole], f'{late} AS is_late, sent_s')}) GROUP BY ALL"
    )
    picked = pick(run.samples, "lateness_ms", "TRUE", [offer.label, whole.label])
    out: tuple[dict[int, LatenessStats], dict[int, LatenessStats]] = ({}, {})
    for j, label, recorded, late_n, never in rows:
        out[j][int(label)] = LatenessStats(
            recorded=int(recorded),
            late=int(late_n),
            never_sent=int(never),
            lateness_ms=percentiles_of(picked[j].get(int(label))),
        )
    return out


# Outcome in the samples -> field of Counts.
_OUTCOME_FIELDS = {
    "ok": "ok",
    "failed": "failed",
    "shed": "shed",
    "cancelled": "cancelled",
    "timeout": "timeouts",
    "abandoned": "abandoned",
}


def _counts(
    by_outcome: dict[str, int], shed_is_error: bool, after: FollowUpCounts, stopped: bool
) -> Counts:
    fields = {field: by_outcome.get(o, 0) for o, field in _OUTCOME_FIELDS.items()}
    cut = fields["abandoned"] if stopped else 0
    counts = Counts(calls=sum(fields.values()), after=after, stop_cut=cut, **fields)
    return replace(counts, errors=counts.failures + (counts.shed if shed_is_error else 0))


def _summed(parts) -> FollowUpCounts:
    """Follow-up counts over several workloads."""
    names = FollowUpCounts.__dataclass_fields__
    parts = list(parts)
    return FollowUpCounts(**{n: sum(getattr(p, n) for p in parts) for n in names})


# Follow-up states in the order pandas grouped them (the follow-up column's categories).
_STATE_ORDER = {state: i for i, state in enumerate(FIELDS)}


def _failures(
    failed: list[tuple[str, str, str, int]], lost: list[tuple[str, str, str, int]]
) -> tuple[FailureGroup, ...]:
    """Failures grouped by workload, outcome and detail text, most frequent first; work lost
    after a 202 is grouped the same way, its follow-up state standing as the outcome. Ties
    keep the order of the words (failures first, then lost work), as they always read."""
    groups = sorted(failed, key=lambda g: (g[0], g[1], g[2]))
    groups += sorted(lost, key=lambda g: (g[0], _STATE_ORDER[g[1]], g[2]))
    groups = [g for g in groups if g[3] > 0]
    groups.sort(key=lambda g: -g[3])
    return tuple(FailureGroup(str(w), str(o), str(d), int(n)) for w, o, d, n in groups)
