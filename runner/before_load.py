"""What the master settles before any load: the options checked, the shape's plan, the run
directory, preflight (and the scenario once it has left workloads out), the checks the plan
offers too few arrivals to judge, the connection bound, and what each load process is told.
"""

from __future__ import annotations

import logging
import math
import secrets
from collections.abc import Set
from dataclasses import dataclass
from pathlib import Path

import msgspec

from engine.run_record import INSECURE_WARNING, USERS, PlatformRecord
from engine.schedule import Plan
from engine.shortfall import longer_phase_fixes, run_time_fixes, scale_fixes, shortfalls
from engine.sign_in import secret_for
from engine.trust import refuse_untrusted, use
from inputs.bad_input import SettingsError
from inputs.scenario import Scenario
from runner.faults import check_faults
from runner.messages import VERSION, Prepare
from runner.settings import (
    RUNS_DIR,
    RunSettings,
    bound_connections,
    check_new_run_dir,
    offering,
    run_stamp,
    settings_from,
    with_host,
)
from shapes.kit_shape import mode_of
from workloads.platforms import platform_of
from workloads.preflight import preflight

log = logging.getLogger(__name__)

# Connections each process opens before the start: its share of the first this-many seconds.
WARM_WINDOW_S = 1.0
# At most this many connections are opened ahead per process, whatever the rate.
WARM_MAX = 256


@dataclass(frozen=True)
class Settled:
    """A run as settled before its load processes are met: what the run offers and where."""

    settings: RunSettings
    plan: Plan
    run_dir: Path
    # The name the platform and every record know the run by (see run_name).
    run_id: str
    # Each load process's Locust client id -> its slot.
    slots: dict[str, int]
    mode: str
    # Workloads preflight left out, each with why.
    skipped: dict[str, str]
    platform: PlatformRecord
    # Bytes in the platform's log when the test started (preflight included), if one is named.
    platform_log_from: int

    @property
    def closed_loop(self) -> bool:
        return self.mode == USERS


def settle(environment, slots: dict[str, int], used_run_dirs: Set[Path]) -> Settled:
    """The options checked, the shape's plan, the run directory and preflight, then the
    scenario the run offers and its connection bound; one line for each check the plan is too
    small to judge. BadInput, TrustError or PreflightError (one line each) when the run cannot
    go."""
    settings = settings_from(environment.parsed_options, environment.host, frozenset(used_run_dirs))
    log_from = log_size(settings.platform_log)
    shape = environment.shape_class
    if not hasattr(shape, "initial_plan"):
        raise SettingsError(
            "shape: none of this kit's shapes is active; pick FourPhaseShape or "
            "ConstantRateShape (or leave the class picker off)"
        )
    plan = shape.initial_plan(settings)
    run_dir = _run_dir(settings, used_run_dirs)
    _trust(settings)
    spoken, skipped = _preflight(settings)
    scenario = without(settings.scenario, skipped)
    shape.after_preflight(scenario)
    settings = offering(settings, scenario)
    mode = mode_of(shape)
    for line in too_few(settings, plan, mode == USERS, skipped):
        log.warning(line)
    for line in check_faults(settings, plan):
        log.warning(line)
    settings = _bounded(settings, len(slots))
    run_id = run_name(run_dir)
    return Settled(settings, plan, run_dir, run_id, slots, mode, skipped, spoken, log_from)


def run_name(run_dir: Path) -> str:
    """The run directory's name and eight random hex digits: a platform dedupes a webhook id
    it has seen and a follow-up credits work by run id, so a reused --run-dir name must
    still be a new run to the platform."""
    return f"{run_dir.name}-{secrets.token_hex(4)}"


def prepare_message(settled: Settled) -> Prepare:
    """What every load process is told before the run: its slot, its connections, the
    scenario it offers, the deployment and how far to warm up."""
    settings = settled.settings
    shares = split(settings.connections, len(settled.slots))
    return Prepare(
        version=VERSION,
        run_id=settled.run_id,
        slots=settled.slots,
        connections=shares,
        scenario=settings.scenario,
        fixture=with_host(settings.fixture, settings.host),
        host=settings.host,
        email=settings.email,
        mode=settled.mode,
        warm=warm_counts(settled.plan, shares),
        accept_encoding=settings.accept_encoding,
        tls=settings.trust,
    )


def _run_dir(settings: RunSettings, used: Set[Path]) -> Path:
    """--run-dir for the first test, else runs/<UTC timestamp>; later tests get a suffix."""
    if settings.run_dir is not None and settings.run_dir not in used:
        return check_new_run_dir(settings.run_dir)
    base = settings.run_dir or RUNS_DIR / run_stamp()
    chosen, n = base, 1
    while chosen.exists():
        n += 1
        chosen = base.with_name(f"{base.name}-{n}")
    return chosen


def _trust(settings: RunSettings) -> None:
    """Every connection the run makes trusts the same certificates, checked before any:
    TrustError (one line naming the fix) for a certificate the run will not trust."""
    use(settings.trust)
    if settings.trust.insecure:
        log.warning(INSECURE_WARNING)
    probed = (settings.probes.metrics_url, settings.probes.stub_url)
    refuse_untrusted(settings.trust, settings.host, *probed)


def _preflight(settings: RunSettings) -> tuple[PlatformRecord, dict[str, str]]:
    """The platform spoken to, and the workloads its preflight leaves out (each said in one
    line). Only what the scenario offers is checked: a workload with share 0 never is."""
    fixture = with_host(settings.fixture, settings.host)
    spoken = platform_of(fixture)
    offered = frozenset(settings.scenario.offered)
    secret = secret_for(spoken.credential(spoken.seeded_from(fixture)))
    checked = preflight(spoken, fixture, settings.email, secret, offered)
    skipped = dict(checked.skipped)
    for name, reason in skipped.items():
        log.warning("%s skipped: %s", name, reason)
    return PlatformRecord(spoken.name, dict(spoken.offers)), skipped


def _bounded(settings: RunSettings, processes: int) -> RunSettings:
    """The settings with the connection bound capped at what ``processes`` can hold (said in
    one line when it binds); SettingsError when it cannot give each process one."""
    if settings.connections < processes:
        raise SettingsError(
            f"--connections: {settings.connections} is fewer than the {processes} load "
            f"processes; give at least {processes}"
        )
    settings = bound_connections(settings, processes)
    if settings.connections_note:
        log.warning(settings.connections_note)
    return settings


def log_size(log: Path | None) -> int:
    """Bytes in the log now (0 when there is none, or it cannot be read)."""
    try:
        return log.stat().st_size if log is not None else 0
    except OSError:
        return 0


def without(scenario: Scenario, workloads: dict[str, str]) -> Scenario:
    """The scenario with each of ``workloads`` at share 0 (the others renormalise)."""
    kept = tuple(
        msgspec.structs.replace(w, share=0.0) if w.name in workloads else w
        for w in scenario.workloads
    )
    return msgspec.structs.replace(scenario, workloads=kept)


def too_few(
    settings: RunSettings, plan: Plan, closed_loop: bool, skipped: dict[str, str]
) -> list[str]:
    """One line per check the plan offers too few arrivals to judge, with what reaches it
    (--scale for the scenario's phases, --run-time for one rate). None in users mode: a
    closed loop has no plan to count (the users shape says which workloads get no user)."""
    if closed_loop:
        return []
    scenario = settings.scenario
    found = shortfalls(scenario, plan)
    if not found:
        return []
    if settings.rate is not None:
        return run_time_fixes(scenario, found, settings.rate)
    if settings.unscaled is not None and [s.name for s in plan.segments] == [
        p.name for p in scenario.phases
    ]:
        return scale_fixes(without(settings.unscaled, skipped), found, settings.scale)
    return longer_phase_fixes(found, plan)


def split(total: int, parts: int) -> list[int]:
    """``total`` connections over ``parts`` processes, differing by at most one."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def warm_counts(plan: Plan, shares: list[int]) -> list[int]:
    """Connections each process opens ahead: its share of the first WARM_WINDOW_S of arrivals,
    within its connection share and WARM_MAX."""
    first = plan.due_before(WARM_WINDOW_S)
    each = math.ceil(first / len(shares))
    return [min(each, share, WARM_MAX) for share in shares]
