"""The master's part in a run's fault windows (issue 45): checked before load, handed out at the
start, ended and recorded at the end.

Before load, every window must be one the run can apply: its phases are the run's (a
``--rate`` or users run has phases of its own), a model window needs the kit's stub
(``GET /faults`` answers), a freeze needs a running process that is not this one, and a
command one its program. When the run's start is picked the model's windows go to the stub
with their start and end as epoch times (stub/schedule.py applies them in every process) and
the platform's to the guard (runner/fault_guard.py), which outlives this process; no window
begins before the run does, so a refused preflight leaves nothing to undo. When the run
ends, however it ends, the stub's windows of the run are cancelled (those still ahead never
begin), the guard is told to undo what is under way and waited for, and the stub's record
of what every process did is written beside the guard's (engine/fault_record.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import msgspec
import requests

from engine.fault_record import (
    FAULTS_DIR,
    NOT_APPLIED,
    STUB_EVENTS,
    FaultEvent,
    Window,
    append_event,
    placed,
)
from engine.schedule import Plan
from engine.trust import session
from inputs.bad_input import SettingsError
from inputs.faults import API_PID, FaultKind, scale_lines
from runner.fault_guard import END, GuardPlan, GuardWindow
from runner.settings import RunSettings
from stub.schedule import Change, Posted
from stub.schedule import Window as StubWindow

log = logging.getLogger(__name__)

# Seconds to wait for the stub's answer to a post, a cancellation or its record.
STUB_TIMEOUT_S = 10.0
# Beyond the slowest command's time limit, how long the guard may take to finish undoing.
GUARD_GRACE_S = 5.0
ROOT = Path(__file__).resolve().parent.parent


def check_faults(settings: RunSettings, plan: Plan) -> list[str]:
    """SettingsError (a line per problem) for windows this run cannot apply; else the lines
    that say where --scale moved each window, to be said before load."""
    faults = settings.scenario.faults
    if not faults:
        return []
    problems = []
    phases = [p.name for p in settings.scenario.phases]
    if [s.name for s in plan.segments] != phases:
        problems.append(
            f"faults: each window falls in one of the scenario's phases {phases}, and this run's "
            f"are {[s.name for s in plan.segments]}; leave out --rate and -u, or the faults"
        )
    stub_url = settings.probes.stub_url
    if any(f.model for f in faults):
        if not stub_url:
            problems.append(
                "faults: a model window needs the kit's stub; give --stub-url (or seed with "
                "--stub-url so the fixture names it)"
            )
        elif (why := _stub_refuses(stub_url)) is not None:
            problems.append(f"faults: {why}")
    for i, fault in enumerate(faults):
        where = f"faults[{i}] ({fault.name})"
        if fault.kind == FaultKind.FREEZE:
            problems += _freeze_problems(fault.api_pid, fault.pid, fault.pid_file, settings, where)
        for argv in (fault.at_start, fault.at_end):
            if argv and shutil.which(argv[0]) is None:
                problems.append(f"{where}: {argv[0]} is not a program here; give its full path")
    if problems:
        raise SettingsError(problems)
    return scale_lines(faults)


def _stub_refuses(stub_url: str) -> str | None:
    """Why the stub at ``stub_url`` cannot take fault windows (None when it can)."""
    url = stub_url.rstrip("/") + "/faults"
    try:
        answer = session().get(url, params={"run": ""}, timeout=STUB_TIMEOUT_S)
    except requests.RequestException as exc:
        return f"the stub at {stub_url} did not answer ({type(exc).__name__}); start it first"
    if answer.status_code != 200:
        return (
            f"GET {url} answered {answer.status_code}: the model's windows need the kit's stub "
            "(python -m stub) at --stub-url"
        )
    return None


def _freeze_problems(
    api: bool, pid: int | None, pid_file: str, settings: RunSettings, where: str
) -> list[str]:
    """Why a freeze's process cannot be frozen now: none named, not running, or this one."""
    if api:
        pid = settings.probes.api_pid
        if pid is None:
            return [f"{where}.pid: {API_PID!r} is the run's --api-pid, and none was given"]
    elif pid is None:
        try:
            pid = int(Path(pid_file).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return [f"{where}.pid_file: {pid_file} holds no PID; give the file the process writes"]
    if pid in (os.getpid(), os.getppid()):
        return [f"{where}.pid: {pid} is the generator itself; give the platform's PID"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return [f"{where}.pid: no process {pid} is running; give the platform's PID"]
    except PermissionError:
        return [f"{where}.pid: process {pid} may not be signalled by this user; run as its owner"]
    return []


@dataclass
class RunFaults:
    """A run's windows once handed out: on the run's clock, the stub's key for them, and the
    guard holding the platform's."""

    windows: tuple[Window, ...]
    run_key: str
    stub_url: str | None
    guard: subprocess.Popen | None


def start_faults(
    settings: RunSettings, plan: Plan, run_dir: Path, run_key: str, start_epoch: float
) -> RunFaults | None:
    """Hand the run's windows out: the model's to the stub, the platform's to a new guard
    (None: the scenario has none)."""
    if not settings.scenario.faults:
        return None
    starts: dict[str, float] = {}
    for segment in plan.segments:
        starts.setdefault(segment.name, segment.start_s)
    windows = placed(settings.scenario, starts)
    folder = run_dir / FAULTS_DIR
    folder.mkdir(exist_ok=True)
    stub_url = settings.probes.stub_url
    model = [w for w in windows if w.fault.model]
    if model and stub_url:
        _post(stub_url, run_key, model, start_epoch, folder)
    platform = [w for w in windows if not w.fault.model]
    guard = _start_guard(settings, platform, run_dir, run_key, start_epoch) if platform else None
    return RunFaults(windows, run_key, stub_url, guard)


def _post(
    stub_url: str, run_key: str, windows: list[Window], start_epoch: float, folder: Path
) -> None:
    """The model's windows to the stub, epoch times; a stub that does not take them leaves a
    "not applied" note per window, which the report shows."""
    posted = Posted(
        run_key,
        [
            StubWindow(
                name=w.fault.name,
                kind=w.fault.kind.value,
                start=start_epoch + w.start_s,
                end=start_epoch + w.end_s,
                refuse=w.fault.refuse,
                share=w.fault.share,
                retry_after_s=w.fault.retry_after_s,
                factor=w.fault.factor,
                after_tokens=w.fault.after_tokens,
                stall_s=w.fault.stall_s,
            )
            for w in windows
        ],
    )
    try:
        answer = session().post(
            stub_url.rstrip("/") + "/faults",
            data=msgspec.json.encode(posted),
            headers={"Content-Type": "application/json"},
            timeout=STUB_TIMEOUT_S,
        )
        answer.raise_for_status()
    except requests.RequestException as exc:
        log.error("faults: the stub did not take the model's windows (%s)", exc)
        for w in windows:
            append_event(
                folder / STUB_EVENTS,
                FaultEvent(
                    w.fault.name,
                    w.fault.kind.value,
                    "master",
                    NOT_APPLIED,
                    start_epoch + w.start_s,
                    start_epoch,
                    f"the stub did not take it: {type(exc).__name__}",
                ),
            )


def _start_guard(
    settings: RunSettings, windows: list[Window], run_dir: Path, run_key: str, start_epoch: float
) -> subprocess.Popen:
    """The guard, in a session of its own so nothing that stops this process stops it, handed
    the platform's windows on its standard input, which stays open while the run goes."""
    plan = GuardPlan(
        windows=[
            GuardWindow(
                name=w.fault.name,
                kind=w.fault.kind.value,
                start=start_epoch + w.start_s,
                end=start_epoch + w.end_s,
                pid=settings.probes.api_pid if w.fault.api_pid else w.fault.pid,
                pid_file=w.fault.pid_file,
                at_start=list(w.fault.at_start),
                at_end=list(w.fault.at_end),
                timeout_s=w.fault.timeout_s,
            )
            for w in windows
        ],
        stub_url=settings.probes.stub_url,
        run_key=run_key,
    )
    with (run_dir / FAULTS_DIR / "guard.log").open("wb") as out:
        guard = subprocess.Popen(
            [sys.executable, "-m", "runner.fault_guard", str(run_dir.resolve())],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    assert guard.stdin is not None
    guard.stdin.write(msgspec.json.encode(plan) + b"\n")
    guard.stdin.flush()
    return guard


def end_faults(faults: RunFaults | None, run_dir: Path) -> None:
    """The run ended: the stub's windows of it cancelled (a completed run's have all ended),
    the guard told to undo what is under way and waited for, the stub's record written."""
    if faults is None:
        return
    if faults.guard is not None:
        _end_guard(faults)
    if faults.stub_url and any(w.fault.model for w in faults.windows):
        url = faults.stub_url.rstrip("/") + "/faults"
        with contextlib.suppress(requests.RequestException):
            session().post(
                url + "/cancel",
                data=msgspec.json.encode({"run": faults.run_key}),
                timeout=STUB_TIMEOUT_S,
            )
        _fetch_record(url, faults.run_key, run_dir / FAULTS_DIR / STUB_EVENTS)


def _end_guard(faults: RunFaults) -> None:
    guard = faults.guard
    assert guard is not None and guard.stdin is not None
    with contextlib.suppress(OSError):
        guard.stdin.write(END + b"\n")
        guard.stdin.close()
    limit = max((w.fault.timeout_s for w in faults.windows if not w.fault.model), default=0.0)
    try:
        guard.wait(limit + GUARD_GRACE_S)
    except subprocess.TimeoutExpired:
        log.error(
            "faults: the guard (PID %d) is still undoing after %g s; it goes on on its own, its "
            "record in faults/guard.jsonl",
            guard.pid,
            limit + GUARD_GRACE_S,
        )


def _fetch_record(url: str, run_key: str, path: Path) -> None:
    """The stub's record of the run's windows, every process's line as one FaultEvent each."""
    try:
        answer = session().get(url, params={"run": run_key}, timeout=STUB_TIMEOUT_S)
        answer.raise_for_status()
    except requests.RequestException as exc:
        log.warning("faults: the stub's record of the windows was not read (%s)", exc)
        return
    for line in answer.content.splitlines():
        change = msgspec.json.decode(line, type=Change)
        append_event(
            path,
            FaultEvent(
                change.window,
                change.kind,
                f"stub process {change.process} (PID {change.pid})",
                change.event,
                change.planned,
                change.at,
                change.detail,
            ),
        )
