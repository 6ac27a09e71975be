"""The generator watching itself: CPU, event-loop lag, arrivals in flight, and its connections.

A saturated driver looks exactly like a saturated server unless the driver is
measured too. Each load-generating process samples itself on the run's clock and
ships the readings with its samples; the master writes them to ``probes.csv`` as
probe ``generator.<worker>``, where the report can call the run invalid. The
connection counts (open now; opened, replaced before a write because the server
had closed them, retired idle, all since the run began) make reconnects visible
without touching a sample: a stale keep-alive socket replaced before anything was
written is not the platform's failure, but it is not hidden either.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import gevent
import psutil

from engine.clock import RunClock
from engine.http import TransportStats
from probes import Reading

# How often the loop is asked to wake; a wake-up later than this is lag.
LAG_TICK_S = 0.05
# Readings per interval, like the master's probes, so both lines share a time axis.
INTERVAL_S = 2.0


class SelfProbe:
    """Readings of this process every INTERVAL_S while started."""

    def __init__(
        self,
        worker: int,
        clock: RunClock,
        in_flight: Callable[[], int],
        connections: TransportStats | None = None,
    ):
        self.probe = f"generator.{worker}"
        self._clock = clock
        self._in_flight = in_flight
        self._connections = connections
        self._readings: list[Reading] = []
        self._greenlet: gevent.Greenlet | None = None

    def start(self) -> None:
        """Begin watching, on a greenlet of its own."""
        self._greenlet = gevent.spawn(self._watch)

    def stop(self) -> None:
        """Stop watching; readings already taken stay until taken."""
        if self._greenlet is not None:
            self._greenlet.kill(block=True)

    def has_readings(self) -> bool:
        """Whether a reading is waiting to be taken."""
        return bool(self._readings)

    def take(self) -> list[Reading]:
        """Readings since the last take."""
        readings, self._readings = self._readings, []
        return readings

    def _watch(self) -> None:
        process = psutil.Process()
        cpu_before, wall_before = sum(process.cpu_times()[:2]), time.monotonic()
        worst_lag = 0.0
        while True:
            asked = time.monotonic()
            gevent.sleep(LAG_TICK_S)
            woke = time.monotonic()
            worst_lag = max(worst_lag, woke - asked - LAG_TICK_S)
            if woke - wall_before < INTERVAL_S:
                continue
            cpu = sum(process.cpu_times()[:2])
            t_s = round(self._clock.now(), 3)
            cpu_percent = round(100 * (cpu - cpu_before) / (woke - wall_before), 1)
            self._readings += [
                Reading(t_s, self.probe, "cpu_percent", cpu_percent),
                Reading(t_s, self.probe, "loop_lag_ms", round(worst_lag * 1000, 3)),
                Reading(t_s, self.probe, "in_flight", float(self._in_flight())),
            ]
            if (c := self._connections) is not None:
                self._readings += [
                    Reading(t_s, self.probe, "connections_open", float(c.open_now)),
                    Reading(t_s, self.probe, "connections_opened", float(c.opened)),
                    Reading(t_s, self.probe, "reconnects", float(c.reconnects)),
                    Reading(t_s, self.probe, "connections_retired_idle", float(c.retired_idle)),
                ]
            if c is not None and c.tls_handshakes + c.tls_resumed:
                # Over TLS only: how many connections paid a full handshake.
                self._readings += [
                    Reading(t_s, self.probe, "tls_handshakes", float(c.tls_handshakes)),
                    Reading(t_s, self.probe, "tls_resumed", float(c.tls_resumed)),
                ]
            cpu_before, wall_before, worst_lag = cpu, woke, 0.0
