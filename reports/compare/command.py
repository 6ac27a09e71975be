"""``loadkit compare BASE RUN`` (and ``python -m reports compare``): the documents, the console's
lines and the exit code."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from pathlib import Path

from engine import nofollow
from reports import formatting as fmt
from reports import render
from reports.compare.changes import (
    DEFAULT_MIN_SAMPLES,
    DEFAULT_P95_FLOOR_MS,
    DEFAULT_RULES,
    DEFAULT_TOLERANCE,
    Rules,
)
from reports.compare.comparison import NO_ANSWER, CompareRefused, Comparison, compare
from reports.compare.differences import Pairing
from reports.compare.document import beyond_noise, comparison_document
from reports.rundir import RunDirError, load_run

DESCRIPTION = (
    "Write compare-<BASE run id>.md and .html into RUN: what differs about the two runs "
    "(platform, plan: mode, scale, phases and rates; topology without ephemeral ports, "
    "machine, load processes), then per phase and workload the change in p95 from due "
    "(each failure at its timeout), error rate and throughput, CPU and memory, and the "
    "changes beyond noise. A change counts with enough samples on both sides, a rise "
    "above an absolute floor and a relative tolerance, and a 99% bootstrap interval "
    "excluding zero and what the kit's own lateness explains; a latency rise in a phase "
    "where RUN's API process waited for a CPU so long that this alone stretches its work "
    "by the tolerance (16.7% of its ready time at 0.2, or that much more than in BASE) "
    "is left untold: the machine's or the release's. Exit 0 (no "
    "regression) or 1 (a regression) only for two valid runs of one plan on one "
    "platform. Exit 2 otherwise: a rise left untold by a busy machine; either run "
    "invalid or unreadable; runs of different plans (refused unless --force, and then "
    "nothing is judged); runs of two platforms, shown side by side with their "
    "differences beyond noise, which are not a regression gate."
)


def _at_least(least: int, cast: type, example: str) -> Callable[[str], float]:
    """An argparse type: a number (``cast``) no smaller than ``least``, refused in words."""
    kind = "a whole number" if cast is int else "a number"

    def parse(text: str) -> float:
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {kind}; give e.g. {example}"
            ) from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{text} is below {least}; give e.g. {example}")
        return value

    return parse


_fraction = _at_least(0, float, "0.2 for 20%")
_count = _at_least(1, int, "30")


def add_arguments(comp: argparse.ArgumentParser) -> None:
    """What ``compare`` takes: two run directories and the rules a change must pass."""
    comp.add_argument("base", metavar="BASE", help="the earlier run directory")
    comp.add_argument("run", metavar="RUN", help="the run directory to judge against BASE")
    comp.add_argument(
        "--force",
        action="store_true",
        help="show runs of different plans side by side (nothing is judged; exit 2)",
    )
    comp.add_argument(
        "--p95-tolerance",
        type=_fraction,
        default=DEFAULT_TOLERANCE,
        help="p95 rise that is a regression, as a fraction (default %(default)s)",
    )
    comp.add_argument(
        "--rss-tolerance",
        type=_fraction,
        default=DEFAULT_TOLERANCE,
        help="peak API RSS rise that is a regression, as a fraction (default %(default)s)",
    )
    comp.add_argument(
        "--min-samples",
        type=_count,
        default=DEFAULT_MIN_SAMPLES,
        help="samples each side needs before a p95 or error rate is compared (default %(default)s)",
    )
    comp.add_argument(
        "--p95-floor-ms",
        type=_at_least(0, float, "25"),
        default=DEFAULT_P95_FLOOR_MS,
        help="smallest p95 rise in ms that can be a regression (default %(default)s)",
    )


def rules_of(args: argparse.Namespace) -> Rules:
    """The rules the command line gave."""
    return Rules(args.p95_tolerance, args.rss_tolerance, args.min_samples, args.p95_floor_ms)


def compare_runs(
    base: str | Path, run: str | Path, rules: Rules = DEFAULT_RULES, force: bool = False
) -> int:
    """Write compare-<BASE id>.md/.html into RUN, say what it found, and return the exit code:
    0 or 1 (a regression) for a gate, 2 for anything else (comparison.py)."""
    with contextlib.ExitStack() as opened:
        try:
            base_run = opened.enter_context(load_run(base))
            run_run = opened.enter_context(load_run(run))
            comparison = compare(base_run, run_run, rules, force)
        except (RunDirError, CompareRefused) as exc:
            print(f"reports: {exc}", file=sys.stderr)
            return NO_ANSWER
        document = comparison_document(comparison)
    stem = comparison.run.run.path / f"compare-{comparison.base.run.run_id}"
    markdown, html = Path(f"{stem}.md"), Path(f"{stem}.html")
    nofollow.replace(markdown, render.markdown(document))
    nofollow.replace(html, render.html(document))
    print(f"{headline(comparison)}: {markdown}, {html.name}")
    for line in comparison.differences.plan:
        print(f"  plan: {line}")
    for line in comparison.environment:
        print(f"  environment: {line}")
    gate = comparison.pairing is Pairing.GATE
    for r in comparison.rises:
        print(f"  {'' if gate else 'higher: '}{r.where}, {r.workload}: {r.what}")
    for r in comparison.falls:
        print(f"  {'improved' if gate else 'lower'}: {r.where}, {r.workload}: {r.what}")
    for r in comparison.untold:
        print(f"  untold: {r.where}, {r.workload}: {r.what}")
    if comparison.unproven:
        many = fmt.plural(len(comparison.unproven), "change")
        print(f"  {many} past the floors without evidence (see report)")
    return comparison.exit_code


def headline(c: Comparison) -> str:
    """The console's first line: what the pair is, what it found, and the exit code."""
    code = f"exit {c.exit_code}"
    if c.pairing is Pairing.PLANS:
        return f"different plans, nothing judged ({code})"
    found = beyond_noise(c)
    if c.pairing is Pairing.PLATFORMS:
        return f"two platforms ({c.differences.platform}), not a regression gate: {found} ({code})"
    regressions = fmt.plural(len(c.regressions), "regression")
    untold = f", {fmt.plural(len(c.untold), 'rise')} the machine leaves untold" if c.untold else ""
    return f"{regressions} ({code}), {fmt.plural(len(c.improvements), 'improvement')}{untold}"


def main(argv: list[str], prog: str) -> int:
    """``compare`` alone under another name (``loadkit compare``)."""
    comp = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    add_arguments(comp)
    args = comp.parse_args(argv)
    return compare_runs(args.base, args.run, rules_of(args), args.force)
