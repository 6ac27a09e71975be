"""run.json from a run as it stands: its plan's counts while it goes (the planned ones, an
open plan's up to a moment ahead), then what every process said it offered (the plan's share
for a process that never said), how it started and ended, and the processes it lost.
"""

from __future__ import annotations

import os
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pyarrow as pa
import pyarrow.compute as pc
from msgspec import UNSET

from engine.dataset import SAMPLES, read_table
from engine.mix import Mix
from engine.run_record import (
    NOT_ENDED,
    NOT_SUMMARISED,
    VERSION,
    LogCount,
    LostProcess,
    PhaseRecord,
    PlatformLogStretch,
    ProbesSummary,
    RunRecord,
)
from engine.schedule import Plan
from inputs.scenario import Scenario
from reports.platform_log import read_stretch
from runner.active_run import CHANGE_LEAD_S, ActiveRun, iso
from runner.before_load import log_size
from runner.run_files import machine
from shapes.kit_shape import mode_of, users_of


def record_of(run: ActiveRun, shape: object, probes: ProbesSummary = NOT_SUMMARISED) -> RunRecord:
    """run.json as of now: planned counts until the run ends, then what was offered."""
    if run.end_s is not None:
        end_s = run.end_s
    elif run.plan.end_s is not None:
        end_s = run.plan.end_s
    else:
        end_s = max(run.clock.now(), 0.0) + CHANGE_LEAD_S
    plan = run.plan if run.plan.closed else run.plan.as_run(end_s)
    ended = run.end_s is not None
    offered = _offered(run, plan) if ended else _planned(run.scenario, plan)
    phases = []
    # A run stopped in the start's lead (a signal before t = 0) ran no phase: its record says
    # so with no phases and the scenario as given, never a phase that ends where it starts.
    before_start = ended and end_s <= 0.0
    for number, segment in enumerate(() if before_start else plan.segments):
        counts = {name: offered.get((number, name), 0) for name in run.scenario.mix}
        phases.append(
            PhaseRecord(
                name=segment.name,
                rate=segment.rate,
                start_s=segment.start_s,
                end_s=segment.closed_end_s(),
                reason=segment.reason,
                arrivals=segment.arrivals_record(),
                offered=counts,
                offered_total=sum(counts.values()),
            )
        )
    settings = run.settings
    return RunRecord(
        version=VERSION,
        run_id=run.run_id,
        started_at=run.started_at,
        start_epoch=run.clock.start_epoch,
        ended_at=iso(run.clock.start_epoch + end_s) if ended else None,
        duration_s=round(max(end_s, 0.0), 3),
        scenario=run.scenario if before_start else plan.scenario_as_run(run.scenario),
        scale=settings.scale,
        phases=phases,
        offered=sum(p.offered_total for p in phases),
        workers=run.workers,
        start=msgspec.structs.replace(run.lead, processes=run.process_starts),
        lost=run.lost,
        connections=settings.connections,
        connections_needed=settings.connections_needed,
        connections_note=settings.connections_note,
        host=settings.host,
        accept_encoding=settings.accept_encoding,
        tls_trust=settings.trust.words(),
        tls_verified=not settings.trust.insecure,
        topology=settings.topology,
        machine=machine(),
        probes=probes,
        follow_up_grace_s=settings.follow_up_grace_s,
        follow_up_ended_at=run.followed_until,
        skipped=run.skipped,
        platform=run.platform,
        stopped=run.stopped or NOT_ENDED,
        mode=mode_of(shape),
        users=users_of(shape),
        platform_log=(
            UNSET if settings.platform_log is None else _log_stretch(settings.platform_log, run)
        ),
    )


def write_record(
    run: ActiveRun, shape: object, probes: ProbesSummary = NOT_SUMMARISED
) -> RunRecord:
    """run.json as of now, written in one step; the record written."""
    record = record_of(run, shape, probes)
    run.files.write_run_json(record)
    return record


def lost_processes(run: ActiveRun) -> list[LostProcess]:
    """Each process that never drained, named, with the global arrival indexes it was due to
    offer before the run ended and that the samples do not hold, as [first, last] ranges of
    its own indexes (slot, slot + W, ...)."""
    silent = run.silent()
    if not silent or run.end_s is None:
        return []
    returned: dict[int, set[int]] = {slot: set() for slot in silent}
    written = read_table(run.files.dir, SAMPLES, ("worker", "index"))
    mine = written.filter(pc.is_in(written["worker"], pa.array(silent, pa.int32())))
    for slot, index in zip(mine["worker"].to_pylist(), mine["index"].to_pylist(), strict=True):
        returned[slot].add(index)
    names = {slot: client for client, slot in run.slots.items()}
    lost = []
    for slot in silent:
        due = [k for _, k in run.plan.indexes_before(run.end_s) if k % run.workers == slot]
        missing = [k for k in due if k not in returned[slot]]
        ranges = _ranges(missing, run.workers)
        lost.append(
            LostProcess(slot, names.get(slot, ""), len(returned[slot]), len(missing), ranges)
        )
    return lost


def iso_ms(epoch: float) -> str:
    """To the millisecond: the follow-up's end is compared with the platform's own times,
    and a delivery finished at .109 read as unfinished against a whole second."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def _offered(run: ActiveRun, plan: Plan) -> Counter:
    """Per (segment, workload): what each process says it offered; the plan's share for a
    process that never said (lost), up to when the run ended."""
    offered: Counter = Counter()
    for drained in run.drained.values():
        for said in drained.batch.offered:
            offered[said.segment, said.workload] += said.count
    silent = set(run.silent())
    if silent:
        mix = Mix.from_scenario(run.scenario)
        for segment, k in plan.indexes_before(run.end_s):
            if k % run.workers in silent:
                offered[segment, mix.pick_in(plan.segments[segment], k)] += 1
    return offered


def _planned(scenario: Scenario, plan: Plan) -> Counter:
    """What a closed plan offers in full, per (segment, workload)."""
    mix = Mix.from_scenario(scenario)
    return Counter(
        (segment, mix.pick_in(plan.segments[segment], k)) for segment, k in plan.indexes_before()
    )


def _ranges(indexes: list[int], step: int) -> list[list[int]]:
    """Sorted indexes of one process as [first, last] runs where each follows the last by
    ``step``."""
    runs: list[list[int]] = []
    for k in sorted(indexes):
        if runs and k == runs[-1][1] + step:
            runs[-1][1] = k
        else:
            runs.append([k, k])
    return runs


def _log_stretch(log: Path, run: ActiveRun) -> PlatformLogStretch:
    """run.json's ``platform_log``: the log relative to the run directory (so the report finds
    it wherever the two are mounted together), the bytes written since the test started,
    and their ERROR and CRITICAL lines counted now, while the log is at hand."""
    path = os.path.relpath(log.resolve(), run.files.dir.resolve())
    end = max(log_size(log), run.platform_log_from)
    counted = read_stretch(log, run.platform_log_from, end, path)
    stretch = PlatformLogStretch(path, run.platform_log_from, end)
    if counted.missing is not None:
        return stretch
    count = LogCount(
        counted.bytes_read,
        dict(counted.by_level),
        counted.most_frequent,
        counted.most_frequent_count,
        None,
    )
    return msgspec.structs.replace(stretch, counted=count)
