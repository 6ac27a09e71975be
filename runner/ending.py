"""How a run on the master is wrapped up once its processes have drained (or been stopped):
its fault windows ended and recorded, its probes stopped, its accepted work followed up, the
stub's call record and Locust's own tables written beside the samples, the processes it lost
named, and run.json written for the last time, so the report reads a run directory that is
complete.
"""

from __future__ import annotations

import logging

from engine.agent_plan import calls_key
from engine.run_record import RunRecord
from runner.active_run import ActiveRun
from runner.faults import end_faults
from runner.follow_up import follow_up
from runner.recording import lost_processes, write_record
from runner.stub_calls import fetch_stub_calls

log = logging.getLogger(__name__)


def wrap_up(run: ActiveRun, environment) -> RunRecord:
    """Write the ended run's last files and return its final record (run.json)."""
    if run.flusher is not None:
        run.flusher.kill(block=True)
    # Nothing stays broken while accepted work is followed up, and the record is whole.
    end_faults(run.faults, run.files.dir)
    probes = run.probes.stop()
    follow_up(run)
    key = calls_key(run.run_id, run.clock.start_epoch)
    fetch_stub_calls(run.settings.probes.stub_url, key, run.files.dir)
    run.files.write_locust_tables(environment)
    run.files.close()
    run.lost = lost_processes(run)
    record = write_record(run, environment.shape_class, probes)
    shortfall = record.offered - run.files.recorded
    log.info(
        "run %s %s: offered %d, recorded %d%s",
        run.run_id,
        run.stopped,
        record.offered,
        run.files.recorded,
        f" -- {shortfall} missing, the run is unusable" if shortfall else "",
    )
    return record
