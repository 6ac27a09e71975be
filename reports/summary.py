"""summary.json: the verdict and the numbers behind it, for machines rather than readers.

A CI job or a dashboard reads this instead of scraping the Markdown; every
percentile carries its count, and an absent value is null, never zero. The file is
one typed record, ``Summary``: the report writes it and every reader decodes it
through the same type, so a shape that drifts fails where it is read, naming the
field. Its JSON Schema is generated from the type, never written by hand:
``python -m reports schema`` writes reports/summary.schema.json (reports/schemas.py),
and a test holds the committed file to the type. The module is long only because each field carries
its description, which is the schema's documentation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from engine.run_record import ArrivalsRecord
from inputs.faults import FaultKind
from reports.finding import Finding

SUMMARY_FILE = "summary.json"
SCHEMA_FILE = Path(__file__).with_name("summary.schema.json")

# How many, never below 0; a rate (a fraction of 1) or a reading that may be absent (null).
Count = Annotated[int, Meta(ge=0)]
Maybe = float | None
# Phrases several fields share.
_NO_CALLS = "null when there were no calls (not measured, never 0)"
_BY_NAME = "by workload name"


class Record(Struct, frozen=True, forbid_unknown_fields=True):
    """A part of summary.json (or sweep.json): a field it does not describe is refused where
    it is read."""


class PercentilesRecord(Record, frozen=True):
    """Nearest-rank percentiles from raw samples, each beside its count"""

    count: Annotated[Count, Meta(description="observations the percentiles are taken over")]
    p50: Annotated[Maybe, Meta(description="nearest-rank 50th percentile; null without any")]
    p95: Annotated[Maybe, Meta(description="nearest-rank 95th percentile; null without any")]
    p99: Annotated[Maybe, Meta(description="nearest-rank 99th percentile; null without any")]
    max: Annotated[Maybe, Meta(description="largest observation; null without observations")]


class FollowUps(Record, frozen=True):
    """What became of the work accepted in the slice (followups.csv)"""

    accepted: Annotated[
        Count,
        Meta(description="arrivals the platform accepted for later work (202, or a 200 that "
             "only accepts)"),
    ]  # fmt: skip
    processed: Annotated[Count, Meta(description="accepted work the follow-up found done")]
    failed_after: Annotated[
        Count, Meta(description="accepted work that failed after it was accepted (lost)")
    ]
    not_finished: Annotated[
        Count, Meta(description="accepted work not finished within the follow-up grace (lost)")
    ]
    unverified: Annotated[Count, Meta(description="accepted work whose fate could not be read")]


# The outcome counts and rates every slice carries, described once (CountsRecord and RunCounts).
Calls = Annotated[Count, Meta(description="samples")]
Ok = Annotated[Count, Meta(description="samples with outcome ok")]
Failed = Annotated[Count, Meta(description="outcome failed")]
Shed = Annotated[Count, Meta(description="outcome shed (429 with Retry-After)")]
Cancelled = Annotated[
    Count, Meta(description="outcome cancelled: a chat turn stopped on purpose, a success")
]
Timeouts = Annotated[Count, Meta(description="outcome timeout")]
Abandoned = Annotated[Count, Meta(description="outcome abandoned: in flight when the run ended")]
StopCut = Annotated[
    Count,
    Meta(description="of the abandoned, those the operator's Stop cut off (run.json stopped: "
         "'stopped by the operator'): in no error, failure or shed rate, whose denominator "
         "leaves them out"),
]  # fmt: skip
Errors = Annotated[
    Count,
    Meta(description="failures (failed, timeout, abandoned, accepted work lost) plus shed when "
         "the scenario counts shedding as an error"),
]  # fmt: skip
ErrorRate = Annotated[Maybe, Meta(description=f"errors over calls less stop_cut; {_NO_CALLS}")]
FailureRate = Annotated[
    Maybe, Meta(description=f"failures other than shedding over calls; {_NO_CALLS}")
]
ShedRate = Annotated[Maybe, Meta(description=f"shed over calls; {_NO_CALLS}")]


class CountsRecord(Record, frozen=True):
    """Samples by outcome, and the rates taken over them"""

    calls: Calls
    ok: Ok
    failed: Failed
    shed: Shed
    cancelled: Cancelled
    timeouts: Timeouts
    abandoned: Abandoned
    stop_cut: StopCut
    errors: Errors
    after: FollowUps
    error_rate: ErrorRate
    failure_rate: FailureRate
    shed_rate: ShedRate


class RunCounts(Record, frozen=True):
    """The whole run's counts, the driver's first (its own record, not a CountsRecord's
    subclass, so that the driver's counts come first in the file as they always have)"""

    offered: Annotated[Count, Meta(description="arrivals offered")]
    recorded: Annotated[Count, Meta(description="samples recorded")]
    late: Annotated[Count, Meta(description="late dispatches")]
    never_sent: Annotated[
        Count, Meta(description="arrivals never sent (abandoned before a byte left)")
    ]
    calls: Calls
    ok: Ok
    failed: Failed
    shed: Shed
    cancelled: Cancelled
    timeouts: Timeouts
    abandoned: Abandoned
    stop_cut: StopCut
    errors: Errors
    after: FollowUps
    error_rate: ErrorRate
    failure_rate: FailureRate
    shed_rate: ShedRate


class WorkloadSlice(CountsRecord, frozen=True):
    """One workload's counts and latencies in a slice, in ms"""

    latency_ms: Annotated[
        PercentilesRecord,
        Meta(description="send to done over timed successes (ok; a chat turn only when "
             "completed)"),
    ]  # fmt: skip
    latency_due_ms: Annotated[
        PercentilesRecord,
        Meta(description="due to done over the same successes: what a user waited, queueing in "
             "the driver included"),
    ]  # fmt: skip
    ttft_ms: Annotated[
        PercentilesRecord,
        Meta(description="time to first token over ok == 1 (chat turns, cancelled ones "
             "included)"),
    ]  # fmt: skip
    step_overhead_ms: Annotated[
        PercentilesRecord,
        Meta(description="the platform's own time per step of the agent's loop: a turn's "
             "latency less the stub's time for its model calls, over those calls, for "
             "successful turns that made the planned calls (count 0 where the loop was not "
             "measured)"),
    ]  # fmt: skip
    first_event_ms: Annotated[
        PercentilesRecord,
        Meta(description="time to first event of any kind (the platform took the turn: an A2A "
             "task's first state, AG-UI's RUN_STARTED) over ok == 1 chat turns that saw one"),
    ]  # fmt: skip
    itl_ms: Annotated[
        PercentilesRecord,
        Meta(description="inter-token latency, (last token - first token) / (tokens - 1), over "
             "completed chat turns with two tokens or more"),
    ]  # fmt: skip
    stall_ms: Annotated[
        PercentilesRecord,
        Meta(description="a completed chat turn's longest gap between two tokens, over the same "
             "turns as itl_ms"),
    ]  # fmt: skip
    tpot_ms: Annotated[
        PercentilesRecord,
        Meta(description="time per output token, the last token's time from the send over "
             "tokens, over completed chat turns with a token"),
    ]  # fmt: skip
    output_tokens: Annotated[
        Count,
        Meta(description="tokens the completed chat turns brought (divide by window_s for "
             "output tokens per second)"),
    ]  # fmt: skip


class FailureRecord(Record, frozen=True):
    """Failures grouped by workload, outcome and detail, most frequent first"""

    workload: str
    outcome: Annotated[
        str, Meta(description="outcome, or the follow-up state of work lost after it was accepted")
    ]
    detail: Annotated[
        str, Meta(description="the sample's detail text (stable words, e.g. 'HTTP 500')")
    ]
    count: Annotated[int, Meta(ge=1, description="samples in the group")]


class SliceRecord(Record, frozen=True):
    """Statistics over a set of samples"""

    window_s: Annotated[float, Meta(description="seconds the slice spans")]
    total: Annotated[CountsRecord, Meta(description="every workload together")]
    workloads: Annotated[
        dict[str, WorkloadSlice],
        Meta(description=f"{_BY_NAME}: every workload of the scenario's mix, zero calls included"),
    ]
    failures: Annotated[
        list[FailureRecord], Meta(description="failure groups, most frequent first")
    ]


class PhaseSummary(Record, frozen=True):
    """One phase, its samples sliced by offer and by completion"""

    start_s: Annotated[float, Meta(description="phase start, seconds from the run's t = 0")]
    end_s: Annotated[float, Meta(description="phase end")]
    arrivals: Annotated[
        ArrivalsRecord | None,
        Meta(description="run.json's record of the phase's arrival process (docs/arrivals.md); "
             "null in users mode, which has no schedule"),
    ]  # fmt: skip
    offered: Annotated[Count, Meta(description="arrivals offered in the phase (run.json)")]
    recorded: Annotated[Count, Meta(description="samples of those arrivals")]
    late: Annotated[
        Count, Meta(description="of them sent more than late_after_ms after due, or never sent")
    ]
    by_offer: Annotated[
        SliceRecord,
        Meta(description="samples offered in the phase, wherever they finished: what thresholds "
             "judge"),
    ]  # fmt: skip
    by_completion: Annotated[
        SliceRecord,
        Meta(description="samples finished in the phase: throughput as the platform saw it"),
    ]


class Validity(Record, frozen=True):
    """Whether the numbers can be used at all"""

    status: Annotated[
        Literal["valid", "invalid"], Meta(description="invalid when invalid_reasons is not empty")
    ]
    offered: Annotated[Count, Meta(description="arrivals offered (run.json)")]
    recorded: Annotated[Count, Meta(description="samples recorded")]
    late: Annotated[
        Count, Meta(description="sent more than late_after_ms after due, or never sent")
    ]
    late_fraction: Annotated[Maybe, Meta(description="late over recorded; null with no samples")]
    late_tolerance: Annotated[float, Meta(description="the scenario's max_late_fraction")]


class Threshold(Record, frozen=True):
    """One threshold in one phase, as judged"""

    workload: Annotated[str, Meta(description="workload the check is about")]
    metric: Annotated[
        str,
        Meta(description="a scenario metric (p50_ms .. max_ms, p50_ttft_ms .. p99_ttft_ms, "
             "p50_step_overhead_ms .., p50_first_event_ms .., p50_itl_ms .., p50_tpot_ms .., "
             "p95_stall_ms .. max_stall_ms, error_rate), or 'samples' for a workload with none "
             "(skipped at preflight, or no arrival in the whole run)"),
    ]  # fmt: skip
    phase: Annotated[
        str,
        Meta(description="phase the check is judged in ('preflight' or 'whole run' for a "
             "'samples' row)"),
    ]  # fmt: skip
    limit: Annotated[
        Maybe, Meta(description="the scenario's limit (ms or a fraction); null for 'samples'")
    ]
    why: Annotated[
        str, Meta(description="the scenario's reason for the limit, or why 'samples' has none")
    ]
    measured: Annotated[
        Maybe,
        Meta(description="the value over the phase's samples (ms or a fraction); null when there "
             "was nothing to measure"),
    ]  # fmt: skip
    samples: Annotated[Count, Meta(description="observations the value is over (n)")]
    status: Annotated[
        str,
        Meta(description="pass; FAIL and 'not measured' fail the run (exit 1); 'inconclusive' "
             "(too few arrivals planned) leaves it undecided (exit 2)"),
    ]  # fmt: skip
    min_count: Annotated[
        int,
        Meta(ge=1, description="fewest observations the check is judged on (scenario "
             "judging.min_counts)"),
    ]  # fmt: skip
    reading: Annotated[
        str,
        Meta(description="what the check read, in words with units (or why the value alone does "
             "not decide it)"),
    ]  # fmt: skip
    unverified: Annotated[
        Count,
        Meta(description="accepted work in the slice whose fate is unknown (error rates only)"),
    ]


class Jump(Record, frozen=True):
    """A failure or shed rate more than the rule's points above sustain's"""

    workload: str
    phase: Annotated[str, Meta(description="a phase after sustain")]
    kind: Annotated[Literal["failure", "shed"], Meta(description="which rate rose")]
    baseline_rate: Annotated[float, Meta(description="the rate in sustain")]
    rate: Annotated[float, Meta(description="the rate in this phase")]
    count: Annotated[Count, Meta(description="failures or sheds in this phase")]
    calls: Annotated[int, Meta(ge=1, description="samples in this phase")]


class Jumps(Record, frozen=True):
    """Failure and shed rates that rose after sustain"""

    rule: Annotated[str, Meta(description="the rule in words")]
    found: Annotated[list[Jump], Meta(description="each jump found")]


class RecoveryWorkload(Record, frozen=True):
    """One workload's recovery"""

    status: Annotated[str, Meta(description="recovered back into sustain's band, or why not")]
    time_to_recover_s: Annotated[
        Maybe, Meta(description="seconds from the start of recover; null unless recovered")
    ]
    why: Annotated[
        str, Meta(description="why not judged, not measured or inconclusive ('' otherwise)")
    ]


class RecoveryRecord(Record, frozen=True):
    """Whether recover came back to sustain's band"""

    rule: Annotated[str, Meta(description="the rule in words")]
    required: Annotated[
        bool,
        Meta(description="true: a workload that did not recover fails the run; false: "
             "informational"),
    ]  # fmt: skip
    window_arrivals: Annotated[int, Meta(ge=1, description="arrivals in each sliding window")]
    status: Annotated[str, Meta(description="the worst workload's status")]
    workloads: Annotated[dict[str, RecoveryWorkload], Meta(description=_BY_NAME)]


class Generator(Record, frozen=True):
    """How hard one load-generating process worked"""

    probe: Annotated[str, Meta(description="generator.<slot>")]
    peak_cpu_percent: Annotated[Maybe, Meta(description="highest CPU reading, % of one core")]
    peak_loop_lag_ms: Annotated[Maybe, Meta(description="worst event-loop lag")]
    busy: Annotated[bool, Meta(description="whether the process may have held the run back")]
    why: Annotated[str, Meta(description="why it counts as busy ('' when not)")]


class PlatformLogRecord(Record, frozen=True):
    """The platform's ERROR and CRITICAL lines written during the run (--platform-log)"""

    path: Annotated[str, Meta(description="the log file as run.json names it")]
    bytes_read: Annotated[
        Count, Meta(description="bytes of the log written during the run that were read")
    ]
    by_level: Annotated[dict[str, Count], Meta(description="lines by level (ERROR, CRITICAL)")]
    most_frequent: Annotated[str | None, Meta(description="the most frequent message, if any")]
    most_frequent_count: Annotated[Count, Meta(description="how many times it was logged")]
    missing: Annotated[
        str | None, Meta(description="why the log could not be read; null when it was")
    ]
    errors: Annotated[Count, Meta(description="ERROR and CRITICAL lines together")]
    line: Annotated[
        str,
        Meta(description="the count and the most frequent message in one line, as the first "
             "screen says it"),
    ]  # fmt: skip


class FaultSpan(Record, frozen=True):
    """One workload's arrivals due in a span around a window"""

    calls: Annotated[Count, Meta(description="arrivals of the workload due in the span")]
    errors: Annotated[Count, Meta(description="those that were errors, as every table counts")]
    error_rate: Annotated[Maybe, Meta(description="errors over calls; null without calls")]


class FaultCheck(Record, frozen=True):
    """A window's time to recover or amplification for one workload, judged or reported"""

    fault: Annotated[str, Meta(description="the window's name")]
    workload: str
    metric: Annotated[
        Literal["time_to_recover_s", "amplification"],
        Meta(description="seconds from the window's end until back in sustain's band, or model "
             "calls per turn during over before"),
    ]  # fmt: skip
    limit: Annotated[Maybe, Meta(description="the window's limit; null: reported, not a check")]
    measured: Annotated[
        Maybe,
        Meta(description="the seconds or the ratio; null when there is none (never, too few, "
             "not applied)"),
    ]  # fmt: skip
    samples: Annotated[
        Count,
        Meta(description="arrivals after the window (time to recover) or turns during it "
             "(amplification)"),
    ]  # fmt: skip
    status: Annotated[
        str,
        Meta(description="a check's status when limit is set; else recovered, not recovered, "
             "reported, inconclusive"),
    ]  # fmt: skip
    reading: Annotated[str, Meta(description="the measure in words, or why there is none")]


class FaultLimitsRecord(Record, frozen=True):
    """The window's own limits; null: reported, not judged"""

    time_to_recover_s: Maybe
    amplification: Maybe


class FaultEventRecord(Record, frozen=True):
    """One thing done about a window, by a stub process or the guard"""

    fault: str
    kind: str
    by: str
    event: Annotated[
        Literal["applied", "undone", "cancelled", "not applied", "undo failed"],
        Meta(description="what was done"),
    ]
    planned: Annotated[float, Meta(description="epoch seconds")]
    at: Annotated[float, Meta(description="epoch seconds")]
    detail: str
    at_s: Annotated[float, Meta(description="on the run's clock")]
    planned_s: Annotated[float, Meta(description="on the run's clock")]


class AcceptedDuring(FollowUps, frozen=True):
    """What became of the work accepted during the window"""

    lost: Annotated[Count, Meta(description="failed after it was accepted, or not finished")]


class ModelCalls(Record, frozen=True):
    """Model calls per turn at the stub before the window and during it"""

    before: Maybe
    during: Maybe
    turns_before: Count
    turns_during: Count


class WindowWorkloadRecord(Record, frozen=True):
    """One workload around a window"""

    before: Annotated[FaultSpan, Meta(description="arrivals due in the window's length before it")]
    during: Annotated[FaultSpan, Meta(description="arrivals due during it")]
    after: Annotated[FaultSpan, Meta(description="arrivals due in the window's length after it")]
    latency_during_ms: PercentilesRecord
    shed_during: Annotated[Count, Meta(description="429s of arrivals due during it")]
    shed_with_retry_after: Annotated[
        Count, Meta(description="of those, 429s that said Retry-After")
    ]
    shed_without_retry_after: Annotated[
        Count,
        Meta(description="of those, 429s that said none (the rest, a streamed turn's, did not "
             "say)"),
    ]  # fmt: skip
    in_flight_at_end: Annotated[
        Count, Meta(description="arrivals sent and not finished at its end")
    ]
    accepted_during: AcceptedDuring
    model_calls_per_turn: ModelCalls
    time_to_recover: FaultCheck
    amplification: FaultCheck | None


class QueueRecord(Record, frozen=True):
    """A probe's queue series: its peak before the window and during it"""

    series: str
    before: Maybe
    during: Maybe


class FaultWindowRecord(Record, frozen=True):
    """One fault window: where it fell, what was done about it, each workload around it"""

    name: str
    kind: FaultKind
    what: Annotated[str, Meta(description="the kind and its settings in words")]
    phase: str
    start_s: Annotated[float, Meta(description="the window's start on the run's clock")]
    end_s: Annotated[float, Meta(description="its end on the run's clock")]
    limits: FaultLimitsRecord
    not_applied: Annotated[
        str | None,
        Meta(description="why the window was not applied (judged nowhere); null when it was"),
    ]
    undo_failed: Annotated[
        list[str],
        Meta(description="each failed undoing, by whom and why: the run is invalid"),
    ]
    events: Annotated[
        list[FaultEventRecord],
        Meta(description="what was done about it, by the stub's processes and the guard"),
    ]
    workloads: Annotated[dict[str, WindowWorkloadRecord], Meta(description=_BY_NAME)]
    queue: Annotated[
        list[QueueRecord],
        Meta(description="the probes' queue series, each one's peak before the window and "
             "during it"),
    ]  # fmt: skip


class FaultsRecord(Record, frozen=True):
    """Each fault window and what the platform did about it (docs/reports.md 'Fault windows')"""

    rule: Annotated[str, Meta(description="the rule in words")]
    undo_failed: Annotated[list[str], Meta(description="one line per window whose undoing failed")]
    windows: list[FaultWindowRecord]


class Summary(Record, frozen=True):
    """A run's verdict and the numbers behind it, as reports/summary.py writes it into the run
    directory (docs/outputs.md). Durations are seconds, latencies ms, rates fractions of 1; an
    absent value is null, never 0; every percentile carries its count."""

    run_id: Annotated[str, Meta(description="the run directory's name")]
    scenario: Annotated[str, Meta(description="the scenario's name")]
    mode: Annotated[
        Literal["open arrival", "users"],
        Meta(description="how load was offered: the schedule (open arrival) or closed-loop users"),
    ]
    verdict: Annotated[
        str, Meta(description="the exit code in words: pass, fail, invalid or inconclusive")
    ]
    exit_code: Annotated[
        int,
        Meta(ge=0, le=2, description="0 pass; 1 a check failed or was not measured, or a "
             "required recovery did not happen; 2 the run is invalid, or (with nothing failed) "
             "a check was inconclusive"),
    ]  # fmt: skip
    headline: Annotated[
        str,
        Meta(description="the verdict line: word, exit code, every check counted once by "
             "status, flags"),
    ]  # fmt: skip
    findings: Annotated[list[Finding], Meta(description="the short list, in verdict order")]
    recovery_line: Annotated[
        str, Meta(description="each workload's time to recover in one line, or why there is none")
    ]
    validity: Validity
    invalid_reasons: Annotated[
        list[str], Meta(description="why the run cannot be judged; empty when it can")
    ]
    warnings: Annotated[
        list[str], Meta(description="what a reader must know that does not invalidate the run")
    ]
    skipped: Annotated[
        dict[str, str], Meta(description="workloads preflight left out, by name, with why")
    ]
    unserved: Annotated[
        dict[str, str], Meta(description="users mode: workloads no user ran, by name, with why")
    ]
    not_offered: Annotated[
        list[str], Meta(description="workloads the scenario gives no share: never judged")
    ]
    why_not_offered: Annotated[
        dict[str, str],
        Meta(description="of not_offered, those the platform's own share of 0 leaves out "
             "(scenario.yaml's per_platform), with why as the scenario says it"),
    ]  # fmt: skip
    thresholds: Annotated[
        list[Threshold],
        Meta(description="every threshold in every phase it names, and a 'samples' row per "
             "workload without samples"),
    ]  # fmt: skip
    counts: RunCounts
    lateness_ms: Annotated[
        PercentilesRecord,
        Meta(description="send lateness (sent minus due) over the arrivals that were sent"),
    ]
    phases: Annotated[dict[str, PhaseSummary], Meta(description="by phase name, in run order")]
    whole_run: Annotated[SliceRecord, Meta(description="every sample")]
    jumps: Jumps
    recovery: Annotated[
        RecoveryRecord | None, Meta(description="null without both sustain and recover")
    ]
    generators: Annotated[
        list[Generator],
        Meta(description="each load-generating process's own load (the probes' table)"),
    ]
    probes_missing: Annotated[
        dict[str, str], Meta(description="probes that were not taken, by name, with why")
    ]
    platform_log: Annotated[
        PlatformLogRecord | None, Meta(description="null when the run names no log")
    ]
    faults: Annotated[
        FaultsRecord | UnsetType, Meta(description="absent in a run without fault windows")
    ] = UNSET


def summary_text(record: Summary) -> str:
    """summary.json's text: two-space indented JSON, as it has always been written."""
    return json.dumps(msgspec.to_builtins(record), indent=2) + "\n"


_DECODER = msgspec.json.Decoder(Summary)


def read_summary(run_dir: Path) -> Summary:
    """The run's summary.json, decoded and checked through the type that wrote it. OSError
    when there is none; msgspec.DecodeError, naming the field, when it is not the record."""
    return _DECODER.decode((run_dir / SUMMARY_FILE).read_bytes())
