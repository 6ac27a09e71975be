"""One sample per offered arrival: what it was, when it was due, sent and done, and how it ended.

Workers build samples as plain tuples (cheap to make, and msgpack sends a tuple as
a compact list) and the master turns each into one ``samples.csv`` row in the
columns reports/README.md lists. Nothing here computes a statistic.
"""

from __future__ import annotations

from typing import NamedTuple

OK = "ok"
FAILED = "failed"
SHED = "shed"
CANCELLED = "cancelled"
TIMEOUT = "timeout"
ABANDONED = "abandoned"
OUTCOMES = (OK, FAILED, SHED, CANCELLED, TIMEOUT, ABANDONED)

# Outcomes that count as success (ok == 1): a cancelled chat turn is an intended stop, confirmed.
SUCCESSFUL = (OK, CANCELLED)

# The file in the run directory that holds one row per offered arrival.
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
)


class Sample(NamedTuple):
    """One arrival's record; times are seconds from the run start, ``sent_s`` None if never sent."""

    # Shadows tuple.index, which nothing calls on it: the column's name in every file.
    index: int  # type: ignore[assignment]
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
    )


def csv_row(run_id: str, worker: int, phase: str, sample: Sample) -> tuple:
    """The ``samples.csv`` row for a sample, with both latencies derived from its times."""
    sent = sample.sent_s
    return (
        run_id,
        worker,
        sample.index,
        sample.workload,
        phase,
        f"{sample.due_s:.6f}",
        "" if sent is None else f"{sent:.6f}",
        f"{sample.finished_s:.6f}",
        "" if sent is None else f"{(sample.finished_s - sent) * 1000:.3f}",
        f"{(sample.finished_s - sample.due_s) * 1000:.3f}",
        "" if sample.ttft_ms is None else f"{sample.ttft_ms:.3f}",
        sample.tokens,
        sample.status,
        1 if sample.outcome in SUCCESSFUL else 0,
        sample.outcome,
        sample.detail,
        sample.bytes,
    )
