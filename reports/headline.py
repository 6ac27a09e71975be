"""The verdict at a glance: one word, then each finding with its sample count and its evidence.

The full verdict stays last in the report, under the numbers it rests on; this
is the short list the first screen, summary.json and the console carry, so a
reader who stops at the top still sees *what* failed and on how many samples
(a p95 over three requests is not a finding), and where to read more. The
console list is printed from summary.json, so ``make demo`` and a headless run
say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass

from reports import formatting as fmt
from reports.verdict import (
    BASELINE_PHASE,
    FAIL,
    NEVER,
    NOT_MEASURED,
    NOT_RECOVERED,
    RECOVERED,
    RECOVERY_PHASE,
    RECOVERY_WINDOW,
    Verdict,
)

# Kinds of finding that fail the run; the others (flags, informational recovery) are read.
FAILING_KINDS = ("failed", NOT_MEASURED, "not recovered")
# Where the evidence for each kind of finding is in the report (section ids).
VERDICT_ANCHOR = "verdict"
RUN_ANCHOR = "what-was-run"


@dataclass(frozen=True)
class Finding:
    """One failed or unmeasured threshold, unrecovered workload or flag, as the short list shows it.

    ``limit`` and ``measured`` carry their units; ``anchor`` is the report section
    holding the numbers behind it.
    """

    kind: str
    phase: str
    workload: str
    metric: str
    limit: str
    measured: str
    samples: int
    anchor: str

    @property
    def text(self) -> str:
        """The finding in one line, sample count included."""
        limit = f" ({self.limit})" if self.limit else ""
        return (
            f"{self.kind}: {self.workload} {self.metric} in {self.phase}: "
            f"{self.measured}{limit}, n={self.samples:,}"
        )


def _phase_anchor(phase: str) -> str:
    return f"phase-{phase}"


def findings(verdict: Verdict) -> tuple[Finding, ...]:
    """Everything that made the run fail or that a reader must see, in verdict order."""
    found = []
    for t in verdict.thresholds:
        if t.status not in (FAIL, NOT_MEASURED):
            continue
        if t.metric == "samples":
            where = RUN_ANCHOR if t.phase == "preflight" else VERDICT_ANCHOR
            found.append(
                Finding(
                    NOT_MEASURED,
                    t.phase,
                    t.workload,
                    "samples",
                    "",
                    f"none ({t.why})" if t.why else "none",
                    0,
                    where,
                )
            )
            continue
        found.append(
            Finding(
                "failed" if t.status == FAIL else NOT_MEASURED,
                t.phase,
                t.workload,
                fmt.metric_name(t.metric),
                f"≤ {fmt.metric(t.metric, t.limit)}",
                fmt.metric(t.metric, t.measured),
                t.samples,
                _phase_anchor(t.phase),
            )
        )
    if verdict.recovery is not None:
        kind = "not recovered" if verdict.recovery.required else "not recovered (informational)"
        for c in verdict.recovery.checks:
            if c.status == NOT_RECOVERED:
                found.append(
                    Finding(
                        kind,
                        RECOVERY_PHASE,
                        c.workload,
                        "time to recover",
                        f"{BASELINE_PHASE}'s band",
                        NEVER,
                        c.recover.counts.calls,
                        _phase_anchor(RECOVERY_PHASE),
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
            parts.append(f"{c.workload} {c.status}")
    mode = "" if verdict.recovery.required else " (informational)"
    return f"time to recover{mode}, windows of {RECOVERY_WINDOW} arrivals: " + "; ".join(parts)


def _recovery_word(verdict: Verdict) -> str:
    if verdict.recovery is None:
        return "recovery not measured"
    if verdict.unrecovered:
        return "did not recover (informational)"
    return verdict.recovery.status


def verdict_line(verdict: Verdict) -> str:
    """PASS / FAIL / INVALID with its exit code and how many findings decided it."""
    word = verdict.word.upper()
    if verdict.invalid_reasons:
        return f"{word} (exit 2): the run cannot be judged; " + "; ".join(verdict.invalid_reasons)
    found = findings(verdict)
    failing = [f for f in found if f.kind in FAILING_KINDS]
    flags = len(found) - len(failing)
    judged = sum(t.metric != "samples" for t in verdict.thresholds)
    if not failing:
        tail = f", {flags} flagged" if flags else ""
        return (
            f"{word} (exit 0): all {judged} threshold checks met, {_recovery_word(verdict)}{tail}"
        )
    return f"{word} (exit {verdict.exit_code}): {len(failing)} failing of {judged} checks" + (
        f", {flags} flagged" if flags else ""
    )


def console_text(summary: dict) -> str:
    """The short list for a terminal, from summary.json: verdict, findings, recovery, validity."""
    lines = [summary["headline"]]
    rows = summary.get("findings", [])
    if rows:
        header = ("", "phase", "workload", "metric", "limit", "measured", "n")
        table = [header] + [
            (
                r["kind"],
                r["phase"],
                r["workload"],
                r["metric"],
                r["limit"] or "-",
                r["measured"],
                f"{r['samples']:,}",
            )
            for r in rows
        ]
        widths = [max(len(row[i]) for row in table) for i in range(len(header))]
        lines += [
            "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in table
        ]
    lines.append("  " + summary["recovery_line"])
    validity = summary["validity"]
    counted = f"offered {validity['offered']:,}, recorded {validity['recorded']:,}"
    if summary.get("mode") == "users":
        lines.append(
            f"  validity: {counted} (closed loop: offered is what the users sent; no schedule, "
            f"so lateness does not apply): {validity['status']}"
        )
    else:
        lines.append(
            f"  validity: {counted}, late {validity['late']:,} "
            f"({fmt.rate(validity['late_fraction'])}, tolerance "
            f"{fmt.rate(validity['late_tolerance'])}): {validity['status']}"
        )
    for name, why in summary.get("unserved", {}).items():
        lines.append(f"  not offered: {name}: {why}")
    if (summary.get("platform_log") or {}).get("errors"):
        lines.append("  " + summary["platform_log"]["line"])
    return "\n".join(lines)
