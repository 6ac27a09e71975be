"""Which TLS certificates the kit trusts: one answer for every connection it makes.

The load (engine/http.py, and the chat WebSocket through it) speaks TLS through an
ssl context, which reads SSL_CERT_FILE; seed, preflight, follow-up and the probes
use requests, which ignores it and reads REQUESTS_CA_BUNDLE (else certifi's
bundle). So a private CA named one way was trusted by one side only, and the run
refused with the wrong fix. Here the trust is resolved once: ``--ca-file``, else
SSL_CERT_FILE, else REQUESTS_CA_BUNDLE, else each library's default store; and
every client takes it from here. It is the process's (``use``, ``current``) on
purpose, as SSL_CERT_FILE is OpenSSL's: the clients are made in a dozen places
across every platform's package, and none may trust differently.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import requests
from gevent import socket, ssl

if TYPE_CHECKING:
    # What requests' stubs name the settings merge_environment_settings returns.
    from requests.sessions import _Settings

# Where a CA file is named when --ca-file is not given, in the order they are read: OpenSSL's,
# then the two requests reads.
CA_FILE_ENV = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
# The two options, as every command that connects offers them (loadkit run, seed, preflight):
# what each does, and its default (runner/options.py says the default after the rest).
CA_FILE_ABOUT = (
    "PEM file of the CA certificates every TLS connection trusts instead of the default store"
)
CA_FILE_DEFAULT = f"${' or $'.join(CA_FILE_ENV)} where set, else the default store"
CA_FILE_HELP = f"{CA_FILE_ABOUT} (default: {CA_FILE_DEFAULT})"
INSECURE_ABOUT = (
    "verify no TLS certificate; said once, and in a run's report, since any server on the way "
    "could have answered for the platform"
)
INSECURE_HELP = f"{INSECURE_ABOUT} (default: off)"
# Seconds the check before load waits for a TLS handshake.
CHECK_TIMEOUT_S = 10.0
# OpenSSL's codes for a certificate that is valid but not for the host asked for (by name,
# by e-mail, by IP address).
_NOT_FOR_HOST = (62, 63, 64)


class TrustError(ValueError):
    """A CA file that cannot be used, or a certificate the kit will not trust: one line."""


@dataclass(frozen=True)
class Trust:
    """The certificates the kit trusts: a CA file's (``ca_pem``, named by ``source`` as
    ``ca_file``), or the default store's; or none at all when ``insecure``."""

    ca_file: str = ""
    source: str = ""
    ca_pem: str = ""
    insecure: bool = False

    def context(self) -> ssl.SSLContext:
        """A client context that verifies against this trust (built from the certificates
        themselves, so a process on another machine needs no file): gevent's, so its sockets
        yield to the loop whether or not the process is monkey-patched, with what
        ``ssl.create_default_context`` sets (TLS 1.2 or newer, host names checked)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif self.ca_pem:
            context.load_verify_locations(cadata=self.ca_pem)
        else:
            context.load_default_certs()
        return context

    @property
    def verify(self) -> bool | str:
        """requests' ``verify`` for this trust: False, the CA file, or True (its default)."""
        if self.insecure:
            return False
        return self.ca_file or True

    def words(self) -> str:
        """What run.json and the report say was trusted."""
        if self.insecure:
            return "nothing: certificates not verified (--insecure)"
        if self.ca_file:
            return f"the CA file {self.ca_file} ({self.source})"
        return "the default certificate store"


def trust_from(
    ca_file: str | None, insecure: bool, environ: Mapping[str, str] = os.environ
) -> Trust:
    """The trust ``--ca-file`` and ``--insecure`` (or the environment) name; TrustError
    when the file named cannot be read as PEM certificates."""
    source = "--ca-file"
    if not ca_file:
        source, ca_file = next(((n, environ[n]) for n in CA_FILE_ENV if environ.get(n)), ("", ""))
    if insecure:
        return Trust(insecure=True)
    if not ca_file:
        return Trust()
    try:
        with open(ca_file, encoding="ascii", errors="replace") as pem:
            text = pem.read()
        ssl.create_default_context(cadata=text)
    except ssl.SSLError:
        raise TrustError(
            f"{source}: {ca_file} holds no PEM certificate; give the CA certificate the "
            "platform's is signed by"
        ) from None
    except OSError as exc:
        raise TrustError(
            f"{source}: cannot read {ca_file} ({exc.strerror}); give a readable file of the "
            "CA certificate the platform's is signed by"
        ) from None
    return Trust(ca_file=ca_file, source=source, ca_pem=text)


_current: Trust | None = None


def use(trust: Trust) -> None:
    """Make ``trust`` this process's, for every client made from now on."""
    global _current
    _current = trust
    if trust.insecure:
        # The kit says it once, in its own words (and the report keeps it), not per request.
        import urllib3

        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)


def current() -> Trust:
    """This process's trust: what ``use`` set, else what the environment names."""
    global _current
    if _current is None:
        _current = trust_from(None, False)
    return _current


class _TrustedSession(requests.Session):
    """requests lets REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE override a session's own
    ``verify`` (psf/requests#3829); the kit's trust was resolved from them already, so
    here the session's stands."""

    def merge_environment_settings(
        self, url: Any, proxies: Any, stream: Any, verify: Any, cert: Any
    ) -> _Settings:
        settings = super().merge_environment_settings(url, proxies, stream, verify, cert)
        settings["verify"] = self.verify if verify is None else verify
        return settings


def session() -> requests.Session:
    """A requests session that trusts what the kit trusts: every setup client and probe
    (seed, preflight, follow-up, the stub's and /metrics probes) talks through one."""
    made = _TrustedSession()
    made.verify = current().verify
    return made


def certificate_refusal(url: str, trust: Trust) -> str | None:
    """One line saying why ``url``'s certificate is not trusted, with the fix; None when it
    is, when ``url`` is not https, or when nothing answers there (the caller's own checks
    say that). One TLS handshake, made before any load."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "wss") or not parts.hostname or trust.insecure:
        return None
    address = (parts.hostname, parts.port or 443)
    try:
        with (
            socket.create_connection(address, timeout=CHECK_TIMEOUT_S) as sock,
            trust.context().wrap_socket(sock, server_hostname=parts.hostname),
        ):
            return None
    except ssl.SSLCertVerificationError as exc:
        return refusal(f"{parts.scheme}://{parts.netloc}", exc)
    except (OSError, ssl.SSLError):
        return None


def refuse_untrusted(trust: Trust, *urls: str | None) -> None:
    """Raise TrustError with the first of ``urls`` whose certificate is not trusted."""
    for url in urls:
        if url and (line := certificate_refusal(url, trust)):
            raise TrustError(line)


def refusal(origin: str, exc: ssl.SSLCertVerificationError) -> str:
    """The one line for a certificate the kit will not trust: what OpenSSL found, and the
    option that fixes it."""
    problem = (exc.verify_message or str(exc)).rstrip(".")
    if exc.verify_code in _NOT_FOR_HOST:
        return (
            f"{origin}: its TLS certificate is not for this host ({problem}): reach it by a "
            "name its certificate holds, or pass --insecure to test without verifying"
        )
    return (
        f"{origin}: its TLS certificate is not trusted ({problem}): give the CA certificate "
        "it is signed by with --ca-file (or SSL_CERT_FILE), or pass --insecure to test "
        "without verifying"
    )


def certificate_problem(exc: BaseException) -> str | None:
    """OpenSSL's words for a certificate failure anywhere in an exception's chain (requests
    wraps urllib3's error, which wraps ssl's), None when there is none."""
    seen: set[int] = set()
    pending: list[object] = [exc]
    while pending:
        error = pending.pop()
        if not isinstance(error, BaseException) or id(error) in seen:
            continue
        seen.add(id(error))
        if isinstance(error, ssl.SSLCertVerificationError):
            return (error.verify_message or str(error)).rstrip(".")
        pending += [error.__cause__, error.__context__, *error.args]
        pending += [getattr(error, "reason", None)]
    return None
