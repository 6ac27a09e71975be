"""The "Verdict so far" tab: per-workload numbers from our samples, beside the thresholds.

Locust's own tables are rounded buckets over every response, failures included;
an operator exploring a rate needs the report's numbers (nearest-rank over
successes, counts beside them) and which thresholds hold, while it runs. The tab
rides on Locust's extended-tabs hook: its rows travel in ``/stats/requests``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from flask import request

from reports.live import live_verdict
from reports.rundir import RunDirError

TAB_KEY = "verdict"

# Reading samples.csv costs the master CPU; the UI polls every 2 s, so at most
# one fresh computation per this many seconds, whatever the number of viewers.
REFRESH_S = 4.0

COLUMNS = (
    ("workload", "Workload"),
    ("recorded", "Recorded"),
    ("ok", "OK"),
    ("failed", "Failed"),
    ("shed", "Shed (429)"),
    ("error_rate", "Error rate"),
    ("p50_ms", "p50 ms"),
    ("p95_ms", "p95 ms"),
    ("timed", "Timed (n)"),
    ("p95_ttft_ms", "p95 first token ms"),
    ("thresholds", "Thresholds"),
)


def _cell(value: object) -> object:
    """Numbers rounded for reading; absent values shown as a dash, never as 0."""
    if value is None:
        return "–"
    return round(value, 4) if isinstance(value, float) else value


def verdict_rows(run_dir: Path, offered: int) -> list[dict]:
    """The tab's rows: one per workload, then the whole run's offered vs. recorded."""
    verdict = live_verdict(run_dir, offered)
    rows = [{k: _cell(v) for k, v in asdict(row).items()} for row in verdict.rows]
    passed = sum(r.status == "pass" for r in verdict.thresholds)
    rows.append(
        {
            "workload": f"all: offered {verdict.offered}, recorded {verdict.recorded}",
            "thresholds": f"{passed} of {len(verdict.thresholds)} thresholds pass",
        }
    )
    return rows


def add_verdict_tab(web_ui, progress: Callable[[], tuple[Path, int] | None]) -> None:
    """Register the tab; ``progress`` gives the current run directory and offered count."""
    web_ui.template_args["extended_tabs"] = [{"title": "Verdict so far", "key": TAB_KEY}]
    web_ui.template_args["extended_tables"] = [
        {"key": TAB_KEY, "structure": [{"key": k, "title": t} for k, t in COLUMNS]}
    ]
    cache = {"at": 0.0, "rows": []}

    @web_ui.app.after_request
    def add_verdict_rows(response):
        """Append the tab's rows to Locust's periodic stats answer."""
        if request.path != "/stats/requests" or response.status_code != 200:
            return response
        current = progress()
        if current is not None and time.monotonic() - cache["at"] >= REFRESH_S:
            try:
                cache["rows"] = verdict_rows(*current)
            except RunDirError as exc:
                cache["rows"] = [{"workload": f"no verdict yet: {exc}"}]
            cache["at"] = time.monotonic()
        payload = {
            **response.get_json(),
            "extended_stats": [{"key": TAB_KEY, "data": cache["rows"]}],
        }
        response.set_data(json.dumps(payload))
        return response
