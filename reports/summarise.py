"""The run's statistics and verdict as summary.json's record (reports/summary.py's Summary).

Each part is built field by field from the stage's own record, so the file keeps the
names, the order and the nulls it has always had, and a field the record does not
name is refused here, not by a reader.
"""

from __future__ import annotations

from dataclasses import asdict

import msgspec
from msgspec import UNSET

from reports.faults import FAULT_RULE, Span, WindowReport, undo_failures
from reports.followups import FollowUpCounts
from reports.headline import findings, recovery_summary, verdict_line
from reports.jumps import JUMP_RULE
from reports.recovery import RECOVERY_RULE, RECOVERY_WINDOW
from reports.rundir import Run
from reports.stats import Counts, Percentiles, RunStats, SliceStats
from reports.summary import (
    AcceptedDuring,
    CountsRecord,
    FailureRecord,
    FaultCheck,
    FaultEventRecord,
    FaultLimitsRecord,
    FaultSpan,
    FaultsRecord,
    FaultWindowRecord,
    FollowUps,
    Generator,
    Jump,
    Jumps,
    ModelCalls,
    PercentilesRecord,
    PhaseSummary,
    PlatformLogRecord,
    QueueRecord,
    RecoveryRecord,
    RecoveryWorkload,
    RunCounts,
    SliceRecord,
    Summary,
    Threshold,
    Validity,
    WindowWorkloadRecord,
    WorkloadSlice,
)
from reports.system import SystemStats
from reports.thresholds import unserved
from reports.verdict import Verdict


def summarise(run: Run, stats: RunStats, system: SystemStats, verdict: Verdict) -> Summary:
    """The run's verdict, per-threshold results, counts and per-phase statistics (and each
    fault window's, when the run had some)."""
    lateness = stats.lateness
    total = _counts(stats.whole.total)
    return Summary(
        run_id=run.run_id,
        scenario=run.scenario.name,
        mode="users" if run.closed_loop else "open arrival",
        verdict=verdict.word,
        exit_code=verdict.exit_code,
        headline=verdict_line(verdict),
        findings=list(findings(verdict)),
        recovery_line=recovery_summary(verdict),
        validity=Validity(
            status="invalid" if verdict.invalid_reasons else "valid",
            offered=run.offered,
            recorded=lateness.recorded,
            late=lateness.late,
            late_fraction=lateness.fraction,
            late_tolerance=run.scenario.lateness.max_late_fraction,
        ),
        invalid_reasons=list(verdict.invalid_reasons),
        warnings=list(verdict.warnings),
        skipped=verdict.skipped,
        unserved=unserved(run),
        not_offered=list(verdict.not_offered),
        # Those the platform's own share of 0 leaves out, with why (scenario.yaml's per_platform).
        why_not_offered={
            w.name: w.why for w in run.scenario.workloads if w.name in verdict.not_offered and w.why
        },
        thresholds=[Threshold(**asdict(t)) for t in verdict.thresholds],
        counts=RunCounts(
            offered=run.offered,
            recorded=lateness.recorded,
            late=lateness.late,
            never_sent=lateness.never_sent,
            **msgspec.structs.asdict(total),
        ),
        lateness_ms=_percentiles(lateness.lateness_ms),
        phases={
            p.name: PhaseSummary(
                start_s=p.window.start_s,
                end_s=p.window.end_s,
                # A closed loop has no schedule, so no arrival process either.
                arrivals=None if run.closed_loop else p.window.arrivals,
                offered=p.offered,
                recorded=p.recorded,
                late=p.lateness.late,
                by_offer=_slice(p.by_offer),
                by_completion=_slice(p.by_completion),
            )
            for p in stats.phases
        },
        whole_run=_slice(stats.whole),
        jumps=Jumps(JUMP_RULE, [Jump(**asdict(j)) for j in verdict.jumps]),
        recovery=None
        if verdict.recovery is None
        else RecoveryRecord(
            rule=RECOVERY_RULE,
            required=verdict.recovery.required,
            window_arrivals=RECOVERY_WINDOW,
            status=verdict.recovery.status,
            workloads={
                c.workload: RecoveryWorkload(c.status, c.time_to_recover_s, c.why)
                for c in verdict.recovery.checks
            },
        ),
        generators=[Generator(**asdict(g)) for g in system.generators],
        probes_missing=system.missing,
        platform_log=None
        if system.platform_log is None
        else PlatformLogRecord(
            **asdict(system.platform_log),
            errors=system.platform_log.errors,
            line=system.platform_log.summary_line(),
        ),
        faults=FaultsRecord(
            rule=FAULT_RULE,
            undo_failed=list(undo_failures(verdict.faults)),
            windows=[_window(w, run.record.start_epoch) for w in verdict.faults],
        )
        if verdict.faults
        else UNSET,
    )


def _window(report: WindowReport, start_epoch: float) -> FaultWindowRecord:
    """One window: where it fell, what was done about it, each workload around it."""
    fault = report.window.fault
    return FaultWindowRecord(
        name=fault.name,
        kind=fault.kind,
        what=fault.what,
        phase=fault.phase,
        start_s=report.window.start_s,
        end_s=report.window.end_s,
        limits=FaultLimitsRecord(**msgspec.structs.asdict(fault.limits)),
        not_applied=report.not_applied or None,
        undo_failed=list(report.undo_failed),
        events=[
            FaultEventRecord(
                **msgspec.structs.asdict(e),
                at_s=e.at - start_epoch,
                planned_s=e.planned - start_epoch,
            )
            for e in report.events
        ],
        workloads={
            w.workload: WindowWorkloadRecord(
                before=_span(w.before),
                during=_span(w.during),
                after=_span(w.after),
                latency_during_ms=_percentiles(w.latency),
                shed_during=w.shed,
                shed_with_retry_after=w.shed_retry_after,
                shed_without_retry_after=w.shed_no_retry_after,
                in_flight_at_end=w.in_flight_at_end,
                accepted_during=AcceptedDuring(**asdict(w.accepted), lost=w.accepted.lost),
                model_calls_per_turn=ModelCalls(
                    w.calls_before, w.calls_during, w.turns_before, w.turns_during
                ),
                time_to_recover=FaultCheck(**asdict(w.recover)),
                amplification=None
                if w.amplification is None
                else FaultCheck(**asdict(w.amplification)),
            )
            for w in report.workloads
        },
        queue=[QueueRecord(q.series, q.before, q.during) for q in report.queue],
    )


def _span(span: Span) -> FaultSpan:
    return FaultSpan(span.calls, span.errors, span.error_rate)


def _percentiles(p: Percentiles) -> PercentilesRecord:
    return PercentilesRecord(p.count, p.p50, p.p95, p.p99, p.max)


def _follow_ups(after: FollowUpCounts) -> FollowUps:
    return FollowUps(**asdict(after))


def _counts(counts: Counts) -> CountsRecord:
    return CountsRecord(
        calls=counts.calls,
        ok=counts.ok,
        failed=counts.failed,
        shed=counts.shed,
        cancelled=counts.cancelled,
        timeouts=counts.timeouts,
        abandoned=counts.abandoned,
        stop_cut=counts.stop_cut,
        errors=counts.errors,
        after=_follow_ups(counts.after),
        error_rate=counts.error_rate,
        failure_rate=counts.failure_rate,
        shed_rate=counts.shed_rate,
    )


def _slice(part: SliceStats) -> SliceRecord:
    return SliceRecord(
        window_s=part.window_s,
        total=_counts(part.total),
        workloads={
            w.workload: WorkloadSlice(
                **msgspec.structs.asdict(_counts(w.counts)),
                latency_ms=_percentiles(w.latency),
                latency_due_ms=_percentiles(w.latency_due),
                ttft_ms=_percentiles(w.ttft),
                step_overhead_ms=_percentiles(w.step_overhead),
                first_event_ms=_percentiles(w.first_event),
                itl_ms=_percentiles(w.itl),
                stall_ms=_percentiles(w.stall),
                tpot_ms=_percentiles(w.tpot),
                output_tokens=w.output_tokens,
            )
            for w in part.workloads
        },
        failures=[FailureRecord(f.workload, f.outcome, f.detail, f.count) for f in part.failures],
    )
