"""What one target process is told: where to listen, which database, which limits.

Each knob is a flag or an environment variable with a documented default
(platforms/reference/README.md). A bad value stops the process before it listens, with one
line naming the knob and the fix, because a capacity run against a
misconfigured target measures the misconfiguration.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

# A SQLite file in the working directory: the target runs out of the box (git-ignored).
DEFAULT_DATABASE_URL = "sqlite:///target.sqlite3"
# Where the stub listens by default; reached as a keyless Ollama endpoint.
DEFAULT_EMBEDDING_URL = "http://127.0.0.1:4020"
DEFAULT_ADMIN_EMAIL = "admin@loadkit.local"
# The seeded default of a local test platform, documented so `make seed` works unchanged.
DEFAULT_ADMIN_PASSWORD = "loadkit-admin"


class SettingsError(ValueError):
    """A knob the target refuses; the message is the one line the operator sees."""


@dataclass(frozen=True)
class Settings:
    """Everything a target process needs to know, checked once at startup."""

    host: str = "127.0.0.1"
    port: int = 8000
    database_url: str = DEFAULT_DATABASE_URL
    embedding_url: str = DEFAULT_EMBEDDING_URL
    admin_email: str = DEFAULT_ADMIN_EMAIL
    admin_password: str = DEFAULT_ADMIN_PASSWORD
    # AgenticOS's pool defaults: 5 + 10 overflow, 30 s wait, then 500.
    db_pool_size: int = 5
    db_max_overflow: int = 10
    db_pool_timeout: float = 30.0
    # AgenticOS's run limit: 30 runs per user per fixed minute.
    rate_limit_run_per_minute: int = 30
    # AgenticOS's sign-in limit: 10 a minute per client address and per user name.
    rate_limit_login_per_minute: int = 10
    # A file to append one line per request to as it arrives (epoch seconds, method, path):
    # the platform's own account of when it was asked, which a test compares with when the
    # load was told to stop. None: no log (AgenticOS has none).
    request_log: str | None = None
    # A file the log is also written to (stderr always has it): how a load run in another
    # container reads what the platform logged. Empty: stderr only.
    log_file: str = ""
    # The key its tokens are signed with, as AgenticOS reads its secret from configuration, so
    # a restarted process still honours the tokens the one before it issued (bench/faults.py's
    # API restart). Empty: a key of the process's own, which a restart forgets.
    secret_key: str = ""

    def __repr__(self) -> str:
        """Never show the admin password, not even in a traceback."""
        return f"Settings(host={self.host!r}, port={self.port}, database={self.database_label})"

    @property
    def database_label(self) -> str:
        """The database URL without any password, for logs and /health."""
        parts = urlsplit(self.database_url)
        if parts.password is None:
            return self.database_url
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return parts._replace(netloc=netloc).geturl()


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is a SettingsError (one line) rather than a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise SettingsError(message)


def build_parser() -> argparse.ArgumentParser:
    """The command line; every flag names its environment variable and default."""
    parser = _OneLineParser(
        prog="python -m platforms.reference",
        description="A small AgenticOS-compatible agent platform to run the load kit against.",
    )
    parser.add_argument("--host", help="address to bind (default 127.0.0.1, env TARGET_HOST)")
    parser.add_argument("--port", help="TCP port (default 8000, env TARGET_PORT)")
    parser.add_argument(
        "--database-url",
        help=f"sqlite:///FILE or postgresql://... (default {DEFAULT_DATABASE_URL}, "
        "env DATABASE_URL)",
    )
    parser.add_argument(
        "--embedding-url",
        help=f"Ollama-style embedding endpoint (default {DEFAULT_EMBEDDING_URL}, "
        "env EMBEDDING_URL)",
    )
    parser.add_argument(
        "--log-file",
        help="also append the log to this file, its folder made if missing "
        "(default none: stderr only, env TARGET_LOG_FILE)",
    )
    return parser


def _integer(name: str, raw: str, minimum: int) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r}: not an integer; set a whole number") from None
    if value < minimum:
        raise SettingsError(f"{name}={value}: must be >= {minimum}")
    return value


def _seconds(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r}: not a number of seconds") from None
    if value <= 0:
        raise SettingsError(f"{name}={value}: must be > 0 seconds")
    return value


def _http_url(name: str, raw: str) -> str:
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SettingsError(f"{name}={raw!r}: not an http(s) URL; e.g. {DEFAULT_EMBEDDING_URL}")
    return raw.rstrip("/")


def _database_url(raw: str) -> str:
    scheme = urlsplit(raw).scheme
    if scheme.startswith("sqlite") or scheme.startswith(("postgresql", "postgres")):
        return raw
    raise SettingsError(
        f"DATABASE_URL={raw.split('://')[0]}://...: unsupported; use sqlite:///FILE or "
        "postgresql://USER:PASSWORD@HOST:PORT/DB"
    )


def load_settings(argv: Sequence[str], environ: Mapping[str, str] = os.environ) -> Settings:
    """Flags win over environment variables, which win over defaults; raise SettingsError."""
    args = build_parser().parse_args(argv)
    defaults = Settings()

    def pick(flag_value: str | None, env: str, default: object) -> str:
        if flag_value is not None:
            return flag_value
        return environ.get(env, str(default))

    password = environ.get("TARGET_ADMIN_PASSWORD", defaults.admin_password)
    if not password:
        raise SettingsError("TARGET_ADMIN_PASSWORD: empty; set a password or unset it")
    email = environ.get("TARGET_ADMIN_EMAIL", defaults.admin_email)
    if "@" not in email:
        raise SettingsError(f"TARGET_ADMIN_EMAIL={email!r}: not an e-mail address")
    port = _integer("--port", pick(args.port, "TARGET_PORT", defaults.port), 0)
    if port > 65535:
        raise SettingsError(f"--port={port}: not a TCP port; use 1-65535")
    env = environ.get
    return Settings(
        host=pick(args.host, "TARGET_HOST", defaults.host),
        port=port,
        database_url=_database_url(pick(args.database_url, "DATABASE_URL", defaults.database_url)),
        embedding_url=_http_url(
            "EMBEDDING_URL", pick(args.embedding_url, "EMBEDDING_URL", defaults.embedding_url)
        ),
        admin_email=email,
        admin_password=password,
        db_pool_size=_integer("DB_POOL_SIZE", env("DB_POOL_SIZE", str(defaults.db_pool_size)), 1),
        db_max_overflow=_integer(
            "DB_MAX_OVERFLOW", env("DB_MAX_OVERFLOW", str(defaults.db_max_overflow)), 0
        ),
        db_pool_timeout=_seconds(
            "DB_POOL_TIMEOUT", env("DB_POOL_TIMEOUT", str(defaults.db_pool_timeout))
        ),
        rate_limit_run_per_minute=_integer(
            "RATE_LIMIT_RUN_PER_MINUTE",
            env("RATE_LIMIT_RUN_PER_MINUTE", str(defaults.rate_limit_run_per_minute)),
            1,
        ),
        rate_limit_login_per_minute=_integer(
            "RATE_LIMIT_LOGIN_PER_MINUTE",
            env("RATE_LIMIT_LOGIN_PER_MINUTE", str(defaults.rate_limit_login_per_minute)),
            1,
        ),
        request_log=env("TARGET_REQUEST_LOG") or None,
        log_file=pick(args.log_file, "TARGET_LOG_FILE", defaults.log_file),
        secret_key=environ.get("TARGET_SECRET_KEY", defaults.secret_key),
    )
