"""What the server needs from its operator: where the stub is, its key, and what it speaks.

Read from ``A2A_``-prefixed environment variables (the key too, so it never
appears in argv), as the other platforms' settings are; the launcher's options
override the protocol choice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# Which A2A versions the server answers: both (a2a-sdk's v0.3 compatibility on), or one only,
# so a client can be tested against a server that refuses the other version's method names.
PROTOCOLS = ("both", "1.0", "0.3")
KEY_ENV = "A2A_API_KEY"


class AppSettingsError(ValueError):
    """A setting the server cannot start without; one line naming the variable and the fix."""


@dataclass(frozen=True)
class AppSettings:
    """Where the stub is, which versions are served, whether streaming is declared, the key."""

    stub_url: str
    protocol: str = "both"
    # The card's capabilities.streaming; False makes the SDK refuse the streaming methods.
    streaming: bool = True
    # The bearer key every route but the card and /health needs; None serves them open.
    key: str | None = None
    # The base URL the card's interfaces name; None: the address the server is bound to.
    public_url: str | None = None


def settings_from_env(protocol: str | None = None) -> AppSettings:
    """A2A_STUB_URL, A2A_PROTOCOL, A2A_STREAMING, A2A_PUBLIC_URL and A2A_API_KEY, or
    AppSettingsError. ``protocol`` (the launcher's option) wins over A2A_PROTOCOL."""
    chosen = protocol or os.environ.get("A2A_PROTOCOL", "both")
    if chosen not in PROTOCOLS:
        raise AppSettingsError(
            f"A2A_PROTOCOL / --protocol: {chosen!r} is not one of {', '.join(PROTOCOLS)}"
        )
    streaming = os.environ.get("A2A_STREAMING", "true").lower()
    if streaming not in ("true", "false"):
        raise AppSettingsError(f"A2A_STREAMING: {streaming!r} is not true or false")
    return AppSettings(
        stub_url=os.environ.get("A2A_STUB_URL", "http://127.0.0.1:4020").rstrip("/"),
        protocol=chosen,
        streaming=streaming == "true",
        key=os.environ.get(KEY_ENV) or None,
        public_url=os.environ.get("A2A_PUBLIC_URL", "").rstrip("/") or None,
    )
