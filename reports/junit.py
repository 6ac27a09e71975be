"""junit.xml: the verdict as test cases, for the CI dashboards that read JUnit.

One test case per check the exit code rests on (each threshold in each phase it
names, each workload's recovery when the scenario requires it) and one for
validity, so a dashboard counts what the verdict line counts. How each status
reads is argued by what a JUnit gate does with it: a check that failed or could
not be measured is a ``failure`` whose message says measured against limit and n;
an inconclusive check (the plan offered too few arrivals) is an ``error``, since
the run could not judge it and exit 2 says that is no pass, which a gate counting
failures alone would miss; recovery not judged (its sustain already failed) is
``skipped``. An invalid run judges nothing: validity is its one failure, with
every reason, and each check is skipped.
"""

from __future__ import annotations

import io

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from inputs.phases import BASELINE_PHASE, RECOVERY_PHASE
from reports import formatting as fmt
from reports.faults import MEASURE_WORDS, TIME_TO_RECOVER, FaultCheck
from reports.recovery import NEVER, NOT_JUDGED, NOT_RECOVERED, RECOVERED, RecoveryCheck
from reports.rundir import Run
from reports.stats import LatenessStats
from reports.thresholds import FAIL, INCONCLUSIVE, NOT_MEASURED, ThresholdResult
from reports.verdict import Verdict

JUNIT_FILE = "junit.xml"
# What a check skipped in an invalid run says.
INVALID_RUN = "not judged: the run is invalid"


def junit_xml(run: Run, lateness: LatenessStats, verdict: Verdict) -> str:
    """junit.xml's text: the run's validity and checks as one JUnit test suite."""
    out = io.BytesIO()
    _report(run, lateness, verdict).write(out, pretty=True)
    return out.getvalue().decode("utf-8")


def _report(run: Run, lateness: LatenessStats, verdict: Verdict) -> JUnitXml:
    """The run's validity and checks as one JUnit test suite, as junitparser holds it."""
    suite = TestSuite(f"agent-loadkit {run.scenario.name}")
    suite.timestamp = run.record.started_at
    for name, value in (
        ("run_id", run.run_id),
        ("scenario", run.scenario.name),
        ("verdict", verdict.word),
        ("exit_code", verdict.exit_code),
        ("offered", run.offered),
        ("recorded", lateness.recorded),
    ):
        suite.add_property(name, str(value))
    suite.add_testcase(_validity(run, lateness, verdict))
    cases = [_threshold(run, t) for t in verdict.thresholds]
    if verdict.recovery is not None and verdict.recovery.required:
        cases += [_recovery(run, c) for c in verdict.recovery.checks]
    cases += [_fault(run, c) for w in verdict.faults for c in w.checks if c.judged]
    for case in cases:
        if verdict.invalid_reasons:
            case.result = [Skipped(INVALID_RUN)]
        suite.add_testcase(case)
    report = JUnitXml("agent-loadkit")
    report.add_testsuite(suite)
    return report


def _validity(run: Run, lateness: LatenessStats, verdict: Verdict) -> TestCase:
    """Offered against recorded, and the late share against the scenario's tolerance (a
    closed loop has no schedule to be late to)."""
    case = TestCase("validity", run.scenario.name)
    said = f"offered {run.offered:,}, recorded {lateness.recorded:,}"
    if not run.closed_loop:
        tolerance = run.scenario.lateness.max_late_fraction
        said += (
            f"; measured {fmt.rate(lateness.fraction)} late vs limit ≤ {fmt.rate(tolerance)}, "
            f"n={lateness.recorded:,}"
        )
    if verdict.invalid_reasons:
        case.result = [Failure(f"invalid: {said}", "invalid")]
        case.result[0].text = "\n".join(verdict.invalid_reasons)
    else:
        case.system_out = f"valid: {said}"
    return case


def _threshold(run: Run, t: ThresholdResult) -> TestCase:
    case = TestCase(f"{t.workload} {fmt.metric_name(t.metric)}", f"{run.scenario.name}.{t.phase}")
    if t.metric == "samples":
        said = f"{t.status}: no samples ({t.why})"
    else:
        limit = f"≤ {fmt.metric(t.metric, t.limit)}"
        if t.status == INCONCLUSIVE:
            limit += f" over ≥ {t.min_count:,}"
        reading = t.reading or fmt.metric(t.metric, t.measured)
        said = f"{t.status}: measured {reading} vs limit {limit}, n={t.samples:,}"
    if t.status in (FAIL, NOT_MEASURED):
        case.result = [Failure(said, t.status)]
        case.result[0].text = t.why
    elif t.status == INCONCLUSIVE:
        case.result = [Error(said, t.status)]
    else:
        case.system_out = said
    return case


def _fault(run: Run, c: FaultCheck) -> TestCase:
    """A window's check: its time to recover or its amplification against its limit."""
    case = TestCase(
        f"{c.workload} {MEASURE_WORDS[c.metric]}", f"{run.scenario.name}.fault.{c.fault}"
    )
    limit = f"≤ {fmt.seconds(c.limit)}" if c.metric == TIME_TO_RECOVER else f"≤ {c.limit:g}x"
    said = f"{c.status}: measured {c.reading} vs limit {limit}, n={c.samples:,}"
    if c.status in (FAIL, NOT_MEASURED):
        case.result = [Failure(said, c.status)]
    elif c.status == INCONCLUSIVE:
        case.result = [Error(said, c.status)]
    elif c.status == NOT_JUDGED:
        case.result = [Skipped(said)]
    else:
        case.system_out = said
    return case


def _recovery(run: Run, c: RecoveryCheck) -> TestCase:
    case = TestCase(f"{c.workload} time to recover", f"{run.scenario.name}.{RECOVERY_PHASE}")
    n = c.recover.counts.calls
    band = f"{BASELINE_PHASE}'s band"
    if c.status == RECOVERED:
        case.system_out = (
            f"{c.status}: back in {band} after {fmt.seconds(c.time_to_recover_s)}, n={n:,}"
        )
    elif c.status == NOT_RECOVERED:
        case.result = [Failure(f"{c.status}: measured {NEVER} vs limit {band}, n={n:,}", c.status)]
    elif c.status == NOT_MEASURED:
        case.result = [Failure(f"{c.status}: {c.why}, n={n:,}", c.status)]
    elif c.status == INCONCLUSIVE:
        case.result = [Error(f"{c.status}: {c.why}", c.status)]
    elif c.status == NOT_JUDGED:
        case.result = [Skipped(f"{c.status}: {c.why}")]
    return case
