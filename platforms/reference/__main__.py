"""``python -m platforms.reference``: check the settings, prepare the database, listen, serve.

Each startup failure (a bad knob, a database that cannot be reached, a port
already taken) is one line on stderr and a non-zero exit, before anything is
served; see platforms/reference/README.md for every knob and default.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import uvicorn

from platforms.listening import CannotListen, listening_socket
from platforms.reference.app import create_app
from platforms.reference.bootstrap import prepare_database
from platforms.reference.settings import SettingsError, load_settings

log = logging.getLogger("platforms.reference")
# Time, process and level first: what reports/platform_log.py finds a line's level by.
LOG_FORMAT = "%(asctime)s target %(levelname)s %(message)s"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _log_to(log_file: str) -> None:
    """Every log line, uvicorn's included, to stderr and to ``log_file`` when one is named,
    in one format that names its level (what a run's report counts errors by)."""
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    if log_file:
        path = Path(log_file)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handlers.append(logging.FileHandler(path))
        except OSError as exc:
            raise SettingsError(
                f"--log-file={log_file}: cannot write it ({exc.strerror}); "
                "pass a writable path or leave it out"
            ) from None
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, handlers=handlers, force=True)


def main(argv: list[str]) -> int:
    """Run the target until SIGINT/SIGTERM; 0 on a clean stop, 2 on a startup error."""
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    try:
        settings = load_settings(argv)
        _log_to(settings.log_file)
    except SettingsError as exc:
        print(f"target: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(prepare_database(settings))
    except Exception as exc:
        print(
            f"target: cannot prepare the database {settings.database_label}: {_first_line(exc)}; "
            "check DATABASE_URL (or --database-url) and that the database accepts connections",
            file=sys.stderr,
        )
        return 2
    try:
        sock = listening_socket(settings.host, settings.port)
    except CannotListen as exc:
        print(f"target: {exc}; pass --port (or TARGET_PORT) with a free port", file=sys.stderr)
        return 2
    log.info(
        "listening on http://%s:%d (database %s, embeddings %s, admin %s)",
        settings.host,
        sock.getsockname()[1],
        settings.database_label,
        settings.embedding_url,
        settings.admin_email,
    )
    config = uvicorn.Config(
        create_app(settings),
        ws="wsproto",
        access_log=False,
        # uvicorn's loggers pass their lines to ours (one format, and the log file too).
        log_config=None,
        log_level="warning",
        timeout_graceful_shutdown=10,
    )
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
