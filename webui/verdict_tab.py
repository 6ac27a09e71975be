"""The "Verdict so far" tab: per-workload numbers from our samples, beside the thresholds.

Locust's own tables are rounded buckets over every response, failures included;
an operator exploring a rate needs the report's numbers (nearest-rank over
successes, counts beside them) and which thresholds hold, while it runs, and
whether the run is still valid. After Stop it shows the report's verdict for the
run that just ended and judges no threshold, as the report judges none. Numbers
carry their units and the report's rounding. The tab rides on Locust's extended-tabs
hook: its rows travel in ``/stats/requests``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import gevent
from flask import request

from reports import formatting as fmt
from reports.live import LiveVerdict, live_verdict
from reports.rundir import RunDirError
from reports.summary import SUMMARY_FILE
from reports.thresholds import INCONCLUSIVE, PASS

TAB_KEY = "verdict"

# Locust's runner states (locust.runners.STATE_*), spelled here so that importing
# this module (the tab's tests do) does not import locust, which monkey-patches.
STATE_STOPPED = "stopped"
# Runner states in which the run is ending or has ended: Locust's page polls no more.
ENDING = ("stopping", "cleanup", STATE_STOPPED)
# The longest the last poll waits for the report: the drain waits up to the slowest
# timeout (90 s by default), then the report takes seconds.
FINAL_WAIT_S = 150.0
# How often that wait looks for the report.
FINAL_POLL_S = 0.25

# The thresholds column of a run the operator stopped.
NOT_JUDGED = "not judged (stopped by the operator)"

# Reading the samples costs the master CPU; the UI polls every 2 s, so at most
# one fresh computation per this many seconds, whatever the number of viewers.
REFRESH_S = 4.0

COLUMNS = (
    ("workload", "Workload"),
    ("recorded", "Recorded"),
    ("ok", "OK"),
    ("failed", "Failed"),
    ("shed", "Shed (429)"),
    ("error_rate", "Error rate"),
    ("p50_ms", "p50"),
    ("p95_ms", "p95"),
    ("timed", "Timed (n)"),
    ("p95_ttft_ms", "p95 first token"),
    ("thresholds", "Thresholds (whole run so far)"),
)


def _ms(value: float | None) -> str:
    return fmt.ABSENT if value is None else f"{fmt.ms(value)} ms"


def _validity(verdict: LiveVerdict) -> str:
    """How the run stands on lateness; once it has ended the verdict line above has the last
    word, so this row only counts (never "valid so far" under "final: INVALID")."""
    v = verdict.validity
    ended = verdict.final is not None
    if v.closed_loop:
        word = "recorded" if ended else "valid so far"
        return (
            f"{word}: {fmt.count(v.recorded)} requests recorded; closed loop (users "
            "mode), so nothing is scheduled and lateness does not apply"
        )
    word = "valid so far" if v.valid else "INVALID: the driver fell behind"
    if ended:
        word = "lateness"
    return (
        f"{word}: {fmt.count(v.late)} of {fmt.count(v.recorded)} dispatches late "
        f"(> {v.late_after_ms:g} ms): {fmt.rate(v.fraction)}, tolerance {fmt.rate(v.tolerance)}"
    )


def verdict_rows(run_dir: Path, offered: int | None) -> list[dict]:
    """The tab's rows: the verdict line, validity, one row per workload, offered vs. recorded.

    ``offered`` None means the run has ended: the first row is then the report's
    verdict (or "interrupted: invalid"), never the so-far count of thresholds.
    """
    verdict = live_verdict(run_dir, offered)
    passed = sum(r.status == PASS for r in verdict.thresholds)
    few = sum(r.status == INCONCLUSIVE for r in verdict.thresholds)
    too_few = f", {few} on too few samples yet" if few else ""
    if verdict.stopped:
        head = (
            f"final: {verdict.final or 'the run ended; its report is being written'}; "
            "nothing is judged: the operator stopped the run, so what it cut off says nothing "
            "of the platform"
        )
    elif offered is None:
        head = f"final: {verdict.final or 'the run ended; its report is being written'}"
    elif not verdict.validity.valid:
        head = (
            f"so far: INVALID, {passed} of {len(verdict.thresholds)} thresholds would pass{too_few}"
        )
    else:
        head = f"so far: {passed} of {len(verdict.thresholds)} thresholds pass{too_few}"
    rows = [{"workload": head}, {"workload": _validity(verdict)}]
    for row in verdict.rows:
        rows.append(
            {
                "workload": row.workload,
                "recorded": fmt.count(row.recorded),
                "ok": fmt.count(row.ok),
                "failed": fmt.count(row.failed),
                "shed": fmt.count(row.shed),
                "error_rate": fmt.known_rate(row.error_rate, row.unverified),
                "p50_ms": _ms(row.p50_ms),
                "p95_ms": _ms(row.p95_ms),
                "timed": fmt.count(row.timed),
                "p95_ttft_ms": _ms(row.p95_ttft_ms),
                "thresholds": NOT_JUDGED
                if verdict.stopped
                else "; ".join(
                    f"{fmt.metric_name(t.metric)} ≤ {fmt.metric(t.metric, t.limit)}: {t.status}"
                    for t in row.thresholds
                )
                or fmt.ABSENT,
            }
        )
    counted = f"all: offered {fmt.count(verdict.offered)}, recorded {fmt.count(verdict.recorded)}"
    if offered is not None and not verdict.validity.closed_loop:
        in_flight = max(verdict.offered - verdict.recorded, 0)
        counted += (
            f", in flight {fmt.count(in_flight)}. Locust's charts: RPS is the completed rate "
            "(one request per arrival), and Users shows the offered arrivals per second "
            "(open arrival has no users)"
        )
    rows.append({"workload": counted})
    return rows


def _await_report(run_dir: Path, state: Callable[[], str]) -> None:
    """Hold the poll that saw the run stop until the run's report exists (or FINAL_WAIT_S).

    Locust's page stops polling once the run is no longer running, so the answer
    to this poll is the last the tab gets: it must carry the report's verdict.
    """
    deadline = time.monotonic() + FINAL_WAIT_S
    while time.monotonic() < deadline:
        if state() == STATE_STOPPED and (run_dir / SUMMARY_FILE).exists():
            return
        gevent.sleep(FINAL_POLL_S)


@dataclass
class _Shown:
    """What the tab last showed: when, its rows, the run they are of, and whether final."""

    at: float = 0.0
    rows: list[dict] = field(default_factory=list)
    run_dir: Path | None = None
    final: bool = False


def add_verdict_tab(web_ui, progress: Callable[[], tuple[Path, int] | None]) -> None:
    """Register the tab; ``progress`` gives the current run directory and offered count."""
    web_ui.template_args["extended_tabs"] = [{"title": "Verdict so far", "key": TAB_KEY}]
    web_ui.template_args["extended_tables"] = [
        {"key": TAB_KEY, "structure": [{"key": k, "title": t} for k, t in COLUMNS]}
    ]
    cache = _Shown()

    def state() -> str:
        return web_ui.environment.runner.state

    @web_ui.app.after_request
    def add_verdict_rows(response):
        """Append the tab's rows to Locust's periodic stats answer."""
        if request.path != "/stats/requests" or response.status_code != 200:
            return response
        payload = response.get_json()
        current: tuple[Path, int | None] | None = progress()
        if current is not None:
            cache.run_dir, cache.final = current[0], False
        if cache.run_dir is not None and not cache.final and state() in ENDING:
            # The run is ending: this is the page's last poll, so wait for the verdict.
            _await_report(cache.run_dir, state)
            current, cache.at = (cache.run_dir, None), 0.0
            payload["state"] = state()
        if current is not None and time.monotonic() - cache.at >= REFRESH_S:
            try:
                cache.rows = verdict_rows(*current)
                cache.final = current[1] is None and (current[0] / SUMMARY_FILE).exists()
            except RunDirError as exc:
                cache.rows = [{"workload": f"no verdict yet: {exc}"}]
            cache.at = time.monotonic()
        payload = {**payload, "extended_stats": [{"key": TAB_KEY, "data": cache.rows}]}
        response.set_data(json.dumps(payload))
        return response
