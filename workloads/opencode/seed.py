"""What seeding makes on opencode: the corpus written into the project folder it serves.

opencode has no API to add documents: it serves a folder of files and searches
them. So the seed asks the server which folder it serves (``GET /path``) and
writes the synthetic documents there, one file each under ``loadkit-docs/``; the
folder must be on this machine (seed where opencode runs). The model every message
names is the one opencode is configured with (``GET /config``). Idempotent: a
document already there with the same text is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.seam import SeedError, SeedSetup
from workloads.corpus import document_name, document_text
from workloads.opencode.client import OpenCodeClient
from workloads.setup_client import APIError

DEFAULT_API_URL = "http://127.0.0.1:4096"
# The corpus's folder under the project folder.
CORPUS = "loadkit-docs"


@dataclass(frozen=True)
class OpenCodeSeeded:
    """What the seed found or wrote: paths and names, never the password."""

    # The project folder opencode serves (its GET /path ``directory``).
    directory: str
    # The folder under it holding the corpus, one file per document.
    corpus: str
    documents: int
    # The model each message names: opencode's provider and model ids ("stub", "stub").
    provider_id: str
    model_id: str


def write_corpus(folder: Path, documents: int) -> int:
    """Write the documents not there yet (or changed); how many were written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for index in range(documents):
        path, text = folder / document_name(index), document_text(index)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            written += 1
    return written


def make(setup: SeedSetup) -> OpenCodeSeeded:
    """Find the project folder and model, write the corpus; SeedError if it cannot."""
    with OpenCodeClient(setup.api_url, setup.auth) as client:
        try:
            directory = client.project().directory
            model = client.config().model
        except APIError as exc:
            raise SeedError(
                f"{exc}: export LOAD_PASSWORD with the server's password (OPENCODE_SERVER_PASSWORD)"
            ) from None
    provider, _, model_id = model.partition("/")
    if not (provider and model_id):
        raise SeedError(
            f"opencode at {setup.api_url} names no model ({model!r} in GET /config): configure "
            "one (platforms/opencode does: stub/stub)"
        )
    if not Path(directory).is_dir():
        raise SeedError(
            f"the project folder opencode serves ({directory!r}) is not on this machine: seed "
            "where opencode runs (the corpus is written into that folder)"
        )
    written = write_corpus(Path(directory) / CORPUS, setup.documents)
    print(f"seed: opencode model {model}; {CORPUS}/ in {directory} ({written} written)")
    return OpenCodeSeeded(directory, CORPUS, setup.documents, provider, model_id)
