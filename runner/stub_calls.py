"""After the drain: the stub's record of this run's model calls, beside the samples.

The stub keeps a row per call the kit's marker planned (stub/calls.py) and serves a
run's rows at ``GET /calls?run=RUN``; the master asks once every arrival has ended,
so every row is written, and keeps them as ``stub_calls.csv`` in the run directory,
a file of its own (run.json stays the run's record). Reports join them to the
samples by arrival index: the model calls each turn made and the stub's own time
for them. A stub that cannot be asked (not the kit's, or gone) leaves no file, and
the report says the loop was not measured.
"""

from __future__ import annotations

import logging
from pathlib import Path

import requests

from engine import nofollow
from engine.agent_plan import STUB_CALLS_FILE
from engine.trust import session

# Seconds to wait for the stub's answer: it reads its files and streams them back.
FETCH_TIMEOUT_S = 60.0

log = logging.getLogger("agent_loadkit")


def fetch_stub_calls(stub_url: str | None, run_key: str, run_dir: Path) -> int | None:
    """Write ``stub_calls.csv`` with the rows of ``run_key`` (engine.agent_plan.calls_key);
    the rows it holds, or None when the stub could not say."""
    if not stub_url:
        return None
    url = stub_url.rstrip("/") + "/calls"
    try:
        with session().get(url, params={"run": run_key}, timeout=FETCH_TIMEOUT_S) as answer:
            answer.raise_for_status()
            body = answer.content
    except requests.RequestException as exc:
        log.warning("the stub's call record was not read (%s): %s", url, type(exc).__name__)
        return None
    if not body.startswith(b"run,arrival,"):
        log.warning("%s did not answer the stub's call record; is it the kit's stub?", url)
        return None
    nofollow.replace(run_dir / STUB_CALLS_FILE, body)
    return body.count(b"\n") - 1
