"""Benchmark: the instructions one list read costs the load process, counted by callgrind.

CPU time per request on a shared virtual machine moves by a quarter from run to run
(docs/internals.md), which hides any change of a few percent. callgrind counts the
instructions a process runs, which neither the machine's speed nor its neighbours move.
Start-up is taken out by difference: the real load-process path (bench/generator.py) for
a short and a long run at one rate, (instructions long - short) / (arrivals long - short),
with Python's hash seed fixed so both runs start alike. The rate is one the process keeps
up with under callgrind (about 50 times slower): a saturated process opens as many
connections and batches its work as the moment allows, and two counts of the same
commit then differed by half (docs/internals.md); a run that slept less than once every
two arrivals was saturated, and is refused.

    python bench/instructions.py [--rate 50] [--seconds 5,25] [--rounds 2] [--vs DIR]

``--vs DIR`` measures another checkout of the kit in turn with this one (a
``git worktree add`` of the commit before a change) and prints the ratio per round:
how a change is weighed here. valgrind comes from Debian's packages (``apt-get install
valgrind``); one round takes a few minutes.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.peer import generator_figures, load_and_server_cores, trivial_server

HERE = Path(__file__).resolve().parent
KIT = HERE.parent
VALGRIND = shutil.which("valgrind")
# callgrind's output file states the whole run's count on this line.
_TOTALS = re.compile(r"^totals:\s+(\d+)", re.MULTILINE)
# A process that kept up sleeps about once an arrival or more at such rates; a saturated
# one hardly at all (bench/sleeps.py counts them).
MIN_SLEEPS = 0.5


def counted(kit: Path, url: str, rate: float, seconds: float, core: int | None) -> tuple[int, int]:
    """Instructions and arrivals of one run of ``kit``'s bench/generator.py under callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        out_file = Path(tmp) / "callgrind.out"
        callgrind = ["env", "PYTHONHASHSEED=0", str(VALGRIND), "--tool=callgrind"]
        under = [*callgrind, f"--callgrind-out-file={out_file}"]
        figures = generator_figures(url, rate, seconds, core, kit, under)
        totals = _TOTALS.search(out_file.read_text()) if out_file.exists() else None
        if totals is None:
            raise RuntimeError(f"{kit}: callgrind wrote no count")
    if figures["failures"]:
        raise RuntimeError(f"{kit}: failed requests: {figures['failed_by']}")
    if figures["sleeps_per_request"] < MIN_SLEEPS:
        raise RuntimeError(
            f"{kit}: {figures['sleeps_per_request']:.2f} sleeps per arrival under callgrind "
            f"at {rate:.0f}/s: the count would be a saturated process's; lower --rate"
        )
    return int(totals[1]), int(figures["arrivals"])


def per_request(kit: Path, url: str, rate: float, lengths: list[float], core: int | None) -> float:
    """Instructions per arrival, start-up taken out by the difference of two lengths."""
    short, long = (counted(kit, url, rate, s, core) for s in lengths)
    return (long[0] - short[0]) / (long[1] - short[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--seconds", default="5,25", help="the short and the long run")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--vs", type=Path, help="another checkout, measured in turn")
    args = parser.parse_args()
    lengths = [float(s) for s in args.seconds.split(",")]
    if len(lengths) != 2 or lengths[0] >= lengths[1]:
        print("--seconds: two lengths, the shorter first (5,25)", file=sys.stderr)
        return 2
    if VALGRIND is None:
        print("valgrind not found: apt-get install valgrind (Debian's package)", file=sys.stderr)
        return 2
    if args.vs is not None and not (args.vs / "bench" / "generator.py").exists():
        print(
            f"--vs: {args.vs} holds no bench/generator.py: name a checkout of the kit",
            file=sys.stderr,
        )
        return 2
    cores = load_and_server_cores()
    with trivial_server(cores[1]) as url:
        print(f"callgrind, {args.rate:.0f}/s for {lengths[0]:g} s and {lengths[1]:g} s a count")
        ratios = []
        for n in range(1, args.rounds + 1):
            this = per_request(KIT, url, args.rate, lengths, cores[0])
            line = f"round {n}: this {this:9,.0f} instructions per request"
            if args.vs is not None:
                other = per_request(args.vs.resolve(), url, args.rate, lengths, cores[0])
                ratios.append(this / other)
                line += f", --vs {other:9,.0f}, this/vs {this / other:.3f}"
            print(line, flush=True)
    if ratios:
        print(
            f"this/vs: min {min(ratios):.3f}, median {statistics.median(ratios):.3f}, "
            f"max {max(ratios):.3f} ({len(ratios)} rounds)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
