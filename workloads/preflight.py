"""Preflight, the kit's for every platform: refuse, before any load, a deployment that cannot do
the run's work, in one line with the fix.

The kit reaches the API, signs in and checks the credential (workloads/reach.py), then makes
the probes the run's offered workloads need (a workload with share 0, or one the platform
does not offer, is never preflighted). A platform's own probes say what it knows (AgenticOS:
the agent is published and the collection not empty); a platform with none gets the
default, one arrival of each offered agent workload and of retrieval through the run's own
dialect (workloads/one_arrival.py), so "health, then one run" needs no code of its own.
``loadkit preflight`` runs it for the fixture's platform and exits 0 with the summary line,
or 1 with the refusal.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext

from engine.samples import OK
from engine.seam import (
    DialectError,
    Platform,
    PreflightError,
    PreflightResult,
    Probe,
    Setup,
    Skip,
)
from engine.sign_in import secret_for
from inputs.fixture import DEFAULT_EMAIL, DEFAULT_PATH, Fixture, FixtureError, load_fixture
from inputs.workload import WORKLOADS
from workloads.one_arrival import fix_for, signed_setup
from workloads.platforms import PlatformError, platform_of
from workloads.setup_client import APIError, APIUnreachable, add_trust_options, trust_given

# Workloads that need a search to work (the platform embeds the query and finds the seeded
# documents), and those that need an agent run to complete against the model: what every
# platform's preflight probes for, and only for these.
SEARCHED = frozenset({"rag_query", "ingest"})
RUN = frozenset({"agent_run", "chat_stream"})
# Every workload: a probe made whatever the run offers (that the agent is there).
ALWAYS = frozenset(WORKLOADS)


def search_probe(search: Callable[[], int]) -> Probe:
    """The search every platform makes for SEARCHED: ``search`` returns how many it found."""
    return Probe(SEARCHED, lambda: f"search found {search()}")


def run_probe(run: Callable[[], str]) -> Probe:
    """The agent run every platform makes for RUN: ``run`` returns the run's id once it has
    completed against the model (PreflightError if it did not)."""

    def check() -> str:
        began = time.monotonic()
        return completed(f"run {run()}", began)

    return Probe(RUN, check)


def served_probe(setup: Setup, workload: str, needed_by: frozenset[str]) -> Probe:
    """One arrival of ``workload`` through the run's own dialect, which must end ok:
    otherwise PreflightError with the sample's own words."""

    def check() -> str:
        began = time.monotonic()
        result = setup.one(workload)
        if result.outcome != OK:
            said = f": {result.detail}" if result.detail else ""
            raise PreflightError(
                f"one {workload} arrival ended {result.outcome}{said}; {fix_for(workload, result)}"
            )
        return completed(f"one {workload}", began)

    return Probe(needed_by, check)


def default_probes(record: Platform, setup: Setup) -> list[Probe]:
    """The kit's preflight for a platform that names no probes: one agent arrival (an agent
    run where offered, else a chat turn) and, where offered, one retrieval."""
    probes = []
    agent = next((w for w in ("agent_run", "chat_stream") if w in record.offers), None)
    if agent is not None:
        probes.append(served_probe(setup, agent, RUN & frozenset(record.offers)))
    if "rag_query" in record.offers:
        probes.append(served_probe(setup, "rag_query", SEARCHED & frozenset(record.offers)))
    return probes


def completed(what: str, began: float) -> str:
    """Work begun at ``began`` (monotonic) done, in the summary's words: ``<what> completed in
    0.42 s``."""
    return f"{what} completed in {time.monotonic() - began:.2f} s"


def preflight(
    record: Platform,
    fixture: Fixture,
    email: str,
    secret: str,
    offered: frozenset[str] = ALWAYS,
) -> PreflightResult:
    """Check the deployment can do the workloads the run ``offered`` that the platform
    offers; PreflightError (one line) if not. Each probe is made only for a workload that
    needs it."""
    offered = offered & frozenset(record.offers)
    fix = "seed against the right --api-url (loadkit seed), or pass --host"
    seen: list[str] = []
    ready: list[str] = []
    skipped: dict[str, str] = {}
    try:
        with signed_setup(record, fixture, email, secret, purpose="preflight", fix=fix) as (
            setup,
            _dialect,
        ):
            probes = (
                record.probes(setup)
                if record.probes
                else nullcontext(default_probes(record, setup))
            )
            refused = api_failures_refused(record.name, "seed again against this deployment")
            with refused, probes as made:
                _probe(made, offered, seen, ready, skipped)
    except DialectError as exc:
        raise PreflightError(str(exc)) from None
    subject = record.subject(record.seeded_from(fixture))
    return PreflightResult(fixture.api_url, subject, offered, tuple(seen), tuple(ready), skipped)


def _probe(
    probes: Sequence[Probe],
    offered: frozenset[str],
    seen: list[str],
    ready: list[str],
    skipped: dict[str, str],
) -> None:
    """Make each probe the ``offered`` workloads need, in order, noting what it saw."""
    for probe in probes:
        wanted = sorted(probe.needed_by & offered)
        if not wanted:
            continue
        try:
            words = probe.check()
        except Skip as skip:
            if not probe.optional:
                raise PreflightError(str(skip)) from None
            skipped.update(dict.fromkeys(wanted, str(skip)))
            continue
        seen += [words] if words else []
        ready += wanted if probe.optional else []


@contextmanager
def api_failures_refused(who: str, fix: str) -> Iterator[None]:
    """Turn a setup client failure between the checks into a one-line refusal: ``who``
    stopped answering, or an answer no check expected, with ``fix``."""
    try:
        yield
    except APIUnreachable as exc:
        raise PreflightError(f"{who} stopped answering ({exc}): is it up?") from None
    except APIError as exc:
        raise PreflightError(f"{exc}: {fix}") from None


def main(argv: list[str], prog: str = "python -m workloads.preflight") -> int:
    """``loadkit preflight``: check the fixture's deployment; 0 and the summary when ready,
    1 and one line when not (2 for a bad option)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Refuse, before any load, a deployment that cannot do the run's work: the "
        "checks of the platform the fixture names (its credential from LOAD_PASSWORD, where "
        "it has one).",
    )
    parser.add_argument("--fixture", default=str(DEFAULT_PATH), help=f"default {DEFAULT_PATH}")
    parser.add_argument(
        "--email",
        default=DEFAULT_EMAIL,
        help=f"the user to sign in as, where the platform has users (default {DEFAULT_EMAIL})",
    )
    add_trust_options(parser)
    args = parser.parse_args(argv)
    try:
        fixture = load_fixture(args.fixture)
        if (refused := trust_given(args, "preflight", fixture.api_url)) is not None:
            return refused
        record = platform_of(fixture)
        secret = secret_for(record.credential(record.seeded_from(fixture)))
        result = preflight(record, fixture, args.email, secret)
    except (PreflightError, FixtureError, PlatformError) as exc:
        print(f"preflight: {exc}", file=sys.stderr)
        return 1
    print(result.summary())
    return 0


if __name__ == "__main__":
    # Run as the imported module, not as __main__: the platforms raise its errors.
    from workloads import preflight as module

    sys.exit(module.main(sys.argv[1:]))
