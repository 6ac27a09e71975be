"""summary.json: the verdict and the numbers behind it, for machines rather than readers.

A CI job or a dashboard reads this instead of scraping the Markdown; every
percentile carries its count, and an absent value is null, never zero.
"""

from __future__ import annotations

from dataclasses import asdict

import msgspec

from reports.faults import FAULT_RULE, WindowReport, undo_failures
from reports.headline import findings, recovery_summary, verdict_line
from reports.rundir import Run
from reports.stats import Counts, RunStats, SliceStats
from reports.system import SystemStats
from reports.verdict import JUMP_RULE, RECOVERY_RULE, RECOVERY_WINDOW, Verdict, unserved


def summary(run: Run, stats: RunStats, system: SystemStats, verdict: Verdict) -> dict:
    """The run's verdict, per-threshold results, counts and per-phase statistics (and each
    fault window's, when the run had some)."""
    facts = {
        "run_id": run.run_id,
        "scenario": run.scenario.name,
        "mode": "users" if run.closed_loop else "open arrival",
        "verdict": verdict.word,
        "exit_code": verdict.exit_code,
        "headline": verdict_line(verdict),
        "findings": [asdict(f) for f in findings(verdict)],
        "recovery_line": recovery_summary(verdict),
        "validity": {
            "status": "invalid" if verdict.invalid_reasons else "valid",
            "offered": run.offered,
            "recorded": stats.lateness.recorded,
            "late": stats.lateness.late,
            "late_fraction": stats.lateness.fraction,
            "late_tolerance": run.scenario.lateness.max_late_fraction,
        },
        "invalid_reasons": list(verdict.invalid_reasons),
        "warnings": list(verdict.warnings),
        "skipped": verdict.skipped,
        "unserved": unserved(run),
        "not_offered": list(verdict.not_offered),
        # Those the platform's own share of 0 leaves out, with why (scenario.yaml's per_platform).
        "why_not_offered": {
            w.name: w.why for w in run.scenario.workloads if w.name in verdict.not_offered and w.why
        },
        "thresholds": [asdict(t) for t in verdict.thresholds],
        "counts": {
            "offered": run.offered,
            "recorded": stats.lateness.recorded,
            "late": stats.lateness.late,
            "never_sent": stats.lateness.never_sent,
            **_counts(stats.whole.total),
        },
        "lateness_ms": asdict(stats.lateness.lateness_ms),
        "phases": {
            p.name: {
                "start_s": p.window.start_s,
                "end_s": p.window.end_s,
                # A closed loop has no schedule, so no arrival process either.
                "arrivals": None if run.closed_loop else msgspec.to_builtins(p.window.arrivals),
                "offered": p.offered,
                "recorded": p.recorded,
                "late": p.lateness.late,
                "by_offer": _slice(p.by_offer),
                "by_completion": _slice(p.by_completion),
            }
            for p in stats.phases
        },
        "whole_run": _slice(stats.whole),
        "jumps": {"rule": JUMP_RULE, "found": [asdict(j) for j in verdict.jumps]},
        "recovery": None
        if verdict.recovery is None
        else {
            "rule": RECOVERY_RULE,
            "required": verdict.recovery.required,
            "window_arrivals": RECOVERY_WINDOW,
            "status": verdict.recovery.status,
            "workloads": {
                c.workload: {
                    "status": c.status,
                    "time_to_recover_s": c.time_to_recover_s,
                    "why": c.why,
                }
                for c in verdict.recovery.checks
            },
        },
        "generators": [asdict(g) for g in system.generators],
        "probes_missing": system.missing,
        "platform_log": None
        if system.platform_log is None
        else {
            **asdict(system.platform_log),
            "errors": system.platform_log.errors,
            "line": system.platform_log.summary_line(),
        },
    }
    if verdict.faults:
        facts["faults"] = {
            "rule": FAULT_RULE,
            "undo_failed": list(undo_failures(verdict.faults)),
            "windows": [_window(w, run.record.start_epoch) for w in verdict.faults],
        }
    return facts


def _window(report: WindowReport, start_epoch: float) -> dict:
    """One window: where it fell, what was done about it, each workload around it."""
    fault = report.window.fault
    return {
        "name": fault.name,
        "kind": fault.kind.value,
        "what": fault.what,
        "phase": fault.phase,
        "start_s": report.window.start_s,
        "end_s": report.window.end_s,
        "limits": msgspec.structs.asdict(fault.limits),
        "not_applied": report.not_applied or None,
        "undo_failed": list(report.undo_failed),
        "events": [
            {
                **msgspec.to_builtins(e),
                "at_s": e.at - start_epoch,
                "planned_s": e.planned - start_epoch,
            }
            for e in report.events
        ],
        "workloads": {
            w.workload: {
                "before": {**asdict(w.before), "error_rate": w.before.error_rate},
                "during": {**asdict(w.during), "error_rate": w.during.error_rate},
                "after": {**asdict(w.after), "error_rate": w.after.error_rate},
                "latency_during_ms": asdict(w.latency),
                "shed_during": w.shed,
                "shed_with_retry_after": w.shed_retry_after,
                "shed_without_retry_after": w.shed_no_retry_after,
                "in_flight_at_end": w.in_flight_at_end,
                "accepted_during": {**asdict(w.accepted), "lost": w.accepted.lost},
                "model_calls_per_turn": {
                    "before": w.calls_before,
                    "during": w.calls_during,
                    "turns_before": w.turns_before,
                    "turns_during": w.turns_during,
                },
                "time_to_recover": asdict(w.recover),
                "amplification": None if w.amplification is None else asdict(w.amplification),
            }
            for w in report.workloads
        },
        "queue": [asdict(q) for q in report.queue],
    }


def _counts(counts: Counts) -> dict:
    return {
        **asdict(counts),
        "error_rate": counts.error_rate,
        "failure_rate": counts.failure_rate,
        "shed_rate": counts.shed_rate,
    }


def _slice(part: SliceStats) -> dict:
    return {
        "window_s": part.window_s,
        "total": _counts(part.total),
        "workloads": {
            w.workload: {
                **_counts(w.counts),
                "latency_ms": asdict(w.latency),
                "latency_due_ms": asdict(w.latency_due),
                "ttft_ms": asdict(w.ttft),
                "step_overhead_ms": asdict(w.step_overhead),
                "first_event_ms": asdict(w.first_event),
                "itl_ms": asdict(w.itl),
                "stall_ms": asdict(w.stall),
                "tpot_ms": asdict(w.tpot),
                "output_tokens": w.output_tokens,
            }
            for w in part.workloads
        },
        "failures": [asdict(f) for f in part.failures],
    }
