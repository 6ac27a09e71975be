"""The stub's knobs: each a flag, each also an environment variable, each checked once.

A load run states the model's delays, so a knob that is silently out of range
would make every figure of the run wrong; a bad value stops the stub with one
line naming the flag (or variable) and the fix, before it listens.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any


class ConfigError(ValueError):
    """A knob the stub refuses; the message is the one line the user sees."""


@dataclass(frozen=True)
class StubConfig:
    """Everything a stub process is told: where to listen, how slow, how faulty."""

    host: str = "127.0.0.1"
    port: int = 4020
    first_token_ms: float = 500.0
    token_ms: float = 20.0
    tokens: int = 32
    jitter: float = 0.0
    seed: int = 0
    error_rate: float = 0.0
    timeout_rate: float = 0.0
    rate_limit_rate: float = 0.0
    # A stall: after this many tokens of an answer (0: never), a gap of stall_ms before the
    # next, as a provider that pauses mid-stream (a streamed turn's longest gap shows it).
    stall_after: int = 0
    stall_ms: float = 0.0
    # None: each request's model decides (stub/vectors.py MODEL_WIDTHS); a number overrides.
    embedding_dim: int | None = None
    processes: int = 1


@dataclass(frozen=True)
class _Knob:
    """How one field is spelled on the command line and in the environment."""

    field: str
    # Each knob's own type: str, int or float.
    convert: Callable[[str], Any]
    check: Callable[[Any], str | None]
    help: str

    @property
    def flag(self) -> str:
        return "--" + self.field.replace("_", "-")

    @property
    def env(self) -> str:
        return "STUB_" + self.field.upper()


def _non_negative(value: float) -> str | None:
    return None if value >= 0 else "must be >= 0"


def _positive(value: float) -> str | None:
    return None if value >= 1 else "must be >= 1"


def _fraction(value: float) -> str | None:
    return None if 0.0 <= value <= 1.0 else "must be within [0, 1]"


def _port(value: float) -> str | None:
    return None if 0 <= value <= 65535 else "must be a TCP port within [0, 65535]"


def _any(value: object) -> str | None:
    return None


KNOBS = (
    _Knob("host", str, _any, "address to bind; 0.0.0.0 only when containers must reach it"),
    _Knob("port", int, _port, "TCP port to listen on"),
    _Knob("first_token_ms", float, _non_negative, "delay from arrival to the first token"),
    _Knob("token_ms", float, _non_negative, "pace between tokens after the first"),
    _Knob("tokens", int, _positive, "tokens per answer (max_tokens can cut it shorter)"),
    _Knob("jitter", float, _fraction, "each delay is spread uniformly by +/- this fraction"),
    _Knob("seed", int, _any, "seed for faults and jitter; same seed, same sequence"),
    _Knob("error_rate", float, _fraction, "share of model requests answered 500"),
    _Knob(
        "timeout_rate",
        float,
        _fraction,
        "share of model requests held open until the client leaves",
    ),
    _Knob(
        "rate_limit_rate", float, _fraction, "share of model requests answered 429 with Retry-After"
    ),
    _Knob("stall_after", int, _non_negative, "tokens of an answer before it stalls (0: none)"),
    _Knob("stall_ms", float, _non_negative, "how long an answer stalls after stall_after tokens"),
    _Knob(
        "embedding_dim",
        int,
        _positive,
        "width of every embedding vector, whatever the model (unset: the model's real width, "
        "768 for models the stub does not know)",
    ),
    _Knob("processes", int, _positive, "processes sharing the port via SO_REUSEPORT"),
)


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ConfigError(message)


def build_parser() -> argparse.ArgumentParser:
    """The command line, with each knob's default and environment variable in its help."""
    defaults = StubConfig()
    parser = _OneLineParser(
        prog="python -m stub",
        description="An OpenAI-compatible model provider, slow on purpose by a stated amount.",
    )
    for knob in KNOBS:
        parser.add_argument(
            knob.flag,
            default=None,
            metavar=knob.field.split("_")[-1].upper(),
            help=f"{knob.help} (default {getattr(defaults, knob.field)}, env {knob.env})",
        )
    return parser


def parse_config(argv: Sequence[str], environ: Mapping[str, str] = os.environ) -> StubConfig:
    """Flags win over environment variables, which win over defaults; raise ConfigError if bad."""
    args = build_parser().parse_args(argv)
    values: dict[str, Any] = {}
    for knob in KNOBS:
        raw = getattr(args, knob.field)
        source = knob.flag
        if raw is None and knob.env in environ:
            raw, source = environ[knob.env], knob.env
        if raw is None:
            continue
        try:
            value = knob.convert(raw)
        except ValueError:
            kind = "an integer" if knob.convert is int else "a number"
            raise ConfigError(f"{source} must be {kind}, got {raw!r}") from None
        problem = knob.check(value)
        if problem:
            raise ConfigError(f"{source} {problem}, got {raw}")
        values[knob.field] = value
    config = StubConfig(**values)
    faults = config.error_rate + config.timeout_rate + config.rate_limit_rate
    if faults > 1.0:
        raise ConfigError(
            f"--error-rate + --timeout-rate + --rate-limit-rate must be <= 1, got {faults:g}"
        )
    return config


def describe(config: StubConfig) -> str:
    """One line stating every knob, printed at start so a run's log says what the model did."""
    return " ".join(f"{f.name}={getattr(config, f.name)}" for f in fields(config))
