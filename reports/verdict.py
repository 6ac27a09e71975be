"""From statistics to a verdict: thresholds in every phase they name, validity, jumps, recovery.

Each is a module of its own (reports/validity.py, thresholds.py, jumps.py, recovery.py);
this one assembles them into a ``Verdict`` and the exit code it implies, and argues the
whole here.

A check fails on what is known, is "not measured" where the unknown could still tip it
and "inconclusive" where its plan was too small (thresholds.py argues each). A run whose
driver fell behind or
lost samples is invalid rather than failed; a workload skipped at preflight is not
measured, not forgotten; a workload the scenario gives no share is not judged at
all; a workload whose failures jump in burst or recover is flagged even where no
threshold covers it, because a run once "passed" while 58% of one workload's
requests were refused; and a recover phase that stays broken fails the run
(unless the scenario calls recovery informational), because "did it come back"
is what the run is for. "Recovered" is said only of a workload whose sustain
passed every threshold of its own on what is known: there is no good band to
come back to otherwise.

The exit code orders what a CI job must tell apart: invalid (2) before fail (1)
before inconclusive (2) before pass (0). A definite failure of the platform is
reported as one even when other checks could not be judged; a run that could not
judge a check and found nothing wrong is no pass; an invalid run judges nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from reports.faults import WindowReport, fault_windows, undo_failures
from reports.jumps import Jump, jumps
from reports.recovery import NOT_JUDGED, NOT_RECOVERED, RECOVERED, Recovery, RecoveryCheck, recovery
from reports.rundir import Run
from reports.stats import RunStats
from reports.system import SystemStats
from reports.thresholds import (
    FAIL,
    INCONCLUSIVE,
    NOT_MEASURED,
    PASS,
    ThresholdResult,
    judge_thresholds,
    skipped,
)
from reports.validity import invalid_reasons, warnings

# Words of the count line for each check status, in the order the line gives them: what
# fails the run first, then what leaves it undecided, then what held.
CHECK_WORDS = (
    (FAIL, "failed"),
    (NOT_MEASURED, NOT_MEASURED),
    (NOT_RECOVERED, NOT_RECOVERED),
    (INCONCLUSIVE, INCONCLUSIVE),
    (PASS, "passed"),
    (RECOVERED, RECOVERED),
    (NOT_JUDGED, "recovery not judged"),
)
FAILING = frozenset({FAIL, NOT_MEASURED, NOT_RECOVERED})
EXIT_WORDS = {0: "pass", 1: "fail", 2: "invalid"}


@dataclass(frozen=True)
class Verdict:
    """Everything the verdict rests on, and the exit code it implies."""

    invalid_reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    thresholds: tuple[ThresholdResult, ...]
    jumps: tuple[Jump, ...]
    recovery: Recovery | None
    skipped: dict[str, str]
    # Workloads the scenario gives no share: listed once, judged never.
    not_offered: tuple[str, ...] = ()
    # Each fault window and what the platform did about it (reports/faults.py).
    faults: tuple[WindowReport, ...] = ()

    @property
    def unrecovered(self) -> tuple[RecoveryCheck, ...]:
        """Workloads that did not come back to sustain's band within recover."""
        if self.recovery is None:
            return ()
        return tuple(c for c in self.recovery.checks if c.status == NOT_RECOVERED)

    @property
    def checks(self) -> tuple[str, ...]:
        """The status of every check the exit code rests on: each threshold in each phase,
        and each workload's recovery when the scenario requires it."""
        statuses = [t.status for t in self.thresholds]
        if self.recovery is not None and self.recovery.required:
            statuses += [c.status for c in self.recovery.checks]
        statuses += [c.status for w in self.faults for c in w.checks if c.judged]
        return tuple(statuses)

    @property
    def exit_code(self) -> int:
        """2 invalid; else 1 a check failed or was not measured, or a required recovery did
        not happen; else 2 a check could not be judged on so few arrivals; else 0."""
        if self.invalid_reasons:
            return 2
        checks = set(self.checks)
        if FAILING & checks:
            return 1
        return 2 if INCONCLUSIVE in checks else 0

    @property
    def word(self) -> str:
        """pass, fail, invalid or inconclusive: the exit code in words (2 is said two ways)."""
        if self.exit_code == 2 and not self.invalid_reasons:
            return INCONCLUSIVE
        return EXIT_WORDS[self.exit_code]

    def tally(self) -> tuple[tuple[str, int], ...]:
        """(words, count) for each check status present, in CHECK_WORDS order; the counts
        sum to ``len(self.checks)``, so a count line counts one thing on both sides."""
        statuses = self.checks
        return tuple(
            (words, statuses.count(status)) for status, words in CHECK_WORDS if status in statuses
        )


def judge(run: Run, stats: RunStats, system: SystemStats) -> Verdict:
    """The verdict of a run: validity first, then every threshold, jumps and recovery.

    A run the operator stopped is INVALID for that reason and blames the platform for
    nothing: no threshold, jump or recovery is held against it (its numbers stay in the
    report, and what the Stop cut off is no error: stats.Counts.stop_cut).
    """
    if run.stopped_by_operator:
        windows = fault_windows(run)
        return Verdict(
            invalid_reasons=undo_failures(windows) + invalid_reasons(run, stats),
            warnings=warnings(run, system),
            thresholds=(),
            jumps=(),
            recovery=None,
            skipped=skipped(run),
            not_offered=run.not_offered,
        )
    thresholds = judge_thresholds(run, stats)
    windows = fault_windows(run)
    return Verdict(
        invalid_reasons=undo_failures(windows) + invalid_reasons(run, stats),
        warnings=warnings(run, system),
        thresholds=thresholds,
        jumps=jumps(stats),
        recovery=recovery(run, stats, thresholds),
        skipped=skipped(run),
        not_offered=run.not_offered,
        faults=windows,
    )
