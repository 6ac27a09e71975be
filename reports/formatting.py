"""How numbers are written in reports: one place, so Markdown, HTML and compare agree.

Absent values are written as a dash, never as zero: a percentile over no
samples did not happen.
"""

from __future__ import annotations

from engine.run_record import ArrivalsRecord, Machine
from inputs.phases import ArrivalKind
from inputs.thresholds import metric_name as scenario_metric_name

ABSENT = "–"


def ms(value: float | None) -> str:
    """Milliseconds with one decimal."""
    return ABSENT if value is None else f"{value:,.1f}"


def rate(value: float | None) -> str:
    """A fraction as a percentage with two decimals."""
    return ABSENT if value is None else f"{value:.2%}"


def known_rate(value: float | None, unverified: int) -> str:
    """An error rate of the failures known, and, when accepted work could not be verified,
    said as a floor beside how much: never a plain rate that reads as the whole truth."""
    return f"at least {rate(value)}; {unverified:,} not verifiable" if unverified else rate(value)


def per_s(value: float | None) -> str:
    """Requests per second with one decimal."""
    return ABSENT if value is None else f"{value:,.1f}/s"


def plural(n: int, word: str, words: str | None = None) -> str:
    """A count with its noun: ``1 regression``, ``2 regressions`` (``words`` where the plural
    is not the word and an s)."""
    return f"{n:,} {word if n == 1 else words or word + 's'}"


def seconds(value: float | None) -> str:
    return ABSENT if value is None else f"{value:,.1f} s"


def count(value: int | None) -> str:
    return ABSENT if value is None else f"{value:,}"


def amount(value: float | None) -> str:
    """A quantity that is not a count, such as a mean of readings, with one decimal."""
    return ABSENT if value is None else f"{value:,.1f}"


def mib(value: float | None) -> str:
    """Mebibytes with one decimal."""
    return ABSENT if value is None else f"{value:,.1f} MiB"


def change(before: float | None, after: float | None) -> str:
    """Relative change from ``before`` to ``after``, signed, or a dash when undefined."""
    if before is None or after is None or before == 0:
        return ABSENT
    return f"{(after - before) / before:+.1%}"


def points(before: float | None, after: float | None) -> str:
    """Difference of two rates in percentage points, signed."""
    if before is None or after is None:
        return ABSENT
    return f"{(after - before) * 100:+.2f} pt"


def arrivals(record: ArrivalsRecord) -> str:
    """A phase's arrival process (run.json's record of it) as a reader says it: ``uniform``,
    ``poisson, seed 7``, ``trace prod.csv: 450 arrivals, its own workloads``."""
    if record.kind == ArrivalKind.POISSON:
        return f"poisson, seed {record.seed or 0}"
    if record.kind == ArrivalKind.TRACE:
        whose = "its own workloads" if record.workloads else "workloads by the mix"
        return f"trace {record.file or ''}: {count(record.arrivals)} arrivals, {whose}"
    return str(record.kind)


def metric(name: str, value: float | None) -> str:
    """A threshold metric's value in its unit: error rates as %, the rest in ms."""
    if name == "error_rate":
        return rate(value)
    return ABSENT if value is None else f"{ms(value)} ms"


def metric_name(name: str) -> str:
    """A verdict row's metric in words: a threshold's as the scenario says it, and the row of a
    workload with no sample as "samples"."""
    return name if name == "samples" else scenario_metric_name(name)


def probe_value(metric_name: str, value: float | None) -> str:
    """A probe reading in a readable unit: bytes as MiB, CPU as %, the rest as recorded."""
    if value is None:
        return ABSENT
    if metric_name.endswith("_bytes"):
        return mib(value / 2**20)
    if metric_name.endswith("_percent"):
        return f"{value:.0f}%"
    if metric_name.endswith("_ms"):
        return f"{ms(value)} ms"
    return f"{value:,.6g}"


def machine(record: Machine | None) -> str:
    """run.json's machine record in one line: host, CPUs, memory, OS, Python."""
    if record is None:
        return "an unrecorded machine"
    parts = [record.hostname]
    if record.cpus is not None:
        parts.append(f"{record.cpus} CPUs")
    if record.memory_gb is not None:
        parts.append(f"{record.memory_gb} GB")
    if record.os is not None:
        parts.append(record.os)
    if record.python is not None:
        parts.append(f"Python {record.python}")
    return ", ".join(parts)
