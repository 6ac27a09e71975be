"""Certificates for the TLS tests, made by ``openssl`` into a test's own folder.

A private CA and a server certificate it signs for 127.0.0.1 (what a deployment
behind a company's own CA serves), one it signs for another name (a mismatch),
and one signed by a second CA nobody told the kit of (untrusted).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

# The subject alternative names of the certificate that is right for loopback.
LOOPBACK_NAMES = "IP:127.0.0.1,DNS:localhost"


@dataclass(frozen=True)
class Certificates:
    """The files: the CA the kit is told of, and three server certificate/key pairs."""

    ca: Path
    loopback: tuple[Path, Path]
    elsewhere: tuple[Path, Path]
    unknown_ca: tuple[Path, Path]


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=60)


def _ca(folder: Path, name: str) -> tuple[Path, Path]:
    cert, key = folder / f"{name}.pem", folder / f"{name}-key.pem"
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=keyCertSign",
    )  # fmt: skip
    return cert, key


def _server(folder: Path, name: str, names: str, ca: tuple[Path, Path]) -> tuple[Path, Path]:
    cert, key, request = folder / f"{name}.pem", folder / f"{name}-key.pem", folder / f"{name}.csr"
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", request, "-subj", f"/CN={name}",
    )  # fmt: skip
    extensions = folder / f"{name}.ext"
    extensions.write_text(f"subjectAltName={names}\nextendedKeyUsage=serverAuth\n")
    _openssl(
        "x509", "-req", "-in", request, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
        "-out", cert, "-days", "2", "-extfile", extensions,
    )  # fmt: skip
    return cert, key


def make_certificates(folder: Path) -> Certificates:
    """Make every certificate the TLS tests use in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca, other = _ca(folder, "test-ca"), _ca(folder, "unknown-ca")
    return Certificates(
        ca=ca[0],
        loopback=_server(folder, "loopback", LOOPBACK_NAMES, ca),
        elsewhere=_server(folder, "elsewhere", "DNS:elsewhere.example", ca),
        unknown_ca=_server(folder, "unknown", LOOPBACK_NAMES, other),
    )
