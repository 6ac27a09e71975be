"""One load-generating process (a Locust worker, or the whole of a local run).

It does what the master's messages say: sign in and size its pool (Prepare),
offer its share of the schedule from the common start time (PlanUpdate), drain
when the plan ends or stop at once when told (Stop), and hand its samples over in
batches, the last one in Drained. Each batch's samples are also counted into
Locust's own statistics, once each (runner/locust_stats.py), so the web UI charts
every workload live and Locust's request count is the offered count: abandoned
arrivals count (as failures), and a chat turn's first token is not a second request
(it is in the kit's samples, report and "Verdict so far" tab).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import gevent
import gevent.event
from locust.stats import RequestStats

from engine.agent_plan import AgentPlan
from engine.clock import RunClock
from engine.http import HttpTransport
from engine.mix import Mix
from engine.run_record import ProcessStart
from engine.samples import Sample
from engine.schedule import Plan
from engine.seam import Deployment, Dialect, DialectError
from engine.serve import CHAT
from engine.share import Share
from engine.sign_in import secret_for
from inputs.fixture import FixtureError
from inputs.scenario import Scenario
from runner.locust_stats import log_samples
from runner.messages import (
    Batch,
    Drained,
    Header,
    Offered,
    Ping,
    PlanUpdate,
    Pong,
    Prepare,
    Ready,
    Stop,
    ToMaster,
)
from runner.self_probe import SelfProbe
from runner.users import Driver, driver_class
from runner.warm_up import settle_memory
from workloads.platforms import PlatformError, platform_of
from workloads.reach import signed_in

log = logging.getLogger(__name__)

# Waking for t = 0 later than this is being behind at the start: the log and run.json say so.
BEHIND_AFTER_MS = 10.0


class _Run:
    """The state of one run inside this process."""

    def __init__(
        self,
        prepare: Prepare,
        scenario: Scenario,
        slot: int,
        dialect: Dialect,
        http: HttpTransport,
    ):
        self.prepare = prepare
        self.slot = slot
        self.dialect = dialect
        self.http = http
        self.scenario = scenario
        self.plan: Plan | None = None
        self.plan_closed = gevent.event.Event()
        # When the plan ends, once it has an end (plan_closed is set then).
        self.end_s = 0.0
        self.dispatcher: Driver | None = None
        self.probe: SelfProbe | None = None
        self.lifecycle: gevent.Greenlet | None = None
        self.samples: list[Sample] = []
        self.start = ProcessStart()


class LoadProcess:
    """Answers the master's messages for this process; ``send`` reaches the master."""

    def __init__(self, client_id: str, send: Callable[[ToMaster], None], stats: RequestStats):
        self._client_id = client_id
        self._send = send
        self._stats = stats
        self._run: _Run | None = None
        # The import graph is settled now, when this process starts, so that Prepare's
        # settle scans only what came after it (runner/warm_up.py).
        settle_memory()

    def on_prepare(self, prepare: Prepare) -> None:
        """Sign in and build the dispatcher's tools, then tell the master whether it worked."""
        slot = prepare.slots.get(self._client_id)
        if slot is None:
            return
        self.stop("superseded by a new run")
        scenario, fixture = prepare.scenario, prepare.fixture
        http = HttpTransport(
            prepare.host,
            max_body=scenario.max_body_bytes,
            accept_encoding=prepare.accept_encoding,
            trust=prepare.tls,
        )
        error = ""
        began = time.monotonic()
        try:
            # The platform's part of the fixture is read here: a missing field stops the run.
            spoken = platform_of(fixture)
            seeded = spoken.seeded_from(fixture)
            deployment = Deployment(fixture, seeded, prepare.host, prepare.run_id)
            dialect = spoken.dialect(deployment, http)
            dialect.agent_plan = AgentPlan(prepare.run_id, scenario, spoken.tool)
            secret = secret_for(spoken.credential(seeded))
            signed_in(spoken, dialect, prepare.email, secret, "check --host")
        except (DialectError, FixtureError, PlatformError) as exc:
            error = str(exc)
            http.close()
        else:
            self._run = _Run(prepare, scenario, slot, dialect, http)
            self._run.start.sign_in_ms = _ms_since(began)
            self._warm_up(self._run)
        self._send(Ready(prepare.run_id, slot, error))

    def refuse(self, header: Header, line: str) -> None:
        """A Prepare this process will not act on (another version's, or malformed): the master
        is told why in ``line``, which it prints and refuses the run with."""
        slot = header.slots.get(self._client_id)
        if slot is not None:
            self._send(Ready(header.run_id, slot, line))

    def _warm_up(self, run: _Run) -> None:
        """Open what the first second needs and settle memory, before saying ready."""
        wanted = run.prepare.warm[run.slot] if run.slot < len(run.prepare.warm) else 0
        began = time.monotonic()
        opened = run.http.prepare(wanted)
        run.start.connect_ms = _ms_since(began)
        settled = time.monotonic()
        settle_memory()
        run.start.settle_ms = _ms_since(settled)
        run.start.connections_opened = opened
        run.start.warm_up_ms = _ms_since(began)

    def on_ping(self, ping: Ping) -> None:
        """Answer the master's ping at once (it times the round trip to pick the start)."""
        run = self._run
        if run is not None and ping.run_id == run.prepare.run_id:
            self._send(Pong(ping.run_id, ping.seq, run.slot))

    def on_plan(self, update: PlanUpdate) -> None:
        """Start offering at the common start time, or follow a changed rate."""
        run = self._run
        if run is None or update.run_id != run.prepare.run_id:
            return
        plan = update.plan
        run.plan = plan
        # This process's part of the plan's highest rate, for what a dialect makes ahead.
        peak = max((segment.rate for segment in plan.segments), default=0.0)
        mix = Mix.from_scenario(run.scenario)
        run.dialect.ready(mix.rates(peak / len(run.prepare.slots)))
        if run.dispatcher is None:
            clock = RunClock(update.start_epoch)
            run.dialect.agent_plan = run.dialect.agent_plan.started(update.start_epoch)
            run.start.plan_ahead_ms = round(-clock.now() * 1000, 1)
            share = Share(
                slot=run.slot,
                workers=len(run.prepare.slots),
                plan=plan,
                mix=mix,
                timeouts=run.scenario.timeouts,
                dialect=run.dialect,
                http=run.http,
                clock=clock,
                connections=run.prepare.connections[run.slot],
                on_sample=lambda sample: self._on_sample(run, sample),
                conversations=run.scenario.agent(CHAT).conversations,
            )
            run.dispatcher = dispatcher = driver_class(run.prepare.mode)(share)
            run.probe = SelfProbe(run.slot, clock, lambda: dispatcher.in_flight, run.http.stats)
            run.probe.start()
            run.lifecycle = gevent.spawn(self._complete, run, dispatcher)
        else:
            run.dispatcher.update_plan(plan)
        if plan.closed:
            run.end_s = plan.segments[-1].closed_end_s()
            run.plan_closed.set()

    def _complete(self, run: _Run, dispatcher: Driver) -> None:
        """Offer the whole plan once it has an end, drain until the slowest timeout, report."""
        dispatcher.start()
        self._check_start(run, dispatcher.clock)
        run.plan_closed.wait()
        dispatcher.drain(run.end_s + run.scenario.timeouts.slowest_s)
        self._finish(run, "completed")

    def _check_start(self, run: _Run, clock: RunClock) -> None:
        """Wake at t = 0 and say so if this process is behind: the plan came after the start,
        or the wake-up was late (a stalled event loop); either shows as late dispatches."""
        gevent.sleep(max(0.0, -clock.now()))
        behind_ms = round(max(0.0, clock.now()) * 1000, 1)
        run.start.behind_ms = behind_ms
        plan_ahead_ms = run.start.plan_ahead_ms or 0.0
        if behind_ms > BEHIND_AFTER_MS or plan_ahead_ms < 0:
            log.warning(
                "load process %d is behind at the start: woke %.0f ms after t = 0, plan received "
                "%.0f ms before it; its first arrivals will be late",
                run.slot,
                behind_ms,
                plan_ahead_ms,
            )

    def on_stop(self, stop: Stop) -> None:
        """The master interrupted the run: stop it now, if it is this process's."""
        if self._run is not None and stop.run_id == self._run.prepare.run_id:
            self.stop("interrupted")

    def stop(self, reason: str) -> None:
        """Stop now: whatever was due and not finished is recorded as abandoned, then reported."""
        run = self._run
        if run is None:
            return
        if run.lifecycle is not None:
            run.lifecycle.kill(block=True)
        if run.dispatcher is not None:
            run.dispatcher.close(until_s=run.dispatcher.clock.now())
        self._finish(run, reason)

    def _finish(self, run: _Run, reason: str) -> None:
        if self._run is not run:
            return
        self._run = None
        if run.probe is not None:
            run.probe.stop()
        if run.dispatcher is None:
            run.http.close()
        self._send(Drained(self._batch(run), reason, run.start))

    def take_batch(self) -> Batch | None:
        """Samples and readings gathered since the last batch, or None if there are none."""
        run = self._run
        if run is None or not (run.samples or (run.probe and run.probe.has_readings())):
            return None
        return self._batch(run)

    def _batch(self, run: _Run) -> Batch:
        samples, run.samples = run.samples, []
        if samples and run.dispatcher is not None:  # a sample is a driver's, once it runs
            self._tell_locust(samples, run.dispatcher.clock.start_epoch)
        readings = run.probe.take() if run.probe is not None else []
        accepted = run.dialect.take_accepted()
        offered: list[Offered] = []
        if run.dispatcher is not None:
            counts = sorted(run.dispatcher.offered.items())
            offered = [Offered(segment, name, n) for (segment, name), n in counts]
        return Batch(run.prepare.run_id, run.slot, samples, readings, accepted, offered)

    def _tell_locust(self, samples: list[Sample], start_epoch: float) -> None:
        """Count a batch's samples (on the run clock from ``start_epoch``) into Locust's
        statistics."""
        log_samples(self._stats, samples, start_epoch)

    def _on_sample(self, run: _Run, sample: Sample) -> None:
        run.samples.append(sample)


def _ms_since(began: float) -> float:
    """Milliseconds since a monotonic reading, to 0.1 ms as run.json's start states them."""
    return round((time.monotonic() - began) * 1000, 1)
