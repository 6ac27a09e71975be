"""How long is too long: each workload's timeout, and the lateness an arrival is allowed.

A sample that takes longer than its workload's timeout says ``timeout``; an arrival sent
later than ``late_after_ms`` after it was due is late, and a run with more late arrivals
than ``max_late_fraction`` measured the generator, not the platform.
"""

from __future__ import annotations

from msgspec import Struct

from inputs.bad_input import Problems
from inputs.numbers import fraction, known_entries, positive

# The longest timeout: an hour; no request of a load test waits longer for its answer.
MAX_TIMEOUT_S = 3_600.0
# Lateness beyond a minute is not lateness any more; a larger tolerance is a unit slip.
MAX_LATE_MS = 60_000.0


class Timeouts(Struct, frozen=True, omit_defaults=True):
    default_s: float = 60.0
    chat_stream_s: float = 90.0
    agent_run_s: float = 90.0

    def for_workload(self, workload: str) -> float:
        """Seconds the workload may take before its sample says ``timeout``."""
        return {"chat_stream": self.chat_stream_s, "agent_run": self.agent_run_s}.get(
            workload, self.default_s
        )

    @property
    def slowest_s(self) -> float:
        return max(self.default_s, self.chat_stream_s, self.agent_run_s)

    @classmethod
    def read(cls, raw: object, problems: Problems) -> Timeouts:
        """``timeouts``: each given one above 0 and at most MAX_TIMEOUT_S."""
        if not isinstance(raw, dict):
            problems.add("timeouts: expected a mapping {default_s, chat_stream_s, agent_run_s}")
            return cls()
        given = known_entries(
            raw,
            "timeouts",
            dict.fromkeys(cls.__struct_fields__),
            problems,
            lambda value, where: positive(value, where, problems, most=MAX_TIMEOUT_S),
        )
        return cls(**given)


class Lateness(Struct, frozen=True, omit_defaults=True):
    late_after_ms: float = 100.0
    max_late_fraction: float = 0.01

    @classmethod
    def read(cls, raw: object, problems: Problems) -> Lateness:
        """``lateness``: a tolerance above 0 and at most MAX_LATE_MS, and a fraction."""
        if not isinstance(raw, dict):
            problems.add("lateness: expected a mapping {late_after_ms, max_late_fraction}")
            return cls()
        defaults = cls()
        late_after = positive(
            raw.get("late_after_ms", defaults.late_after_ms),
            "lateness.late_after_ms",
            problems,
            most=MAX_LATE_MS,
        )
        late_fraction = fraction(
            raw.get("max_late_fraction", defaults.max_late_fraction),
            "lateness.max_late_fraction",
            problems,
        )
        return cls(late_after or defaults.late_after_ms, late_fraction)
