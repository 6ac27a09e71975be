"""Benchmark: the master's CPU per sample, and so how many workers one master can take.

A distributed run's master does, per sample, what this measures: receive the
worker's report (msgpack, as Locust's ZeroMQ link delivers it), decode its batch into
typed samples (runner/messages.py), and append it to the run's samples (engine/samples.py's
columns, rounded as the CSV spelled them; an Arrow batch appended to the open part and
flushed; every 250,000 rows a Parquet part written: engine/dataset.py). Locust's own
statistics arrive already aggregated per worker and cost the master little. Dividing one
core by the cost per sample gives the samples a second one master can write; divided by
what one worker offers, the workers it can take. With ``--prometheus`` the master also
counts every sample into its live metrics (runner/live_metrics.py): measured beside the
bare cost, the same batches, so the ratio is what the option costs on this machine.

    python bench/master_cost.py [--samples 300000] [--batch 9000] [--worker-rate 5000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from locust.rpc import Message

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.samples import Sample
from inputs.scenario import load_scenario
from runner.live_metrics import RunMetrics
from runner.messages import REPORT_KEY, Batch, Offered, decode, encode
from runner.run_files import RunFiles

# The bench's one phase: the scenario's sustain (its name is all the samples carry).
PHASES = ["sustain"]


def _batch(size: int, first: int) -> bytes:
    samples = [
        Sample(
            first + i,
            "api_read",
            0,
            i * 0.001,
            i * 0.001 + 0.0004,
            i * 0.001 + 0.002,
            None,
            0,
            200,
            "ok",
            "",
            25,
        )
        for i in range(size)
    ]
    return encode(Batch("bench", 0, samples, offered=[Offered(0, "api_read", first + size)]))


def _cpu_per_sample_us(wires: list[bytes], total: int, metrics: RunMetrics | None) -> float:
    """Master CPU per sample, in us, taking every batch in as the conductor does."""
    with tempfile.TemporaryDirectory() as tmp:
        files = RunFiles(Path(tmp), "bench")
        if metrics is not None:
            metrics.begin("bench", load_scenario(), PHASES)
        start = time.process_time()
        for wire in wires:
            batch = decode(Batch, Message.unserialize(wire).data[REPORT_KEY])
            files.append_samples(batch.slot, batch.samples, PHASES)
            if metrics is not None:
                metrics.take("bench", batch.slot, batch.samples, PHASES, batch.offered)
        used = time.process_time() - start
        files.close()
    return used / total * 1e6


def main() -> int:
    """Feed batches through serialise -> unpack -> the samples (-> live metrics); CPU per
    sample without and with --prometheus."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300_000)
    parser.add_argument("--batch", type=int, default=9000, help="samples per worker report")
    parser.add_argument("--worker-rate", type=float, default=5000.0, help="samples/s per worker")
    args = parser.parse_args()
    wires = [
        Message("stats", {REPORT_KEY: _batch(args.batch, k)}, "w").serialize()
        for k in range(0, args.samples, args.batch)
    ]
    total = len(wires) * args.batch
    bare_us = _cpu_per_sample_us(wires, total, None)
    live_us = _cpu_per_sample_us(wires, total, RunMetrics())
    for name, per_sample_us in (("samples", bare_us), ("with --prometheus", live_us)):
        per_second = 1e6 / per_sample_us
        print(
            f"{name}: {total} samples in batches of {args.batch}: {per_sample_us:.1f} us master "
            f"CPU each; one master core takes about {per_second:.0f} samples/s: "
            f"{per_second / args.worker_rate:.1f} workers at {args.worker_rate:.0f}/s each"
        )
    print(f"--prometheus costs the master {live_us / bare_us:.2f}x the CPU per sample")
    return 0


if __name__ == "__main__":
    sys.exit(main())
