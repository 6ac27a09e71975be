"""The master's handshake with its load processes before a run: each is given its slot and
signs in and warms up, then the round trip to each is timed, so the start is picked far
enough ahead for the slowest and setup never counts as lateness.
"""

from __future__ import annotations

import time

import gevent.event
from locust.runners import MasterRunner

from engine.run_record import StartRecord
from inputs.bad_input import SettingsError
from runner.messages import Ping, Pong, Prepare, Ready, send

# From choosing the start time to t = 0, at least: every process has the plan and has woken
# for t = 0 before its first due time, on a busy machine. Measured round trips add to it.
START_LEAD_S = 1.0
# Round trips the plan's way may take (one to arrive, spare ones for a loaded link or loop).
START_ROUND_TRIPS = 4
# No start is picked further ahead than this, whatever the round trips said.
MAX_START_LEAD_S = 10.0
# Pings per process before a start is picked; the worst round trip counts.
PINGS = 3
# A ping unanswered this long counts as a round trip of this long.
PING_TIMEOUT_S = 2.0
# Sign-in on every process, on a busy machine.
READY_TIMEOUT_S = 30.0


class Rendezvous:
    """Meets the run's load processes through Locust's runner: prepares them, then times them."""

    def __init__(self, environment) -> None:
        self._environment = environment
        self._preparing: str | None = None
        self._ready: dict[int, Ready] = {}
        self._expected = 0
        self._all_ready = gevent.event.Event()
        self._pongs: dict[int, float] = {}
        self._ping: tuple[str, int] = ("", -1)
        self._all_ponged = gevent.event.Event()

    def slots(self) -> dict[str, int]:
        """Each load process's Locust client id -> its slot, in Locust's worker order (a local
        run is one process, slot 0)."""
        runner = self._environment.runner
        if isinstance(runner, MasterRunner):
            clients = runner.clients.ready + runner.clients.spawning + runner.clients.running
            ordered = sorted(clients, key=lambda c: runner.get_worker_index(c.id))
            return {c.id: slot for slot, c in enumerate(ordered)}
        return {runner.client_id: 0}

    def prepare(self, prepare: Prepare, host: str) -> None:
        """Send every process its part of the run and wait until each has signed in and warmed
        up; SettingsError with the first process's refusal, or with how many never answered."""
        expected = len(prepare.slots)
        self._ready, self._preparing, self._expected = {}, prepare.run_id, expected
        self._all_ready.clear()
        send(self._environment.runner.send_message, prepare)
        self._all_ready.wait(READY_TIMEOUT_S)
        self._preparing = None
        errors = [r.error for r in self._ready.values() if r.error]
        if errors:
            raise SettingsError(errors[0])
        if len(self._ready) < expected:
            raise SettingsError(
                f"{expected - len(self._ready)} load process(es) did not sign in within "
                f"{READY_TIMEOUT_S:.0f} s; check they can reach {host}"
            )

    def on_ready(self, ready: Ready) -> None:
        """A process signed in (or could not); the last one releases ``prepare``."""
        if ready.run_id == self._preparing:
            self._ready[ready.slot] = ready
            if len(self._ready) == self._expected:
                self._all_ready.set()

    def pick_lead(self, run_id: str, workers: int) -> StartRecord:
        """How far ahead to start: START_LEAD_S plus START_ROUND_TRIPS of the worst round trip
        measured to any process (PINGS pings each), so the plan reaches every one in time."""
        worst: dict[int, float] = dict.fromkeys(range(workers), 0.0)
        for seq in range(PINGS):
            self._pongs, self._ping = {}, (run_id, seq)
            self._all_ponged.clear()
            sent = time.monotonic()
            send(self._environment.runner.send_message, Ping(run_id, seq))
            self._all_ponged.wait(PING_TIMEOUT_S)
            for slot in worst:
                worst[slot] = max(worst[slot], self._pongs.get(slot, sent + PING_TIMEOUT_S) - sent)
        self._ping = ("", -1)
        lead = min(MAX_START_LEAD_S, START_LEAD_S + START_ROUND_TRIPS * max(worst.values()))
        round_trips = {str(slot): round(rtt * 1000, 1) for slot, rtt in worst.items()}
        return StartRecord(round(lead, 3), round_trips)

    def on_pong(self, pong: Pong) -> None:
        """A process answered the current ping; the last one releases ``pick_lead``."""
        if (pong.run_id, pong.seq) == self._ping:
            self._pongs.setdefault(pong.slot, time.monotonic())
            if len(self._pongs) == self._expected:
                self._all_ponged.set()
