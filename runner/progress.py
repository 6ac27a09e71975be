"""Where a headless run is, on one line: phase, time, offered against recorded, in flight, late.

An operator watching a run wants to see it fall behind while it happens, not a
table of Locust's every few seconds: Locust's tables are off unless asked for. On
a terminal the line is rewritten in place every tick (and cleared before any log
line, so nothing prints over it); in a log (CI, a pipe) the same text is one log
line per phase change and every ``EVERY_S``, because a carriage return is noise
in a file.
"""

from __future__ import annotations

import logging
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass

from runner.options import LOCUST_TABLES

log = logging.getLogger(__name__)

# How often a log (not a terminal) gets the line, between phase changes.
EVERY_S = 10.0
# Erase the terminal's current line and return to its start.
CLEAR = "\r\x1b[2K"
# The logger Locust prints its request, percentile and error tables through (locust.stats).
LOCUST_TABLES_LOGGER = "locust.stats_logger"
# The logger Locust's runners speak through, and how its lines about ramping users begin.
LOCUST_RUNNERS_LOGGER = "locust.runners"
USER_RAMP = ("Shape test updating to ", "Ramping to ", "All users spawned: ")


def quiet_locust_tables(options) -> None:
    """Locust's request tables (every 2 s headless, and at the end) off unless asked for
    (--locust-tables, or Locust's --print-stats): the kit prints this line while a run
    lasts and its own figures and verdict at the end, from every sample. Locust prints
    them through one logger, and reads only_summary after its init event."""
    if LOCUST_TABLES.value(options) or options.print_stats:
        return
    options.only_summary = True
    logging.getLogger(LOCUST_TABLES_LOGGER).setLevel(logging.WARNING)


def quiet_user_ramp(open_arrival: Callable[[], bool]) -> None:
    """Locust's lines about ramping users ("Ramping to 0 users ...", "All users spawned: ...
    (0 total users)"), printed on every run, left out while ``open_arrival()``: that mode has
    no users, and a refusal's one line sat among them. Users mode keeps them."""

    def keep(record: logging.LogRecord) -> bool:
        return not (open_arrival() and record.getMessage().startswith(USER_RAMP))

    logging.getLogger(LOCUST_RUNNERS_LOGGER).addFilter(keep)


@dataclass(frozen=True)
class Progress:
    """What the line says: the phase and its rate (None in a closed loop, and while the
    run drains after its plan), seconds since start and of how many, arrivals due so far
    (None in a closed loop: nothing is due), samples recorded, and the recorded ones sent
    late."""

    phase: str
    rate: float | None
    now_s: float
    end_s: float | None
    offered: int | None
    recorded: int
    late: int

    def text(self) -> str:
        """'sustain 12/s  t 84/345 s  offered 1,000  recorded 990  in flight 10  late 0 (0.00%)'."""
        clock = f"t {self.now_s:.0f} s"
        if self.end_s is not None:
            # Draining runs past the plan's end: said as such, never "t 35/34 s".
            past = self.now_s > self.end_s
            clock = (
                f"t {self.now_s:.0f} s (the plan ended at {self.end_s:.0f} s)"
                if past
                else f"t {self.now_s:.0f}/{self.end_s:.0f} s"
            )
        if self.offered is None:
            return f"{self.phase} (closed loop)  {clock}  recorded {self.recorded:,}"
        late = f"{self.late / self.recorded:.2%}" if self.recorded else "–"
        # Samples reach the master in batches: in flight counts those on their way too.
        in_flight = max(self.offered - self.recorded, 0)
        rate = f" {self.rate:g}/s" if self.rate is not None else ""
        return (
            f"{self.phase}{rate}  {clock}  offered {self.offered:,}  "
            f"recorded {self.recorded:,}  in flight {in_flight:,}  late {self.late:,} ({late})"
        )


class ProgressLine:
    """Shows ``Progress`` live on a terminal, or as periodic log lines elsewhere."""

    def __init__(self, live: bool):
        self.live = live
        self._shown = False
        self._mark: tuple[str, int] = ("", -1)
        if live:
            for handler in _console_handlers():
                handler.addFilter(self._clear_before_log)

    def show(self, progress: Progress) -> None:
        """Redraw the line (terminal), or log it when the phase changed or EVERY_S passed."""
        if self.live:
            width = shutil.get_terminal_size().columns - 1
            sys.stderr.write(CLEAR + progress.text()[:width])
            sys.stderr.flush()
            self._shown = True
            return
        mark = (progress.phase, int(progress.now_s // EVERY_S))
        if mark == self._mark:
            return
        changed = progress.phase != self._mark[0]
        self._mark = mark
        log.info("%s%s", "phase " if changed else "", progress.text())

    def done(self) -> None:
        """End the live line with a newline (its last state stays on screen); stop clearing."""
        if self._shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._shown = False
        if self.live:
            for handler in _console_handlers():
                handler.removeFilter(self._clear_before_log)
            self.live = False

    def _clear_before_log(self, record: logging.LogRecord) -> bool:
        """A logging filter that lets every record through after erasing the live line, which
        the next tick draws again."""
        if self._shown:
            sys.stderr.write(CLEAR)
            self._shown = False
        return True


def _console_handlers() -> list[logging.Handler]:
    """The handlers that write to the terminal: Locust's console handlers on the root and
    'locust' loggers."""
    handlers = logging.getLogger().handlers + logging.getLogger("locust").handlers
    return [h for h in handlers if isinstance(h, logging.StreamHandler) and h.stream is sys.stderr]
