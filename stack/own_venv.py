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

    # Its name: the platform is python -m platforms.<name>, built by make <name>-venv into
    # .venv-<name>, its log <name>.log; the registry's name too, unless seeded_as says another.
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
    # The registry's name it is seeded as, when not its own (LiteLLM's proxy is an openai).
    seeded_as: str = ""

    def interpreter(self) -> str:
        """Its environment's python, building the environment first if needed (``make
        <name>-venv``); PlatformUnavailable when the build fails."""
        target, venv = f"{self.name}-venv", f".venv-{self.name}"
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
        args = ["-m", f"platforms.{platform.name}", "--port", str(port), *platform.args]
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
                platform=platform.seeded_as or platform.name,
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
