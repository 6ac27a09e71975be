"""``loadkit sweep RUN`` (and ``python -m reports.sweep RUN``): the sweep report written beside
the run's own, and the exit code."""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import matplotlib

from engine import nofollow
from engine.sweep_steps import is_sweep
from reports import render
from reports.charts import SVG_STYLE, Chart, svg
from reports.rundir import RunDirError, load_run
from reports.sweep.analysis import build
from reports.sweep.charts import chart
from reports.sweep.document import document
from reports.sweep.record import SWEEP_FILE, Sweep, sweep_text


def write(sweep: Sweep, out: Path) -> list[Path]:
    """sweep.md, sweep.html (the chart inline), sweep.json and sweep.png in ``out``, each
    written by rename (engine/nofollow.py: never through a link planted where it goes)."""
    with matplotlib.rc_context(SVG_STYLE):
        fig = chart(sweep)
        drawn = Chart("sweep", "Throughput, latency and memory against load", svg(fig, "sweep"))
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=90, metadata={"Software": None})
    doc = document(sweep, drawn)
    nofollow.replace(out / "sweep.png", png.getvalue())
    nofollow.replace(out / "sweep.md", render.markdown(doc))
    nofollow.replace(out / "sweep.html", render.html(doc))
    nofollow.replace(out / SWEEP_FILE, sweep_text(sweep))
    return [out / n for n in ("sweep.md", "sweep.html", "sweep.json", "sweep.png")]


DESCRIPTION = (
    "Write sweep.md, sweep.html, sweep.json and sweep.png into the run directory of a sweep "
    "(loadkit run --sweep-users or --sweep-rates, docs/capacity.md): each step's throughput "
    "and latency, the knee, the platform's overhead over the model, memory per session. "
    "Exit 0 written; 2 when the run cannot be read or is not a sweep (its phases are not "
    "sweep steps), and then nothing is written."
)


def main(argv: list[str] | None = None, prog: str = "python -m reports.sweep") -> int:
    """Build the sweep report of a sweep's run directory: 0 written; 2, writing nothing, when
    the run cannot be read or is not a sweep (a knee read off ramp, sustain, burst and recover
    would describe the plan, not the platform)."""
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    parser.add_argument("run_dir", help="the run directory of a sweep")
    args = parser.parse_args(argv)
    try:
        run = load_run(args.run_dir)
    except RunDirError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    with run:
        phases = [p.name for p in run.phases]
        if not is_sweep(phases):
            print(
                f"{prog}: {args.run_dir} is not a sweep (its phases are {', '.join(phases)}); "
                "a sweep's steps come from loadkit run --sweep-users or --sweep-rates",
                file=sys.stderr,
            )
            return 2
        sweep = build(run)
    write(sweep, Path(args.run_dir))
    print(f"{sweep.mode}: knee {sweep.knee_text}; {sweep.plateau_text}")
    print(f"memory: {sweep.memory.text}")
    print(f"written: {Path(args.run_dir) / 'sweep.md'} (and .html, .json, .png)")
    return 0
