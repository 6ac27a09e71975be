"""The kit's transport as a test builds it: bounded as a run on the scenario's defaults is."""

from __future__ import annotations

from typing import Any

from engine.http import HttpTransport
from inputs.scenario import scenario_from_dict

# The smallest scenario there is: every default the scenario states, the body bound among them.
DEFAULTS = scenario_from_dict(
    {
        "name": "defaults",
        "workloads": {"api_read": 1},
        "phases": [{"name": "p", "duration_s": 1, "rate": 1}],
    }
)
# The body bound a run reads to when scenario.yaml sets none (bytes).
MAX_BODY = DEFAULTS.max_body_bytes


def transport(url: str, **options: Any) -> HttpTransport:
    """A transport to ``url`` with the scenario's default body bound (``options``: the
    transport's own, such as ``idle_s``)."""
    return HttpTransport(url, max_body=MAX_BODY, **options)
