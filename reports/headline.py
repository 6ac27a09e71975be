"""The verdict at a glance: one word, then each finding with its sample count and its evidence.

The full verdict stays last in the report, under the numbers it rests on; this
is the short list the first screen, summary.json and the console carry, so a
reader who stops at the top still sees *what* failed and on how many samples
(a p95 over three requests is not a finding), and where to read more. The
console prints it from summary.json (reports/console.py).
"""

from __future__ import annotations

from inputs.phases import BASELINE_PHASE, RECOVERY_PHASE
from reports import formatting as fmt
from reports.faults import MEASURE_WORDS, fault_id
from reports.finding import Finding
from reports.recovery import NEVER, NOT_RECOVERED, RECOVERED, RECOVERY_WINDOW
from reports.thresholds import FAIL, INCONCLUSIVE, NOT_MEASURED, ThresholdResult
from reports.verdict import Verdict

# Where the evidence for each kind of finding is in the report (section ids).
VERDICT_ANCHOR = "verdict"
RUN_ANCHOR = "what-was-run"
# A threshold's status as the short list names its kind.
THRESHOLD_KINDS = {FAIL: "failed", NOT_MEASURED: NOT_MEASURED, INCONCLUSIVE: INCONCLUSIVE}


def _phase_anchor(phase: str) -> str:
    return f"phase-{phase}"


def findings(verdict: Verdict) -> tuple[Finding, ...]:
    """Everything that decided the run or that a reader must see, in verdict order: each
    check that did not pass (failed, not measured, inconclusive), each workload whose
    recovery did not come back or could not be told, then each flag."""
    found = [_threshold_finding(t) for t in verdict.thresholds if t.status in THRESHOLD_KINDS]
    if verdict.recovery is not None:
        informational = "" if verdict.recovery.required else " (informational)"
        for c in verdict.recovery.checks:
            if c.status not in (NOT_RECOVERED, NOT_MEASURED, INCONCLUSIVE):
                continue
            found.append(
                Finding(
                    c.status + informational,
                    RECOVERY_PHASE,
                    c.workload,
                    "time to recover",
                    f"{BASELINE_PHASE}'s band",
                    NEVER if c.status == NOT_RECOVERED else c.why,
                    c.recover.counts.calls,
                    _phase_anchor(RECOVERY_PHASE),
                )
            )
    for w in verdict.faults:
        for check in w.checks:
            if check.judged and check.status in (FAIL, NOT_MEASURED, INCONCLUSIVE):
                limit = (
                    f"≤ {fmt.seconds(check.limit)}"
                    if check.metric == "time_to_recover_s"
                    else f"≤ {check.limit:g}x"
                )
                found.append(
                    Finding(
                        THRESHOLD_KINDS[check.status],
                        f"fault {check.fault}",
                        check.workload,
                        MEASURE_WORDS[check.metric],
                        limit,
                        check.reading,
                        check.samples,
                        fault_id(check.fault),
                    )
                )
    # A jump where an error-rate threshold already failed says nothing new.
    failed_rates = {
        (t.workload, t.phase)
        for t in verdict.thresholds
        if t.metric == "error_rate" and t.status == FAIL
    }
    for j in verdict.jumps:
        if (j.workload, j.phase) in failed_rates:
            continue
        found.append(
            Finding(
                "flag",
                j.phase,
                j.workload,
                f"{j.kind} rate",
                f"{BASELINE_PHASE} {fmt.rate(j.baseline_rate)}",
                fmt.rate(j.rate),
                j.calls,
                _phase_anchor(j.phase),
            )
        )
    return tuple(found)


def _threshold_finding(t: ThresholdResult) -> Finding:
    """A threshold that did not pass, as the short list shows it (a workload with no sample
    at all, or skipped at preflight, reads "none" with why)."""
    kind = THRESHOLD_KINDS[t.status]
    if t.metric == "samples":
        where = RUN_ANCHOR if t.phase == "preflight" else VERDICT_ANCHOR
        measured = f"none ({t.why})" if t.why else "none"
        return Finding(kind, t.phase, t.workload, "samples", "", measured, 0, where)
    limit = f"≤ {fmt.metric(t.metric, t.limit)}"
    if t.status == INCONCLUSIVE:
        limit += f" over ≥ {t.min_count:,}"
    return Finding(
        kind,
        t.phase,
        t.workload,
        fmt.metric_name(t.metric),
        limit,
        t.reading or fmt.metric(t.metric, t.measured),
        t.samples,
        _phase_anchor(t.phase),
    )


def recovery_summary(verdict: Verdict) -> str:
    """Each workload's time to recover in one line, or why there is none."""
    if verdict.recovery is None:
        return f"recovery: not measured (the scenario has no {BASELINE_PHASE} and {RECOVERY_PHASE})"
    parts = []
    for c in verdict.recovery.checks:
        if c.status == RECOVERED:
            parts.append(f"{c.workload} {fmt.seconds(c.time_to_recover_s)}")
        elif c.status == NOT_RECOVERED:
            parts.append(f"{c.workload} {NEVER}")
        else:
            parts.append(f"{c.workload} {c.status}" + (f" ({c.why})" if c.why else ""))
    mode = "" if verdict.recovery.required else " (informational)"
    return f"time to recover{mode}, windows of {RECOVERY_WINDOW} arrivals: " + "; ".join(parts)


def _informational_recovery(verdict: Verdict) -> str:
    """An informational recovery's outcome, which the count line does not count as checks."""
    if verdict.recovery is None or verdict.recovery.required:
        return ""
    statuses = [c.status for c in verdict.recovery.checks]
    said = ", ".join(
        f"{statuses.count(s)} {s}" for s in dict.fromkeys(sorted(statuses, key=_recovery_order))
    )
    return f"; recovery (informational): {said or 'no workload'}"


def _recovery_order(status: str) -> int:
    order = (NOT_RECOVERED, NOT_MEASURED, INCONCLUSIVE, RECOVERED)
    return order.index(status) if status in order else len(order)


def verdict_line(verdict: Verdict) -> str:
    """PASS / FAIL / INCONCLUSIVE / INVALID with its exit code, then every check counted once
    by its status (the counts sum to the total), then the flags."""
    word = verdict.word.upper()
    if verdict.invalid_reasons:
        return f"{word} (exit 2): the run cannot be judged; " + "; ".join(verdict.invalid_reasons)
    tally = ", ".join(f"{n:,} {words}" for words, n in verdict.tally())
    checks = len(verdict.checks)
    line = f"{word} (exit {verdict.exit_code}): {checks:,} check{'' if checks == 1 else 's'}"
    line += f": {tally}" if tally else ""
    line += _informational_recovery(verdict)
    flags = sum(f.kind == "flag" for f in findings(verdict))
    return line + (f"; {flags} flagged" if flags else "")
