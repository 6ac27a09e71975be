"""TLS as a deployment behind its own CA serves it: one trust for every connection the kit makes.

A real TLS front (tests/support/tls_front.py, a process that ends TLS and passes bytes
to the hostile server behind it, counting full and resumed handshakes) serves
certificates made for the test (tests/support/certificates.py): one signed by a
private CA for 127.0.0.1, one for another name, one from a CA nobody named. The
kit's transport keeps one connection alive over TLS for many reads, a chat turn's
own connection resumes the session, and requests (the setup clients and probes)
trusts exactly what the transport trusts, told by --ca-file, SSL_CERT_FILE or
REQUESTS_CA_BUNDLE; an untrusted or mismatched certificate is one line naming the
problem and the option, before anything else is asked.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from gevent import ssl

from engine import trust
from engine.http import HttpCall, HttpTransport
from engine.http1 import Answer
from engine.trust import CA_FILE_ENV, Trust, TrustError, certificate_refusal, trust_from
from engine.websocket import PeerClosed, WebSocket
from inputs.fixture import Fixture
from stack.processes import ROOT
from tests.support.certificates import Certificates, make_certificates
from tests.support.counting_server import CountingServer, started
from tests.support.hostile_server import BODY
from tests.support.transport import MAX_BODY
from workloads.setup_client import APIUnreachable, SetupClient

pytestmark = pytest.mark.system

# OpenSSL's words for each bad certificate, as the refusal quotes them.
UNTRUSTED = "unable to get local issuer certificate"
MISMATCHED = "IP address mismatch, certificate is not valid for '127.0.0.1'"


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certificates"))


@pytest.fixture(scope="module")
def hostile() -> Iterator[CountingServer]:
    with started("tests.support.hostile_server") as server:
        yield server


@contextlib.contextmanager
def _front(hostile: CountingServer, pair) -> Iterator[CountingServer]:
    port = str(urlsplit(hostile.url).port)
    with started("tests.support.tls_front", port, str(pair[0]), str(pair[1])) as front:
        front.url = front.url.replace("http://", "https://")
        yield front


@pytest.fixture(scope="module")
def good(hostile, certs) -> Iterator[CountingServer]:
    """The front with a certificate the test CA signed for 127.0.0.1."""
    with _front(hostile, certs.loopback) as front:
        yield front


@pytest.fixture(scope="module")
def untrusted(hostile, certs) -> Iterator[CountingServer]:
    with _front(hostile, certs.unknown_ca) as front:
        yield front


@pytest.fixture(scope="module")
def mismatched(hostile, certs) -> Iterator[CountingServer]:
    with _front(hostile, certs.elsewhere) as front:
        yield front


@pytest.fixture
def process_trust():
    """Each test sets the process's trust as it needs; the environment's comes back after."""
    yield
    trust.use(trust_from(None, False))


def _tls(url: str, chosen: Trust) -> HttpTransport:
    return HttpTransport(url, max_body=MAX_BODY, trust=chosen)


def _grown(front: CountingServer, before: dict) -> dict:
    after = front.counts()
    return {name: after[name] - before.get(name, 0) for name in after}


def test_many_reads_share_one_kept_alive_tls_connection_and_one_handshake(good, certs):
    before = good.counts()
    http = _tls(good.url, trust_from(str(certs.ca), False))
    for _ in range(20):
        assert http.send(HttpCall("GET", "/ok"), timeout_s=10) == Answer(200, BODY)
    assert (http.stats.opened, http.stats.tls_handshakes, http.stats.tls_resumed) == (1, 1, 0)
    grown = _grown(good, before)
    assert (grown.get("full"), grown.get("resumed", 0), grown.get("connections")) == (1, 0, 1)
    http.close()


def test_each_chat_turns_own_connection_resumes_the_tls_session(good, certs):
    """A chat turn opens a connection of its own (never pooled, never re-sent): after the
    first, each resumes the session instead of a full handshake, as a browser's would."""
    before = good.counts()
    http = _tls(good.url, trust_from(str(certs.ca), False))
    turns = 10
    for _ in range(turns):
        ws = WebSocket.open(http, good.url.replace("https", "wss") + "/ws/interim", [], 10.0)
        assert ws.receive() == "hello"
        with pytest.raises(PeerClosed):
            ws.receive()
        ws.close()
    for _ in range(3):
        with http.stream(HttpCall("GET", "/ok"), socket_timeout_s=10) as answer:
            assert answer.read() == BODY
    grown = _grown(good, before)
    assert grown.get("full") == 1 and grown.get("resumed") == turns + 3 - 1, grown
    assert (http.stats.tls_handshakes, http.stats.tls_resumed) == (1, turns + 3 - 1)


def test_an_untrusted_or_mismatched_certificate_is_one_line_naming_it_and_the_option(
    untrusted, mismatched, certs
):
    told = trust_from(str(certs.ca), False)
    origin = untrusted.url.replace("http://", "https://")
    assert certificate_refusal(untrusted.url, told) == (
        f"{origin}: its TLS certificate is not trusted ({UNTRUSTED}): give the CA certificate it "
        "is signed by with --ca-file (or SSL_CERT_FILE), or pass --insecure to test without "
        "verifying"
    )
    assert certificate_refusal(mismatched.url, told) == (
        f"{mismatched.url}: its TLS certificate is not for this host ({MISMATCHED}): reach it by "
        "a name its certificate holds, or pass --insecure to test without verifying"
    )
    with pytest.raises(ssl.SSLCertVerificationError):
        _tls(untrusted.url, told).send(HttpCall("GET", "/ok"), timeout_s=10)
    # --insecure: nothing verified, and nothing refused.
    assert certificate_refusal(untrusted.url, Trust(insecure=True)) is None
    answer = _tls(untrusted.url, Trust(insecure=True)).send(HttpCall("GET", "/ok"), timeout_s=10)
    assert answer == Answer(200, BODY)


def test_requests_trusts_what_the_transport_trusts_from_each_place_a_ca_is_named(
    good, untrusted, certs, tmp_path, process_trust
):
    ca = str(certs.ca)
    named = {
        "--ca-file": trust_from(ca, False, {}),
        "SSL_CERT_FILE": trust_from(None, False, {"SSL_CERT_FILE": ca}),
        "REQUESTS_CA_BUNDLE": trust_from(None, False, {"REQUESTS_CA_BUNDLE": ca}),
    }
    for source, chosen in named.items():
        assert (chosen.source, chosen.ca_file) == (source, ca)
        trust.use(chosen)
        with SetupClient(good.url) as client:
            assert client.request("GET", "/ok").content == BODY
        assert _tls(good.url, trust.current()).send(HttpCall("GET", "/ok"), timeout_s=10)[0] == 200
    # SSL_CERT_FILE first, as OpenSSL reads it: a bundle for requests alone does not win.
    both = trust_from(None, False, {"SSL_CERT_FILE": ca, "REQUESTS_CA_BUNDLE": "/elsewhere"})
    assert both.source == "SSL_CERT_FILE"
    trust.use(named["SSL_CERT_FILE"])
    with SetupClient(untrusted.url) as client, pytest.raises(APIUnreachable) as refused:
        client.request("GET", "/ok")
    assert str(refused.value) == f"{untrusted.url}: TLS certificate not trusted: {UNTRUSTED}"
    not_pem = tmp_path / "not.pem"
    not_pem.write_text("no certificate here\n")
    for path, words in (
        (str(tmp_path / "missing.pem"), "cannot read"),
        (str(not_pem), "holds no PEM certificate"),
    ):
        with pytest.raises(TrustError, match=f"^--ca-file: .*{words}"):
            trust_from(path, False)


def _loadkit(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "loadkit", *args],
        cwd=ROOT,
        env={**os.environ, "LOAD_PASSWORD": "x", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_seed_and_preflight_refuse_an_untrusted_certificate_before_asking_anything(
    untrusted, hostile, tmp_path
):
    fixture = tmp_path / "fixture.json"
    seeded = {"org_id": "o", "agent_id": "a", "model_profile_id": "p", "collection_name": "c"}
    Fixture(api_url=untrusted.url, stub_url=hostile.url, seeded={**seeded, "documents": 0}).save(
        fixture
    )
    before = hostile.counts()
    env = dict.fromkeys(CA_FILE_ENV, "")
    line = f"its TLS certificate is not trusted ({UNTRUSTED}): give the CA certificate"
    seed = _loadkit("seed", "--api-url", untrusted.url, "--fixture", str(fixture), env=env)
    assert seed.returncode == 1 and seed.stderr.startswith(f"seed: {untrusted.url}: {line}")
    assert len(seed.stderr.splitlines()) == 1, seed.stderr
    preflight = _loadkit("preflight", "--fixture", str(fixture), env=env)
    assert preflight.returncode == 1, preflight.stderr
    assert preflight.stderr.startswith(f"preflight: {untrusted.url}: {line}")
    assert len(preflight.stderr.splitlines()) == 1, preflight.stderr
    # Nothing reached the platform behind the front.
    assert hostile.counts() == before
