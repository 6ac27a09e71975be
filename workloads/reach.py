"""Reaching a platform and signing in, the kit's way for every platform and every step.

The load processes, seed, preflight and ``loadkit check-platform`` all ask the same three
things before anything else, in this order, each refused in one line with its fix: does
the API answer (its unauthenticated ``HEALTH``: an address, a stopped server, a wrong
port), is the sign-in accepted (the platform's ``SignIn``, e.g. AgenticOS's login), and is
the credential accepted (the dialect's ``check``, one cheap read: a 401 or 403 names
``LOAD_PASSWORD`` and what it holds on that platform). Written once here, so no platform
package repeats a reachability check per step, and a platform without sign-in is never
asked for a password.
"""

from __future__ import annotations

from engine.dialect_kit import words
from engine.http import HttpCall
from engine.http1 import Answer, failure_detail
from engine.seam import Dialect, DialectError, Platform
from engine.sign_in import Credential, SignInRefused
from inputs.fixture import PASSWORD_ENV

# Seconds a setup request may take (health, sign-in, the check); a load request's own timeout
# is the scenario's.
SETUP_TIMEOUT_S = 30.0
# A health answer that says the server is there: it answered, even if it wants a credential.
UP = (*range(200, 300), 401, 403)


class NotReached(DialectError):
    """The API did not answer, or answered its health path as something else would."""


class CredentialRefused(DialectError):
    """The platform refused the credential (or the sign-in); one line naming the fix."""


def health(record: Platform, dialect: Dialect, fix: str) -> None:
    """The API answers its unauthenticated health path (any answer of a server that is there,
    a 401 included); NotReached naming ``fix`` (how to point the kit elsewhere) if not."""
    path = dialect.HEALTH
    if path is None:
        return
    started = f" ({record.started_by})" if record.started_by else ""
    try:
        answer = dialect.http.send(HttpCall("GET", path, b"", {}), SETUP_TIMEOUT_S)
    except Exception as exc:
        raise NotReached(
            f"{record.name} at {dialect.base_url} does not answer {path} "
            f"({failure_detail(exc)}): start it{started} or {fix}"
        ) from None
    if answer.status not in UP:
        raise NotReached(
            f"{record.name} at {dialect.base_url} answers {path} with HTTP {answer.status}: "
            f"is it {record.name}? {fix}"
        )


def signed_in(record: Platform, dialect: Dialect, email: str, secret: str, fix: str) -> None:
    """Reach the API, sign in and check the credential, leaving the dialect signed in
    (``Dialect.signed_in``); NotReached or CredentialRefused in one line otherwise."""
    health(record, dialect, fix)
    sign_in = dialect.sign_in

    def send(call: HttpCall) -> Answer:
        return dialect.http.send(call, SETUP_TIMEOUT_S)

    try:
        auth = sign_in.headers(send, dialect.seeded, email, secret)
    except SignInRefused as exc:
        raise CredentialRefused(f"{record.name}: {exc}") from None
    except Exception as exc:
        raise NotReached(
            f"{record.name}: sign-in got no usable answer ({failure_detail(exc)}); {fix}"
        ) from None
    dialect.signed_in(auth, secret)
    check = dialect.check()
    if check is None:
        return
    call = HttpCall(check.method, check.path, check.body, {**check.headers, **auth})
    try:
        answer = dialect.http.send(call, SETUP_TIMEOUT_S)
    except Exception as exc:
        raise NotReached(
            f"{record.name} at {dialect.base_url} does not answer {check.method} {check.path} "
            f"({failure_detail(exc)}): {fix}"
        ) from None
    if answer.status in (401, 403):
        asks = record.credential(dialect.seeded)
        who = " (and --email)" if asks is Credential.USER else ""
        raise CredentialRefused(
            f"{record.name} refused the credential: HTTP {answer.status} to {check.method} "
            f"{check.path}; export {PASSWORD_ENV}{who} with {sign_in.hint}"
        )
    if not 200 <= answer.status < 300:
        said = words(answer.body.decode("utf-8", "replace")) if answer.body else ""
        raise NotReached(
            f"{record.name}: {check.method} {check.path} answered HTTP {answer.status}"
            f"{': ' + said if said else ''}; {fix}"
        )
