"""One sample per offered arrival: what it was, when it was due, sent and done, and how it ended.

Workers build each sample as a ``Sample`` and the master turns each batch into columns of
the run's ``samples`` dataset (engine/dataset.py), in the columns reports/README.md lists,
rounded as ``samples.csv`` always wrote them (times to the microsecond), so the dataset and
its CSV export hold the same numbers. Nothing here computes a statistic.
"""

from __future__ import annotations

from typing import NamedTuple

from msgspec import Struct

OK = "ok"
FAILED = "failed"
SHED = "shed"
CANCELLED = "cancelled"
TIMEOUT = "timeout"
ABANDONED = "abandoned"
OUTCOMES = (OK, FAILED, SHED, CANCELLED, TIMEOUT, ABANDONED)

# Outcomes that count as success (ok == 1): a cancelled chat turn is an intended stop, confirmed.
SUCCESSFUL = (OK, CANCELLED)

# The CSV of one row per offered arrival: ``loadkit export`` writes it from the dataset, and
# runs written before the dataset (the committed ones under results/) hold it.
SAMPLES_FILE = "samples.csv"

TIMED_OUT = "timed out"
ABANDONED_AT_END = "abandoned at end"

# How run.json's ``stopped`` says a run ended early, and so why its arrivals were abandoned:
# a signal (Ctrl-C, SIGTERM, SIGHUP) or a quit interrupted it, or the operator pressed the
# web UI's Stop, which reports read as a choice, not a failure of the platform's.
INTERRUPTED = "interrupted"
OPERATOR_STOP = "stopped by the operator"

COLUMNS = (
    "run_id",
    "worker",
    "index",
    "workload",
    "phase",
    "due_s",
    "sent_s",
    "finished_s",
    "latency_ms",
    "latency_due_ms",
    "ttft_ms",
    "tokens",
    "status",
    "ok",
    "outcome",
    "detail",
    "bytes",
    "first_event_ms",
    "last_token_ms",
    "stall_ms",
)
# The columns a streamed turn fills in beyond its first token (engine.seam.Turn); a run from
# before them has none, and reads as streams that measured none.
STREAM_COLUMNS = ("first_event_ms", "last_token_ms", "stall_ms")


class Sample(Struct, array_like=True, gc=False):
    """One arrival's record; times are seconds from the run start, ``sent_s`` None if never sent.

    An array-like msgspec Struct rather than a NamedTuple: it goes on the wire as the same
    compact list of values (no field names), and is decoded back into a Sample with every
    field's type checked, but it is read by name only: a tuple could be (and was) read by
    position, which a field added in the middle silently shifts. It is also cheaper to
    build, encode and decode than a NamedTuple (a worker builds one per arrival, the master
    decodes every one), and holds no container, so ``gc=False`` keeps the millions of them
    a run makes out of the cycle collector's way.
    """

    index: int
    workload: str
    segment: int
    due_s: float
    sent_s: float | None
    finished_s: float
    ttft_ms: float | None
    tokens: int
    status: int
    outcome: str
    detail: str
    bytes: int
    first_event_ms: float | None = None
    last_token_ms: float | None = None
    stall_ms: float | None = None


class Result(NamedTuple):
    """How one request ended, as a workload reports it (the dispatcher adds the times it owns)."""

    status: int
    outcome: str
    detail: str = ""
    bytes: int = 0
    tokens: int = 0
    ttft_ms: float | None = None
    # A streamed turn's other times from its send (engine.seam.Turn): its first event of any
    # kind, its last token, and its longest gap between two tokens.
    first_event_ms: float | None = None
    last_token_ms: float | None = None
    stall_ms: float | None = None


def classify(status: int, size: int) -> Result:
    """How an answer of ``status`` ended: a 2xx is ok, a 429 is shed (the platform refused on
    purpose), anything else failed."""
    if 200 <= status < 300:
        return Result(status, OK, bytes=size)
    if status == 429:
        return Result(status, SHED, f"HTTP {status}", size)
    return Result(status, FAILED, f"HTTP {status}", size)


def recorded(
    index: int,
    workload: str,
    segment: int,
    due_s: float,
    sent_s: float | None,
    finished_s: float,
    result: Result | None,
) -> Sample:
    """The one sample of an arrival that ended with ``result`` (None: abandoned at the run's
    end), as the open-arrival dispatcher and the users driver both record it."""
    if result is None:
        result = Result(0, ABANDONED, ABANDONED_AT_END)
    return Sample(
        index,
        workload,
        segment,
        due_s,
        sent_s,
        finished_s,
        result.ttft_ms,
        result.tokens,
        result.status,
        result.outcome,
        result.detail,
        result.bytes,
        result.first_event_ms,
        result.last_token_ms,
        result.stall_ms,
    )


def columns(worker: int, phases: list[str], samples: list[Sample]) -> dict[str, list]:
    """A batch of one process's samples as the dataset's columns: both latencies derived from
    the unrounded times, then every time rounded as samples.csv always spelled it (seconds to
    6 places, milliseconds to 3: round(x, 6) is the double f"{x:.6f}" spells), so the CSV
    ``loadkit export`` writes from the dataset is the one the master used to write."""
    sent = [s.sent_s for s in samples]
    return {
        "worker": [worker] * len(samples),
        "index": [s.index for s in samples],
        "workload": [s.workload for s in samples],
        "phase": [phases[s.segment] for s in samples],
        "due_s": [round(s.due_s, 6) for s in samples],
        "sent_s": [None if t is None else round(t, 6) for t in sent],
        "finished_s": [round(s.finished_s, 6) for s in samples],
        "latency_ms": [
            None if t is None else round((s.finished_s - t) * 1000, 3)
            for s, t in zip(samples, sent, strict=True)
        ],
        "latency_due_ms": [round((s.finished_s - s.due_s) * 1000, 3) for s in samples],
        "ttft_ms": [_ms(s.ttft_ms) for s in samples],
        "tokens": [s.tokens for s in samples],
        "status": [s.status for s in samples],
        "ok": [1 if s.outcome in SUCCESSFUL else 0 for s in samples],
        "outcome": [s.outcome for s in samples],
        "detail": [s.detail for s in samples],
        "bytes": [s.bytes for s in samples],
        "first_event_ms": [_ms(s.first_event_ms) for s in samples],
        "last_token_ms": [_ms(s.last_token_ms) for s in samples],
        "stall_ms": [_ms(s.stall_ms) for s in samples],
    }


def _ms(value: float | None) -> float | None:
    """A duration in milliseconds as the samples spell them (to the microsecond)."""
    return None if value is None else round(value, 3)
