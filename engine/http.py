"""HTTP for the workloads: one keep-alive client per process, sized to the dispatch pool.

geventhttpclient is used directly rather than through Locust's FastHttpUser: its
pool defaults to 10 connections per user and waiting for one is inside the timed
region, which is the hidden cap that turns an open-arrival run closed. Here the
client holds as many connections as the dispatcher holds greenlets, so a request
never waits for a socket, and each answer is classified into a sample's outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from geventhttpclient import HTTPClient
from geventhttpclient.url import URL

from engine.samples import FAILED, OK, SHED, Result

# Connect and socket timeouts are backstops only: each arrival runs under its own
# gevent timeout started when the request leaves, at the workload's timeout.
BACKSTOP_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class HttpCall:
    """One request as a dialect spells it: a path under the API's base URL, body and headers."""

    method: str
    path: str
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)


class HttpTransport:
    """Sends HttpCalls to one base URL over a pool of keep-alive connections."""

    def __init__(self, base_url: str, connections: int):
        url = URL(base_url)
        self._prefix = url.path.rstrip("/")
        self._client = HTTPClient.from_url(
            url,
            concurrency=max(1, connections),
            connection_timeout=BACKSTOP_TIMEOUT_S,
            network_timeout=BACKSTOP_TIMEOUT_S,
        )

    def send(self, call: HttpCall) -> tuple[int, bytes]:
        """Status and whole body of the answer; raises on a broken connection."""
        response = self._client.request(
            call.method, self._prefix + call.path, body=call.body, headers=call.headers
        )
        try:
            body = response.read()
        finally:
            response.release()
        return response.status_code, body

    def close(self) -> None:
        """Close every pooled connection (the run is over)."""
        self._client.close()


def classify(status: int, size: int) -> Result:
    """A 2xx is ok, a 429 is shed (the platform refused on purpose), anything else failed."""
    if 200 <= status < 300:
        return Result(status, OK, bytes=size)
    if status == 429:
        return Result(status, SHED, f"HTTP {status}", size)
    return Result(status, FAILED, f"HTTP {status}", size)
