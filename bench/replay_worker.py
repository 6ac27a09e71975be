"""A worker for bench/master_rate.py: the kit's load process, its requests replaced by a recording.

The master cannot be measured at full rate on a machine whose platform serves a
few hundred requests a second, and real load processes would spend the cores the
master needs. So each of these workers runs the kit's own load process (the
master's handshake, sign-in, plan, batches with ``offered``, drain) with one
part swapped: instead of the dispatcher, ``Replay`` walks the process's share of
the plan and, at each arrival's due time, records a sample taken from a real run's
samples.csv (the next recorded one of the workload the mix gives that arrival),
its durations kept and shifted to end now. What the master receives is what real
load processes send at that rate; the workers' cost is building the samples.

Locust's own statistics are fed one sample in ``LOCUST_EVERY`` (the real process
feeds every one): the master merges each worker's per-name entries once per
report, whatever they count, and feeding all of them would cost the workers more
than the master's whole intake.

    locust -f bench/replay_worker.py --worker ...   (started by bench/master_rate.py)

The recording is the file named by ``LOADKIT_REPLAY`` (samples.csv's columns).
"""

from __future__ import annotations

import csv
import itertools
import os
from collections import Counter
from collections.abc import Iterator

import gevent

import runner.hooks
import runner.load_process
from bench.master_rate import RECORDING_ENV
from engine.samples import Sample
from engine.schedule import Plan, Segment, SlotCursor
from engine.share import Share
from locustfile import *  # noqa: F403  (the user classes and shapes the master has)
from runner.load_process import LoadProcess

# How often the replay records what fell due since its last look.
TICK_S = 0.02
# One sample in this many also goes to Locust's statistics (see the module doc).
LOCUST_EVERY = 64


def _recorded(path: str) -> dict[str, list[tuple]]:
    """Each workload's recorded samples as (due, sent, finished offsets from finished; ttft,
    tokens, status, outcome, detail, bytes), in the file's order."""
    by_workload: dict[str, list[tuple]] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            finished = float(row["finished_s"])
            sent = float(row["sent_s"]) - finished if row["sent_s"] else None
            by_workload.setdefault(row["workload"], []).append(
                (
                    float(row["due_s"]) - finished,
                    sent,
                    float(row["ttft_ms"]) if row["ttft_ms"] else None,
                    int(row["tokens"]),
                    int(row["status"]),
                    row["outcome"],
                    row["detail"],
                    int(row["bytes"]),
                )
            )
    return by_workload


def _segment_of(plan: Plan, k: int) -> tuple[int, Segment]:
    """The segment (its number, itself) that global arrival ``k`` belongs to."""
    segments = plan.segments
    number = len(segments) - 1
    while segments[number].first_index > k:
        number -= 1
    return number, segments[number]


class Replay:
    """Stands where the dispatcher stands (runner/users.py's driver interface): offers the
    process's share of the plan on time, each arrival's sample a recorded one ending now."""

    def __init__(self, share: Share):
        self.clock = share.clock
        self.offered: Counter[tuple[int, str]] = Counter()
        self.in_flight = 0
        self._plan = share.plan
        self._mix = share.mix
        self._on_sample = share.on_sample
        self._cursor = SlotCursor(share.slot, share.workers)
        recording = _recorded(os.environ[RECORDING_ENV])
        # Each process starts at its own place in the recording, so they do not send alike.
        self._next: dict[str, Iterator[tuple]] = {
            name: itertools.islice(itertools.cycle(rows), share.slot * 7, None)
            for name, rows in recording.items()
        }
        self._loop: gevent.Greenlet | None = None

    def start(self) -> None:
        self._loop = gevent.spawn(self._offer)

    def update_plan(self, plan: Plan) -> None:
        self._plan = plan

    def _offer(self) -> None:
        """Each tick, every arrival of this slot due since the last one: a Sample, the
        recording's next of its workload."""
        slot, workers = self._cursor.slot, self._cursor.workers
        mix, offered, on_sample, recorded = self._mix, self.offered, self._on_sample, self._next
        done = 0
        while True:
            now, plan = self.clock.now(), self._plan
            due = plan.due_before(now)
            # This slot's global indexes k = slot (mod workers) with done <= k < due.
            for k in range(done + (slot - done) % workers, due, workers):
                number, segment = _segment_of(plan, k)
                workload = mix.pick_in(segment, k)
                offered[number, workload] += 1
                before_due, before_sent, ttft, tokens, status, outcome, detail, size = next(
                    recorded[workload]
                )
                sent = None if before_sent is None else now + before_sent
                on_sample(
                    Sample(
                        k,
                        workload,
                        number,
                        now + before_due,
                        sent,
                        now,
                        ttft,
                        tokens,
                        status,
                        outcome,
                        detail,
                        size,
                    )
                )
            done = max(done, due)
            if plan.closed and done >= plan.total():
                return
            gevent.sleep(TICK_S)

    def drain(self, deadline_s: float) -> None:
        assert self._loop is not None
        self._loop.join(timeout=max(0.0, deadline_s - self.clock.now()))
        self.close(until_s=None)

    def close(self, until_s: float | None) -> None:
        if self._loop is not None:
            self._loop.kill(block=True)


class ReplayProcess(LoadProcess):
    """The kit's load process, counting one sample in LOCUST_EVERY into Locust's statistics."""

    def _tell_locust(self, samples: list[Sample], start_epoch: float) -> None:
        super()._tell_locust(samples[::LOCUST_EVERY], start_epoch)


runner.load_process.driver_class = lambda mode: Replay
runner.hooks.LoadProcess = ReplayProcess  # type: ignore[misc]
