"""bench/agent_servers.py's comparison rebuilt from the committed benches: each target's
sweep.json read through its type, the probes read as the reports read a run (CSV in the
2026-12-02 bench, a dataset since), to the comparison.md that was published."""

from __future__ import annotations

import pytest

from bench.agent_servers import TARGETS, comparison
from stack.processes import ROOT

BENCHES = {
    "2026-12-02-agent-servers": [t.name for t in TARGETS],
    "2026-12-07-agent-servers-opencode": ["opencode"],
}


@pytest.mark.parametrize("bench", list(BENCHES))
def test_a_committed_bench_rebuilds_to_its_comparison(bench):
    out = ROOT / "results" / bench
    assert comparison(out, BENCHES[bench]) == (out / "comparison.md").read_text()
