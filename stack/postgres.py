"""A throwaway PostgreSQL 15 cluster on 127.0.0.1, for the tests and benches that need one.

No Docker engine runs on these machines, so the machine's own PostgreSQL 15
binaries start in a fresh data directory, on a free port, and stop when the block
ends. initdb refuses to run as root, so as root the cluster runs as the
``postgres`` user in a directory that user owns. Where the binaries are missing,
``PostgresMissing`` says so (tests/conftest.py turns it into a skip).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from stack.processes import free_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")

# Durability buys nothing in a cluster deleted after the test; skipping it keeps tests fast.
FAST_SETTINGS = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"

# Seconds pg_ctl may wait for start or stop on a busy 2-core machine.
PG_CTL_TIMEOUT_S = 60


def _run_as() -> str | None:
    """The user the cluster runs as: ``postgres`` when we are root (initdb refuses root)."""
    return "postgres" if os.geteuid() == 0 else None


class PostgresMissing(RuntimeError):
    """The machine has no PostgreSQL 15 binaries to start a cluster with."""


@dataclass(frozen=True)
class Cluster:
    """A running throwaway cluster: its URL, and the command that restarts it as a crash
    would (``pg_ctl restart -m immediate``, as the cluster's user): bench/faults.py's
    PostgreSQL restart."""

    url: str
    restart: tuple[str, ...]


@contextlib.contextmanager
def throwaway_postgres(tmp_path: Path) -> Iterator[str]:
    """Yield the URL of a fresh PostgreSQL 15 cluster on 127.0.0.1; stop and delete it after.

    The cluster trusts local connections (user ``postgres``, no password) and
    leaves its server log in ``tmp_path / "postgres.log"``.
    """
    with throwaway_cluster(tmp_path) as cluster:
        yield cluster.url


@contextlib.contextmanager
def throwaway_cluster(tmp_path: Path) -> Iterator[Cluster]:
    """throwaway_postgres, with the command that restarts the cluster."""
    if not (PG_BIN / "initdb").exists():
        raise PostgresMissing(
            f"PostgreSQL 15 binaries not found in {PG_BIN} (Debian's postgresql-15: "
            "apt-get install postgresql-15)"
        )
    user = _run_as()
    # pytest's tmp_path is private to root; the cluster needs a directory its user owns.
    home = Path(tempfile.mkdtemp(prefix="loadkit-pg-"))
    data = home / "data"
    log = home / "postgres.log"
    if user:
        entry = pwd.getpwnam(user)
        os.chown(home, entry.pw_uid, entry.pw_gid)
    port = free_port()
    options = (
        f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={home} {FAST_SETTINGS}"
    )
    ctl = [str(PG_BIN / "pg_ctl"), "-D", str(data), "-t", str(PG_CTL_TIMEOUT_S)]
    try:
        _pg(
            [
                str(PG_BIN / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
            ],
            user,
        )
        _pg([*ctl, "-l", str(log), "-o", options, "-w", "start"], user)
        as_user = ("/usr/sbin/runuser", "-u", user, "--") if user else ()
        restart = (*as_user, *ctl, "-l", str(log), "-m", "immediate", "-w", "restart")
        yield Cluster(f"postgresql://postgres@127.0.0.1:{port}/postgres", restart)
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run([*ctl, "-m", "fast", "-w", "stop"], user=user, capture_output=True)
        if log.exists():
            shutil.copyfile(log, tmp_path / "postgres.log")
        shutil.rmtree(home, ignore_errors=True)


def _pg(args: list[str], user: str | None) -> None:
    """Run one PostgreSQL tool; on failure raise with its own words, not just an exit code."""
    done = subprocess.run(args, user=user, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{Path(args[0]).name} failed: {(done.stderr or done.stdout).strip()}")
