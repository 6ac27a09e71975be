"""The client setup steps (seed, preflight, follow-up) talk to a platform with, outside the load.

Not the load path (that is each platform's dialect, on the engine's transport):
this one favours clear failures over speed. Every platform's setup client is
the same plumbing (one pooled session, a timeout per call, the statuses the
caller expects, every refusal one line with method, path, status and the
server's own words) and differs only in where its API is rooted and how its
error bodies carry their message; a platform's client subclasses ``SetupClient``
and overrides just those. Its headers are the ones the platform's sign-in made
(engine/sign_in.py, through ``send``), so a credential is spelled once, and
``typed`` decodes a body with the same msgspec shapes the dialect holds answers to.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import sys
from collections.abc import Mapping
from typing import Any, Self, TypeVar

import requests

from engine import trust
from engine.http import HttpCall
from engine.http1 import Answer
from engine.run_record import INSECURE_WARNING
from workloads.answers import Decodes, held

T = TypeVar("T")

# Seconds for an ordinary API call; runs wait for the model, so they get longer.
DEFAULT_TIMEOUT_S = 30.0
RUN_TIMEOUT_S = 120.0
# The statuses an ordinary call expects; anything else is an APIError.
SUCCESS = (200, 201, 202, 204)
# Every status there is: for calls whose caller reads the status itself (a webhook's answer).
ANY_STATUS = tuple(range(100, 600))
# The platform's words are cut to this many characters, so an error stays one line.
MESSAGE_MAX = 200


class APIUnreachable(Exception):
    """Nothing answered at the API's address (refused, timed out, DNS)."""


class APIError(Exception):
    """The API answered with a status the caller did not expect."""

    def __init__(
        self, method: str, path: str, status: int, message: str, headers: Mapping[str, str]
    ) -> None:
        super().__init__(f"{method} {path} answered HTTP {status}: {message}")
        self.method = method
        self.path = path
        self.status = status
        self.message = message
        # Case-insensitive (requests' own mapping): look up "Retry-After" as spelled.
        self.headers = headers


def add_trust_options(parser: argparse.ArgumentParser) -> None:
    """--ca-file and --insecure, as every command that connects offers them."""
    parser.add_argument("--ca-file", default=None, metavar="PEM", help=trust.CA_FILE_HELP)
    parser.add_argument("--insecure", action="store_true", help=trust.INSECURE_HELP)


def trust_given(args: argparse.Namespace, prog: str, *urls: str | None) -> int | None:
    """Make the trust ``args`` name this process's and check ``urls``' certificates: None
    when the command may go on, else its exit code after one line (2: a CA file that cannot
    be used; 1: a certificate not trusted)."""
    try:
        chosen = trust.trust_from(args.ca_file, args.insecure)
    except trust.TrustError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    trust.use(chosen)
    if chosen.insecure:
        print(f"{prog}: {INSECURE_WARNING}", file=sys.stderr)
    try:
        trust.refuse_untrusted(chosen, *urls)
    except trust.TrustError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    return None


def signature(secret: str, body: bytes) -> str:
    """A webhook body's HMAC-SHA256 as GitHub and Meta send it: ``sha256=<hex>``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class SetupClient:
    """One deployment, one pooled session, the headers sign-in made; a platform overrides the
    two hooks below."""

    # Where the platform's API is rooted under its URL ("" for the root).
    prefix = ""

    def __init__(
        self,
        api_url: str,
        auth: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.auth = dict(auth or {})
        self.timeout = timeout
        self._http = trust.session()

    def close(self) -> None:
        """Drop pooled connections."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def send(self, call: HttpCall) -> Answer:
        """One exchange of the engine's shape at the API's root (a sign-in's login), whatever
        its status; APIUnreachable when nothing answers."""
        try:
            resp = self._http.request(
                call.method,
                f"{self.api_url}{call.path}",
                data=call.body,
                headers=dict(call.headers),
                timeout=self.timeout,
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            raise APIUnreachable(f"{self.api_url}: {type(exc).__name__}") from exc
        return Answer(resp.status_code, resp.content, resp.headers.get("location"))

    def typed(self, resp: requests.Response, shape: Decodes[T]) -> T:
        """The body as ``shape`` (the dialect's own Struct), or APIError naming the misfit."""
        body = held(resp.content, shape)
        if isinstance(body, str):
            path = resp.request.path_url if resp.request else "?"
            raise APIError(resp.request.method or "", path, resp.status_code, body, resp.headers)
        return body

    def error_words(self, body: object) -> str | None:
        """The message in a decoded JSON error body: FastAPI's ``detail`` here."""
        if isinstance(body, dict) and "detail" in body:
            return str(body["detail"])
        return None

    def request(
        self,
        method: str,
        path: str,
        *,
        expect: tuple[int, ...] = SUCCESS,
        timeout: float | None = None,
        auth: bool = True,
        **kwargs: Any,
    ) -> requests.Response:
        """Send one request under the prefix; raise APIUnreachable, or APIError unless the
        status is ``expect``ed. ``auth=False`` sends it without the platform's credential."""
        headers = {**(self.auth if auth else {}), **(kwargs.pop("headers", None) or {})}
        try:
            resp = self._http.request(
                method,
                f"{self.api_url}{self.prefix}{path}",
                headers=headers,
                timeout=timeout or self.timeout,
                **kwargs,
            )
        except requests.RequestException as exc:
            problem = trust.certificate_problem(exc)
            said = f"TLS certificate not trusted: {problem}" if problem else type(exc).__name__
            raise APIUnreachable(f"{self.api_url}: {said}") from exc
        if resp.status_code not in expect:
            message = self._message(resp)
            raise APIError(method, self.prefix + path, resp.status_code, message, resp.headers)
        return resp

    def _message(self, resp: requests.Response) -> str:
        """The server's own words, else the start of the body, on one line."""
        try:
            body = resp.json()
        except ValueError:
            return resp.text[:MESSAGE_MAX].strip() or resp.reason
        words = self.error_words(body)
        return (words if words is not None else str(body))[:MESSAGE_MAX]
