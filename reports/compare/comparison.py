"""A comparison of two runs: what differs about them, what changed, and the exit code a CI reads.

Only two valid runs of one plan on one platform answer "did this release make it
worse", so only they exit 0 or 1, and 0 only where no rise was left untold by a machine
too busy to tell it from the release. A pair of platforms is shown side by side with its
differences beyond noise, and exits 2: a 0 would read as "no regression" to a gate
that was pointed at the wrong pair. Runs of different plans are refused unless
forced, and then nothing between them is claimed.
"""

from __future__ import annotations

from dataclasses import dataclass

from reports.compare.changes import (
    DEFAULT_RULES,
    Change,
    Environment,
    Outcome,
    Rules,
    Side,
    changes,
    environment,
)
from reports.compare.differences import Differences, Pairing, differences
from reports.rundir import Run
from reports.stats import run_stats
from reports.system import system_stats
from reports.verdict import judge

# The exit code of a comparison that cannot answer whether RUN regressed.
NO_ANSWER = 2


class CompareRefused(ValueError):
    """The two runs cannot be compared as given; the message says why and what to pass."""


@dataclass(frozen=True)
class Comparison:
    """Two runs, what differs about them, what changed between them, under which rules."""

    base: Side
    run: Side
    differences: Differences
    rules: Rules
    # What the machine explains of a latency change, and the figures that say so in words.
    machine: Environment
    machine_said: tuple[str, ...]
    # Every change past the floors; none between runs of different plans.
    found: tuple[Change, ...]

    @property
    def pairing(self) -> Pairing:
        return self.differences.pairing

    @property
    def environment(self) -> tuple[str, ...]:
        """How the runs' environments differed, each as one sentence; empty when alike."""
        return self.differences.environment + self.machine_said

    def _found(self, outcome: Outcome) -> tuple[Change, ...]:
        return tuple(c for c in self.found if c.outcome is outcome)

    @property
    def rises(self) -> tuple[Change, ...]:
        """RUN's figures that rose beyond noise: regressions when the pair is a gate."""
        return self._found(Outcome.ROSE)

    @property
    def falls(self) -> tuple[Change, ...]:
        """RUN's figures that fell beyond noise: improvements when the pair is a gate."""
        return self._found(Outcome.FELL)

    @property
    def untold(self) -> tuple[Change, ...]:
        """RUN's figures that rose beyond noise where its machine held the platform back too
        much to tell the machine's share from the release's."""
        return self._found(Outcome.BUSY)

    @property
    def unproven(self) -> tuple[Change, ...]:
        """Changes past the floors that lacked samples or evidence: shown, never counted."""
        return self._found(Outcome.UNPROVEN)

    @property
    def regressions(self) -> tuple[Change, ...]:
        return self.rises if self.pairing is Pairing.GATE else ()

    @property
    def improvements(self) -> tuple[Change, ...]:
        return self.falls if self.pairing is Pairing.GATE else ()

    @property
    def invalid(self) -> bool:
        return bool(self.base.verdict.invalid_reasons or self.run.verdict.invalid_reasons)

    @property
    def exit_code(self) -> int:
        """0 or 1 (a regression) for two valid runs of one plan on one platform; 2 for any
        other pair, and for a gate that found no regression but a rise its machine left
        untold (not a pass: the pair must be run again on a quieter machine)."""
        if self.invalid or self.pairing is not Pairing.GATE:
            return NO_ANSWER
        if self.regressions:
            return 1
        return NO_ANSWER if self.untold else 0


def compare(base: Run, run: Run, rules: Rules = DEFAULT_RULES, force: bool = False) -> Comparison:
    """The comparison of ``run`` against ``base``; CompareRefused for different plans unless
    ``force``."""
    found = differences(base, run)
    if found.plan and not force:
        raise CompareRefused(
            f"compare: {base.path} and {run.path} ran different plans "
            f"({'; '.join(found.plan)}), so no change between them is the release's; "
            "pass --force for a side-by-side that claims none"
        )
    old, new = _side(base), _side(run)
    machine, said = environment(old, new, rules.p95_tolerance)
    judged = () if found.plan else changes(old, new, rules, machine)
    return Comparison(old, new, found, rules, machine, said, judged)


def _side(run: Run) -> Side:
    stats = run_stats(run)
    system = system_stats(run)
    return Side(run, stats, system, judge(run, stats, system))
