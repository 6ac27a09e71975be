"""A platform the kit ships that runs from a virtual environment of its own (agno, LangGraph):
built on first use by its make target, so it can pin its own web stack without moving the
kit's, then started beside the stub, waited for and seeded. Its key is the run's password
(LOAD_PASSWORD), passed in the child's environment, never in argv; its state goes in the
stack's scratch directory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from inputs.fixture import DEFAULT_EMAIL
from stack.local import (
    LocalStack,
    PlatformUnavailable,
    StackOptions,
    build_once,
    child_env,
    password,
    running_stub,
    seed,
    topology,
)
from stack.processes import ROOT, free_port, running

# Such a platform imports its framework (LangChain, LanceDB, pyarrow, the OpenAI SDK...)
# before it answers: slower than our servers from a cold disk on a busy machine.
READY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class OwnVenv:
    """What differs between such platforms: their names, where they answer, their settings."""

    # The registry's name (what the seed seeds): the platform is python -m platforms.<name> and
    # its environment .venv-<name>, unless ``module`` and ``venv`` say otherwise; its log is
    # <name>.log.
    name: str
    # How a line names it ("LangGraph").
    called: str
    # How the topology line names it.
    described: str
    # How long its make target took to build, said while it builds ("about a minute").
    build: str
    # The environment variable its key (the run's password) is passed in.
    key_env: str
    # Its settings' prefix: <PREFIX>STUB_URL and <PREFIX>DATA_DIR are set for it.
    env_prefix: str
    # The unauthenticated route that answers once it is ready.
    ready_path: str
    # Options after --port, and settings of its own.
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    # Whether it serves Prometheus /metrics.
    metrics: bool = True
    # A protocol platform served by another platform's server (AG-UI by agno's AgentOS): the
    # module started and the environment it runs in, when not the name's; the seed's own
    # options (where the agent answers).
    module: str | None = None
    venv: str | None = None
    seed_args: tuple[str, ...] = ()

    def interpreter(self) -> str:
        """Its environment's python, building the environment first if needed (``make
        <venv>-venv``); PlatformUnavailable when the build fails."""
        built = self.venv or self.name
        target, venv = f"{built}-venv", f".venv-{built}"
        python = ROOT / venv / "bin" / "python"
        done = build_once(target, f"{self.called}'s environment ({venv})", self.build)
        if done.returncode != 0 or not python.exists():
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise PlatformUnavailable(
                f"make {target} failed: {lines[-1] if lines else done.returncode}; "
                "check that PyPI is reachable"
            )
        return str(python)


@contextlib.contextmanager
def running_in_own_venv(options: StackOptions, platform: OwnVenv) -> Iterator[LocalStack]:
    """Start the stub and ``platform`` from its environment (built first if needed), seed it,
    yield the stack; stop both when the block ends."""
    python = platform.interpreter()
    workdir = options.workdir
    env = child_env()
    with running_stub(options, env) as stub:
        port = free_port()
        platform_env = {
            **env,
            platform.key_env: password(),
            f"{platform.env_prefix}STUB_URL": stub.url,
            f"{platform.env_prefix}DATA_DIR": str((workdir / f"{platform.name}-data").resolve()),
            **platform.env,
            **options.target_env,
        }
        module = platform.module or f"platforms.{platform.name}"
        args = ["-m", module, "--port", str(port), *platform.args]
        with running(
            args,
            platform.ready_path,
            port,
            workdir / f"{platform.name}.log",
            platform_env,
            python=python,
            ready_timeout=READY_TIMEOUT_S,
        ) as server:
            fixture = workdir / "fixture.json"
            seed(
                server.url,
                stub.url,
                options.documents,
                fixture,
                env,
                platform=platform.name,
                extra=platform.seed_args,
            )
            yield LocalStack(
                stub,
                server,
                fixture,
                DEFAULT_EMAIL,
                topology(options, platform.described, stub),
                None,
                metrics=platform.metrics,
            )
