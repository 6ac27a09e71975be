"""What the platform did about each fault window, workload by workload (issue 45).

The question is the one recovery asks of the burst, asked of a window: each workload's
errors before, during and after it, its latency during it, how long after the window ended
it was back in sustain's band, what its retries cost the provider, what became of the work
it accepted during it, and how it shed load or queued it. The spans, each the window's
length L, are the arrivals due in the L seconds before its start, in it, and in the L
seconds after its end (clipped to the run), counted as every table counts them.

- **Time to recover** is recovery.time_to_recover, the recover phase's rule, over the
  arrivals due from the window's end to the end of its phase, held to sustain's band as it
  was before any fault (sustain's arrivals due before the first window in it, none a window
  touched): "never" when the rest of the phase never gets back. A phase that ends with the
  window leaves nothing to judge it on. An arrival a window touched (due before it ended,
  finished after it began) is judged here and left out of its phase's thresholds; what the
  platform did after the window is its own, and its phase's thresholds count it.
- **Amplification** is model calls per turn at the stub (the loop's ``model_calls``, per
  chat turn and per agent run, over the arrivals sent) during the window against before it:
  2.0 is every turn costing the provider twice its calls, retries included.
- A window whose record says it was not applied (its process gone, a start command that
  failed, a stub that did not take it) is judged nowhere; one too short to hold the
  scenario's minimum of arrivals (``judging.min_counts.recovery``) during it, before it (for
  amplification) or after it (for time to recover), or a sustain too small for a band, is
  inconclusive: never a pass. A window's limits (``faults[].limits``) make these checks of
  the verdict; without them they are reported.
- A window whose undoing failed (a process left frozen, an end command that failed, a stub
  that could not listen again) makes the run invalid, first: what followed it was not the
  platform's doing alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.fault_record import APPLIED, CANCELLED, NOT_APPLIED, UNDO_FAILED, FaultEvent, Window
from engine.followups import FAILED_AFTER, LOST, NOT_FINISHED, NOT_VERIFIABLE, PROCESSED
from inputs.agent import AGENT_WORKLOADS
from inputs.phases import BASELINE_PHASE
from reports import formatting as fmt
from reports.dataset import quoted
from reports.followups import AFTER, FollowUpCounts
from reports.loop import MODEL_CALLS
from reports.recovery import (
    ERROR_OUTCOMES,
    NEVER,
    NOT_JUDGED,
    NOT_RECOVERED,
    RECOVERED,
    RecoverArrivals,
    time_to_recover,
)
from reports.rundir import TOUCHED, Run
from reports.stats import Percentiles
from reports.thresholds import FAIL, INCONCLUSIVE, NOT_MEASURED, PASS

TIME_TO_RECOVER = "time_to_recover_s"
AMPLIFICATION = "amplification"
# What a measure without a limit is, in the section: its number, not a check.
REPORTED = "reported"
# The series a window's queueing is read from: the platform's pool, the database's busy
# connections, the stub's model requests in flight (probes/).
QUEUE_SERIES = (
    ("metrics", "pool_checked_out"),
    ("metrics", "pool_waiting"),
    ("db", "connections_active"),
    ("stub", "in_flight"),
)

FAULT_RULE = (
    "each window's spans are the arrivals due in its length before it, in it, and in its "
    "length after it; time to recover is the recover phase's rule over the arrivals due from "
    "the window's end to the end of its phase, held to sustain's band as it was before any "
    "fault (its arrivals due before the first window in it, none touched by a window); an "
    "arrival a window touched (due before it ended, finished after it began) is judged here, "
    "not by its phase's thresholds, while what the platform did after a window is its own and "
    "counts there too; amplification is model calls per turn at the "
    "stub (per chat turn, per agent run, over the arrivals sent) during the window over before "
    "it. A window not applied is judged nowhere; one with fewer arrivals during it, before it "
    "(amplification) or after it (time to recover) than judging.min_counts.recovery is "
    "inconclusive; a window whose undoing failed makes the run invalid"
)


@dataclass(frozen=True)
class Span:
    """One workload's arrivals due in one span, and how many were errors (as every table
    counts them: failed, timed out, abandoned, lost after acceptance, shed unless the scenario
    says otherwise)."""

    calls: int
    errors: int

    @property
    def error_rate(self) -> float | None:
        return self.errors / self.calls if self.calls else None


@dataclass(frozen=True)
class FaultCheck:
    """One measure of one workload in one window: against its limit when the window has one
    (then a check of the verdict), else reported."""

    fault: str
    workload: str
    metric: str
    limit: float | None
    measured: float | None
    samples: int
    status: str
    reading: str

    @property
    def judged(self) -> bool:
        """Whether the verdict counts it (the window set a limit for it)."""
        return self.limit is not None


@dataclass(frozen=True)
class WindowWorkload:
    """One workload around one window."""

    workload: str
    before: Span
    during: Span
    after: Span
    latency: Percentiles
    # 429s of arrivals due during it, and of those how many asked the caller to come back
    # (Retry-After) or did not; the rest did not say (a streamed turn's 429 is its dialect's).
    shed: int
    shed_retry_after: int
    shed_no_retry_after: int
    in_flight_at_end: int
    accepted: FollowUpCounts
    # Model calls per turn at the stub before and during (None: no turn, or no record), and
    # the turns each is over.
    calls_before: float | None
    calls_during: float | None
    turns_before: int
    turns_during: int
    recover: FaultCheck
    amplification: FaultCheck | None


@dataclass(frozen=True)
class QueueReading:
    """A probe series' peak in the span before a window and during it (None: no reading)."""

    series: str
    before: float | None
    during: float | None


@dataclass(frozen=True)
class WindowReport:
    """One window: where it fell, what was done about it, and each workload around it."""

    window: Window
    events: tuple[FaultEvent, ...]
    # Why it was judged nowhere ("" when it was applied).
    not_applied: str
    undo_failed: tuple[str, ...]
    workloads: tuple[WindowWorkload, ...]
    queue: tuple[QueueReading, ...]

    @property
    def name(self) -> str:
        return self.window.fault.name

    @property
    def checks(self) -> tuple[FaultCheck, ...]:
        """Every measure of the window, judged or reported."""
        found: list[FaultCheck] = []
        for w in self.workloads:
            found.append(w.recover)
            if w.amplification is not None:
                found.append(w.amplification)
        return tuple(found)


def fault_windows(run: Run) -> tuple[WindowReport, ...]:
    """Each of the run's windows as its section and the verdict read it."""
    return tuple(_window(run, w) for w in run.windows)


def undo_failures(windows: Sequence[WindowReport]) -> tuple[str, ...]:
    """One line per window whose undoing failed: what the report says first."""
    return tuple(
        f"fault {w.name}: its undoing failed ({'; '.join(w.undo_failed)}); what followed it was "
        "not the platform's doing alone"
        for w in windows
        if w.undo_failed
    )


def _window(run: Run, window: Window) -> WindowReport:
    name = window.fault.name
    events = tuple(e for e in run.fault_events if e.fault == name)
    not_applied = _not_applied(window, events)
    failed = tuple(f"{e.by}: {e.detail or e.event}" for e in events if e.event == UNDO_FAILED)
    length = window.end_s - window.start_s
    spans = (
        (max(0.0, window.start_s - length), window.start_s),
        (window.start_s, window.end_s),
        (window.end_s, min(run.end_s, window.end_s + length)),
    )
    phase_end = max(p.end_s for p in run.phases if p.name == window.fault.phase)
    workloads = tuple(
        _workload(run, window, name, spans, float(phase_end), not_applied)
        for name in run.workloads
        if name not in run.record.skipped
    )
    return WindowReport(window, events, not_applied, failed, workloads, _queue(run, spans))


def _not_applied(window: Window, events: tuple[FaultEvent, ...]) -> str:
    """Why the window was not applied, from its record ("" when it was, somewhere)."""
    if any(e.event == APPLIED for e in events):
        return ""
    refused = [e for e in events if e.event in (NOT_APPLIED, CANCELLED)]
    if refused:
        return "; ".join(f"{e.by}: {e.detail or e.event}" for e in refused)
    return "its record says nothing was done (the run ended before it, or the record was lost)"


def _workload(
    run: Run,
    window: Window,
    workload: str,
    spans: tuple[tuple[float, float], ...],
    phase_end: float,
    not_applied: str,
) -> WindowWorkload:
    before, during, after = (_span(run, workload, s) for s in spans)
    end = spans[1][1]
    calls_before, turns_before = _calls_per_turn(run, workload, spans[0])
    calls_during, turns_during = _calls_per_turn(run, workload, spans[1])
    return WindowWorkload(
        workload=workload,
        before=before,
        during=during,
        after=after,
        latency=_latency(run, workload, spans[1]),
        shed=_count(run, workload, spans[1], "outcome = 'shed'"),
        shed_retry_after=_count(
            run, workload, spans[1], "outcome = 'shed' AND detail LIKE '%, Retry-After %'"
        ),
        shed_no_retry_after=_count(
            run, workload, spans[1], "outcome = 'shed' AND detail LIKE '%, no Retry-After'"
        ),
        in_flight_at_end=int(
            run.samples.one(
                "SELECT count(*) FROM samples WHERE workload = ? AND sent_s <= ? "
                "AND finished_s > ?",
                [workload, end, end],
            )[0]
        ),
        accepted=_accepted(run, workload, spans[1]),
        calls_before=calls_before,
        calls_during=calls_during,
        turns_before=turns_before,
        turns_during=turns_during,
        recover=_recover_check(run, window, workload, during, (end, phase_end), not_applied),
        amplification=_amplification_check(
            run,
            window,
            workload,
            (calls_before, turns_before),
            (calls_during, turns_during),
            not_applied,
        ),
    )


def _errors_sql(run: Run) -> str:
    outcomes = ERROR_OUTCOMES | ({"shed"} if run.scenario.shed_counts_as_error else set())
    return f"(outcome IN ({quoted(sorted(outcomes))}) OR {AFTER} IN ({quoted(LOST)}))"


def _span(run: Run, workload: str, span: tuple[float, float]) -> Span:
    calls, errors = run.samples.one(
        f"SELECT count(*), count(*) FILTER (WHERE {_errors_sql(run)}) FROM samples "
        "WHERE workload = ? AND due_s >= ? AND due_s < ?",
        [workload, *span],
    )
    return Span(int(calls), int(errors))


def _count(run: Run, workload: str, span: tuple[float, float], where: str) -> int:
    (n,) = run.samples.one(
        f"SELECT count(*) FROM samples WHERE workload = ? AND due_s >= ? AND due_s < ? AND {where}",
        [workload, *span],
    )
    return int(n)


def _latency(run: Run, workload: str, span: tuple[float, float]) -> Percentiles:
    """Nearest-rank p50/p95/p99 and the worst of the timed successes due in the span."""
    values = run.samples.arrays(
        "SELECT latency_ms FROM samples WHERE workload = ? AND due_s >= ? AND due_s < ? "
        "AND timed AND latency_ms IS NOT NULL ORDER BY latency_ms",
        [workload, *span],
    )["latency_ms"].astype("float64")
    n = len(values)
    if not n:
        return Percentiles(0)
    p50, p95, p99 = (float(values[(p * n + 99) // 100 - 1]) for p in (50, 95, 99))
    return Percentiles(n, p50, p95, p99, float(values[-1]))


def _accepted(run: Run, workload: str, span: tuple[float, float]) -> FollowUpCounts:
    rows = dict(
        run.samples.rows(
            f"SELECT {AFTER}, count(*) FROM samples WHERE workload = ? AND due_s >= ? "
            f"AND due_s < ? AND {AFTER} <> '' GROUP BY ALL",
            [workload, *span],
        )
    )
    counts = {
        "processed": int(rows.get(PROCESSED, 0)),
        "failed_after": int(rows.get(FAILED_AFTER, 0)),
        "not_finished": int(rows.get(NOT_FINISHED, 0)),
        "unverified": int(rows.get(NOT_VERIFIABLE, 0)),
    }
    return FollowUpCounts(sum(counts.values()), **counts)


def _calls_per_turn(run: Run, workload: str, span: tuple[float, float]) -> tuple[float | None, int]:
    """Mean model calls per turn at the stub over the sent turns due in the span, and how
    many turns (None and 0 for a workload whose prompt carries no plan, or no record)."""
    if workload not in AGENT_WORKLOADS:
        return None, 0
    total, turns = run.samples.one(
        f"SELECT sum({MODEL_CALLS}), count({MODEL_CALLS}) FROM samples "
        "WHERE workload = ? AND due_s >= ? AND due_s < ?",
        [workload, *span],
    )
    turns = int(turns)
    return (float(total) / turns if turns else None), turns


def _queue(run: Run, spans: tuple[tuple[float, float], ...]) -> tuple[QueueReading, ...]:
    """Each queue series' peak before the window and during it."""
    probes = run.probes
    if probes is None or probes.empty:
        return ()
    found = []
    for probe, metric in QUEUE_SERIES:
        series = probes[(probes["probe"] == probe) & (probes["metric"] == metric)]
        if series.empty:
            continue
        peaks = []
        for start, end in spans[:2]:
            inside = series[(series["t_s"] >= start) & (series["t_s"] < end)]["value"]
            peaks.append(float(inside.max()) if len(inside) else None)
        found.append(QueueReading(f"{probe} {metric}", peaks[0], peaks[1]))
    return tuple(found)


def _need(run: Run) -> int:
    return run.scenario.judging.min_counts.recovery


def _band(run: Run, workload: str) -> tuple[int, float, np.ndarray]:
    """Sustain's band for ``workload`` as it was before any fault: its arrivals no window
    touched and due before the first window that starts in it; their count, error rate and
    timed successes' latencies, sorted."""
    cut = min((w.start_s for w in run.windows if w.fault.phase == BASELINE_PHASE), default=math.inf)
    where = f"phase = ? AND workload = ? AND NOT {TOUCHED} AND due_s < ?"
    params = [BASELINE_PHASE, workload, cut if math.isfinite(cut) else run.end_s + 1.0]
    calls, errors = run.samples.one(
        f"SELECT count(*), count(*) FILTER (WHERE {_errors_sql(run)}) FROM samples WHERE {where}",
        params,
    )
    latencies = run.samples.arrays(
        f"SELECT latency_ms FROM samples WHERE {where} AND timed AND latency_ms IS NOT NULL "
        "ORDER BY latency_ms",
        params,
    )["latency_ms"].astype("float64")
    return int(calls), (int(errors) / int(calls) if calls else 0.0), latencies


def _recover_check(
    run: Run,
    window: Window,
    workload: str,
    during: Span,
    tail: tuple[float, float],
    not_applied: str,
) -> FaultCheck:
    """Seconds from the window's end until the workload is back in sustain's band (as it was
    before any fault) and stays there for the rest of the window's phase."""
    fault = window.fault
    limit = fault.limits.time_to_recover_s

    def result(status: str, reading: str, seconds: float | None = None, n: int = 0) -> FaultCheck:
        return FaultCheck(fault.name, workload, TIME_TO_RECOVER, limit, seconds, n, status, reading)

    if not_applied:
        return result(INCONCLUSIVE, f"not applied: {not_applied}")
    if all(p.name != BASELINE_PHASE for p in run.phases):
        return result(NOT_JUDGED, f"no {BASELINE_PHASE} phase to hold it to")
    band_calls, rate, sustain = _band(run, workload)
    arrivals = RecoverArrivals.read(run.samples, workload, run.scenario.shed_counts_as_error, tail)
    n = len(arrivals.due)
    need = _need(run)
    counts = (
        (during.calls, "during the window"),
        (n, f"after it in {fault.phase}"),
        (band_calls, f"in {BASELINE_PHASE} before any fault"),
    )
    short = [f"{count:,} {where}" for count, where in counts if count < need]
    if short:
        return result(INCONCLUSIVE, f"{', '.join(short)}; time to recover needs {need:,} each", n=n)
    seconds, _ = time_to_recover(arrivals, sustain, rate, tail[0], unverified_lost=True)
    if seconds is None:
        if (
            arrivals.unverified.any()
            and time_to_recover(arrivals, sustain, rate, tail[0])[0] is not None
        ):
            return result(
                NOT_MEASURED,
                "back in the band only if its accepted work nobody could verify was done",
                n=n,
            )
        return result(FAIL if limit is not None else NOT_RECOVERED, NEVER, n=n)
    said = fmt.seconds(seconds)
    if limit is None:
        return result(RECOVERED, said, seconds, n)
    return result(PASS if seconds <= limit else FAIL, said, seconds, n)


def _amplification_check(
    run: Run,
    window: Window,
    workload: str,
    before: tuple[float | None, int],
    during: tuple[float | None, int],
    not_applied: str,
) -> FaultCheck | None:
    """Model calls per turn during the window over before it (None for a workload whose
    prompt carries no plan: the stub cannot tell its calls)."""
    if workload not in AGENT_WORKLOADS:
        return None
    fault = window.fault
    limit = fault.limits.amplification
    (mean_before, turns_before), (mean_during, turns_during) = before, during

    def result(status: str, reading: str, ratio: float | None = None) -> FaultCheck:
        return FaultCheck(
            fault.name, workload, AMPLIFICATION, limit, ratio, turns_during, status, reading
        )

    if not_applied:
        return result(INCONCLUSIVE, f"not applied: {not_applied}")
    if mean_before is None and mean_during is None:
        return result(INCONCLUSIVE, "no model calls recorded (the stub's record was not read)")
    need = _need(run)
    if min(turns_before, turns_during) < need:
        return result(
            INCONCLUSIVE,
            f"{turns_before:,} turns before and {turns_during:,} during; amplification needs "
            f"{need:,} each",
        )
    assert mean_before is not None and mean_during is not None
    if mean_before == 0:
        return result(INCONCLUSIVE, "no model call per turn before the window to compare with")
    ratio = mean_during / mean_before
    said = f"{ratio:.2f}x ({mean_during:.2f} calls per turn against {mean_before:.2f})"
    if limit is None:
        return result(REPORTED, said, ratio)
    return result(PASS if ratio <= limit or math.isclose(ratio, limit) else FAIL, said, ratio)


# Each measure in words, as tables and findings name it.
MEASURE_WORDS = {TIME_TO_RECOVER: "time to recover", AMPLIFICATION: "amplification"}


def fault_id(name: str) -> str:
    """A window's section id in the report (findings link to it)."""
    return "fault-" + "".join(c if c.isalnum() else "-" for c in name)


def shed_cell(w: WindowWorkload) -> str:
    """How a workload's load was shed or held in a window, in a few words."""
    said = ""
    if w.shed:
        said = f" ({w.shed_retry_after:,} with Retry-After, {w.shed_no_retry_after:,} without)"
    return f"{w.shed:,}{said}; {w.in_flight_at_end:,}"
