"""The preflight every platform fills in, its command line, and the refusals it shares.

A platform's preflight says how its deployment is reached and what it probes;
this module runs the probes a run's workloads need (a workload with share 0 is
never preflighted), turns what they saw into one ``PreflightResult`` and one
summary line, and gives every platform the same command line: ``python -m
workloads.<platform>.preflight`` (or ``loadkit preflight``, the fixture's platform)
checks for every workload and exits 0 with that line, or 1 with the one-line refusal.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

from engine.seam import PreflightError, PreflightResult, RunPreflight
from inputs.fixture import (
    DEFAULT_EMAIL,
    DEFAULT_PATH,
    FixtureError,
    load_fixture,
    password_from_env,
)
from inputs.scenario import WORKLOADS
from workloads.setup_client import APIError, APIUnreachable, add_trust_options, trust_given

# Workloads that need a search to work (the platform embeds the query and finds the seeded
# documents), and those that need an agent run to complete against the model: what every
# platform's preflight probes for, and only for these.
SEARCHED = frozenset({"rag_query", "ingest"})
RUN = frozenset({"agent_run", "chat_stream"})
# Every workload: a probe made whatever the run offers (that the agent is there).
ALWAYS = frozenset(WORKLOADS)
# A platform's setup client, open while its probes run.
C = TypeVar("C")


class Skip(Exception):
    """An optional probe's workloads cannot run here and the run goes on without them; the
    message is the reason the report gives."""


@dataclass(frozen=True)
class Probe(Generic[C]):
    """One real request of the kind the run will make, made only when the run offers a
    workload in ``needed_by``. ``check`` returns what it saw in the summary's words ("" for
    nothing to add) or raises PreflightError, one line with the fix. An ``optional`` probe may
    raise Skip instead, leaving its workloads out; when it does not, they are said ready."""

    needed_by: frozenset[str]
    check: Callable[[C], str]
    optional: bool = False


def search_probe(search: Callable[[C], int]) -> Probe[C]:
    """The search every platform makes for SEARCHED: ``search`` returns how many it found."""
    return Probe(SEARCHED, lambda client: f"search found {search(client)}")


def run_probe(run: Callable[[C], str]) -> Probe[C]:
    """The agent run every platform makes for RUN: ``run`` returns the run's id once it has
    completed against the model (PreflightError if it did not)."""

    def check(client: C) -> str:
        began = time.monotonic()
        return completed(f"run {run(client)}", began)

    return Probe(RUN, check)


def completed(what: str, began: float) -> str:
    """Work begun at ``began`` (monotonic) done, in the summary's words: ``<what> completed in
    0.42 s``."""
    return f"{what} completed in {time.monotonic() - began:.2f} s"


def checked(
    api_url: str,
    offered: frozenset[str],
    client: AbstractContextManager[C],
    *,
    reach: Callable[[C], None],
    subject: str,
    probes: Sequence[Probe[C]],
    who: str,
    fix: str,
) -> PreflightResult:
    """What every platform's preflight does with its parts: open ``client``, ``reach`` the API
    (it answers, the credential is accepted: PreflightError if not), then make each probe the
    ``offered`` workloads need, in order, a setup-client failure between them refused as
    ``who`` stopping or with ``fix`` (api_failures_refused). ``subject`` says what serves the
    work ("agent <id> published")."""
    seen: list[str] = []
    ready: list[str] = []
    skipped: dict[str, str] = {}
    with client as open_client:
        reach(open_client)
        with api_failures_refused(who, fix):
            for probe in probes:
                wanted = sorted(probe.needed_by & offered)
                if not wanted:
                    continue
                try:
                    words = probe.check(open_client)
                except Skip as skip:
                    if not probe.optional:
                        raise
                    skipped.update(dict.fromkeys(wanted, str(skip)))
                    continue
                seen += [words] if words else []
                ready += wanted if probe.optional else []
    return PreflightResult(api_url, subject, offered, tuple(seen), tuple(ready), skipped)


@contextmanager
def api_failures_refused(who: str, fix: str) -> Iterator[None]:
    """Turn a setup client failure between the checks into a one-line refusal: ``who``
    (the API, AgentOS) stopped answering, or an answer no check expected, with ``fix``."""
    try:
        yield
    except APIUnreachable as exc:
        raise PreflightError(f"{who} stopped answering ({exc}): is it up?") from None
    except APIError as exc:
        raise PreflightError(f"{exc}: {fix}") from None


def preflight_main(
    argv: list[str],
    run_preflight: RunPreflight | None,
    *,
    prog: str,
    description: str,
    email: bool,
) -> int:
    """Check the fixture's deployment; 0 and the summary when ready, 1 and one line when not.

    ``email`` says whether the platform signs in as a user (``--email``) or takes the
    password alone as its key. ``run_preflight`` None means the fixture's own platform's.
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--fixture", default=str(DEFAULT_PATH), help=f"default {DEFAULT_PATH}")
    if email:
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
        run_preflight = run_preflight or _platform_preflight(fixture.platform)
        who = getattr(args, "email", DEFAULT_EMAIL)
        result = run_preflight(fixture, who, password_from_env(), frozenset(WORKLOADS))
    except (PreflightError, FixtureError) as exc:
        print(f"preflight: {exc}", file=sys.stderr)
        return 1
    print(result.summary())
    return 0


def _platform_preflight(name: str) -> RunPreflight:
    """The registered platform's preflight (imported here: the registry imports this module)."""
    from workloads.platforms import platform

    try:
        return platform(name).run_preflight
    except ValueError as exc:
        raise FixtureError(f"fixture: {exc}; seed again") from None


def main(argv: list[str], prog: str = "python -m workloads.preflight") -> int:
    """Preflight for whichever platform the fixture names (``loadkit preflight``)."""
    return preflight_main(
        argv,
        None,
        prog=prog,
        description="Refuse, before any load, a deployment that cannot do the run's work: the "
        "checks of the platform the fixture names (password from LOAD_PASSWORD).",
        email=True,
    )


if __name__ == "__main__":
    # Run as the imported module, not as __main__: the platforms raise its PreflightError.
    from workloads import preflight

    sys.exit(preflight.main(sys.argv[1:]))
