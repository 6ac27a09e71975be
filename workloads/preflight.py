"""How a preflight is run from the shell, on every platform, and the refusals it shares.

A platform's preflight module checks its deployment its own way; what it
finds is the same on every platform (the agent answers, a search finds the
seeded documents, a run completes, and whether trigger_fire can run), so the
engine reads one result (``engine.seam.PreflightResult``) and the operator sees
one summary line. The command line is the same too: ``python -m
workloads.<platform>.preflight`` (or ``python -m workloads.preflight``, ``loadkit
preflight``: the fixture's platform) checks for every workload and exits 0 with that
line, or 1 with the one-line refusal; a run checks only the workloads its scenario
offers (a workload with share 0 is never preflighted).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from engine.seam import PreflightError, RunPreflight
from inputs.fixture import (
    DEFAULT_EMAIL,
    DEFAULT_PATH,
    FixtureError,
    load_fixture,
    password_from_env,
)
from inputs.scenario import WORKLOADS
from workloads.setup_client import APIError, APIUnreachable

# Workloads that need a search to work (the platform embeds the query and finds the seeded
# documents), and those that need an agent run to complete against the model: what every
# platform's preflight probes for, and only for these (engine.seam.PreflightResult).
SEARCHED = frozenset({"rag_query", "ingest"})
RUN = frozenset({"agent_run", "chat_stream"})


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
    args = parser.parse_args(argv)
    try:
        fixture = load_fixture(args.fixture)
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
