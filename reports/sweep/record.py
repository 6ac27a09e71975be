"""sweep.json: a sweep's figures for machines, one typed record written and read through one type.

As summary.json is for a run (reports/summary.py): ``analysis`` measures a sweep into
``Sweep``, the command writes it with msgspec's encoder, and a reader (bench/agent_servers.py
compares platforms from it) decodes it with ``read_sweep``, so a shape that drifts fails
where it is read, naming the field, not as a ``KeyError`` three steps later. A field that is
one of two records (a memory fit drawn or not, memory measured or not) carries a ``kind``
tag, because a decoder cannot tell two records apart by their fields alone. Its JSON
Schema, reports/sweep/sweep.schema.json, is generated from the type (``python -m reports
schema``).
"""

from __future__ import annotations

from pathlib import Path

import msgspec
from msgspec import field

from reports.summary import Record

SWEEP_FILE = "sweep.json"
SCHEMA_FILE = Path(__file__).with_name("sweep.schema.json")
# The field that names which of two records a union holds.
KIND = "kind"


class Latency(Record, frozen=True):
    """One workload's latency in a step: nearest-rank p50/p95 over its timed successes and
    its first tokens, each with the count it rests on (null where there were none)."""

    n: int
    p50_ms: float | None
    p95_ms: float | None
    ttft_n: int
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None


class Overhead(Record, frozen=True):
    """What the platform added over the stub's stated delays in a step, for one model workload."""

    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    turn_p50_ms: float | None
    turn_p95_ms: float | None


class Step(Record, frozen=True):
    """One sweep step as measured: its load and throughput, latency and overhead per workload
    (keyed by workload), its thresholds, and the API's memory once read."""

    name: str
    load: float
    seconds: float
    offered: int
    completed_per_s: float
    successes_per_s: float
    error_rate: float | None
    shed_rate: float | None
    latency: dict[str, Latency] = field(default_factory=dict)
    overhead: dict[str, Overhead] = field(default_factory=dict)
    thresholds: str = "none judged"
    holds: bool = True
    failed: tuple[str, ...] = ()
    rss_mb: float | None = None
    private_dirty_mb: float | None = None
    sessions: float | None = None


class Fitted(Record, frozen=True, tag_field=KIND, tag="fitted"):
    """Least squares MB = base + slope x sessions, with r^2 and the steps it rests on."""

    points: int
    slope_mb: float
    base_mb: float
    r2: float


class NotFitted(Record, frozen=True, tag_field=KIND, tag="not fitted"):
    """A memory fit with too few readings to draw, and why."""

    points: int
    text: str


class Memory(Record, frozen=True, tag_field=KIND, tag="measured"):
    """The API's memory against sessions: what a session is here, the RSS and Private_Dirty
    fits, whether a rest step gave the growth back, and all of it in one sentence."""

    sessions: str
    rss: Fitted | NotFitted
    private_dirty: Fitted | NotFitted
    given_back: str
    text: str


class MemoryNotMeasured(Record, frozen=True, tag_field=KIND, tag="not measured"):
    """No API process was probed, so no memory to fit: the sentence says what to give."""

    text: str


class Sweep(Record, frozen=True):
    """The whole sweep: its steps and what they say. ``stub`` holds the stub's knobs as it
    stated them (name to value), whichever it states."""

    run_id: str
    mode: str
    load_unit: str
    steps: tuple[Step, ...]
    knee: float | None
    knee_text: str
    plateau_text: str
    stub: dict[str, float]
    memory: Memory | MemoryNotMeasured

    @property
    def has_memory(self) -> bool:
        """Whether any step read the API's memory (the table and the chart's third panel)."""
        return any(s.rss_mb is not None for s in self.steps)


def sweep_text(sweep: Sweep) -> str:
    """sweep.json's text: one-space indented JSON, every figure unrounded."""
    return msgspec.json.format(msgspec.json.encode(sweep), indent=1).decode() + "\n"


_DECODER = msgspec.json.Decoder(Sweep)


def read_sweep(run_dir: Path) -> Sweep:
    """The sweep's sweep.json, decoded and checked through the type that wrote it. OSError
    when there is none; msgspec.DecodeError, naming the field, when it is not the record."""
    return _DECODER.decode((run_dir / SWEEP_FILE).read_bytes())
