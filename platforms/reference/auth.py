"""Passwords and bearer tokens.

Passwords are stored as scrypt hashes only. Tokens are HMAC-signed with a key
made when the process starts, so no token is ever written anywhere and a
restart signs everyone out (a run signs in again; it never stores a token).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time

# scrypt cost: strong enough to be honest, cheap enough (~10 ms) that sign-in is not the test.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
# Access tokens outlive the longest run; refresh tokens a working day.
ACCESS_TTL_S = 12 * 3600
REFRESH_TTL_S = 24 * 3600


def hash_password(password: str) -> str:
    """A salted scrypt hash in one string: ``scrypt$salt$hash`` (hex)."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P)
    return f"scrypt${salt.hex()}${digest.hex()}"


def check_password(password: str, stored: str) -> bool:
    """True when ``password`` matches the stored hash (constant-time compare)."""
    _scheme, salt, digest = stored.split("$")
    candidate = hashlib.scrypt(
        password.encode(), salt=bytes.fromhex(salt), n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P
    )
    return hmac.compare_digest(candidate.hex(), digest)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TokenSigner:
    """Issues and checks signed tokens with the configured key, or one that lives only in
    this process (``key`` empty)."""

    def __init__(self, key: str = "") -> None:
        self._key = key.encode() if key else secrets.token_bytes(32)

    def _sign(self, payload: bytes) -> str:
        return _b64(hmac.new(self._key, payload, hashlib.sha256).digest())

    def issue(self, user_id: str, kind: str) -> str:
        """A token for ``user_id`` of ``kind`` ("access" or "refresh") with its expiry inside."""
        ttl = ACCESS_TTL_S if kind == "access" else REFRESH_TTL_S
        payload = json.dumps({"sub": user_id, "kind": kind, "exp": int(time.time()) + ttl}).encode()
        return f"{_b64(payload)}.{self._sign(payload)}"

    def user_id(self, token: str, kind: str = "access") -> str | None:
        """The user a valid, unexpired token of ``kind`` names; None for anything else."""
        try:
            encoded, signature = token.split(".")
            payload = _unb64(encoded)
        except ValueError:
            return None
        if not hmac.compare_digest(signature, self._sign(payload)):
            return None
        claims = json.loads(payload)
        if claims.get("kind") != kind or claims.get("exp", 0) < time.time():
            return None
        return claims.get("sub")
