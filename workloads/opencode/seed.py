"""Seed opencode: write the corpus into the project folder it serves and write the fixture.

opencode has no API to add documents: it serves a folder of files and searches
them. So the seed asks the server which folder it serves (``GET /path``) and
writes the synthetic documents there, one file each under ``loadkit-docs/``; the
folder must be on this machine (seed where opencode runs). The model every message
names is the one opencode is configured with (``GET /config``). Idempotent: a
document already there with the same text is left alone.

    LOAD_PASSWORD=... python -m workloads.opencode.seed --api-url http://127.0.0.1:4096
"""

from __future__ import annotations

import sys
from pathlib import Path

from inputs.fixture import Fixture
from workloads.corpus import document_name, document_text
from workloads.opencode.client import OpenCodeClient
from workloads.opencode.fixture import OpenCodeSeeded
from workloads.seed import SeedError, SeedOptions, seed_command, seeded_fixture, wait_for_api
from workloads.setup_client import APIError

PLATFORM = "opencode"
DEFAULT_API_URL = "http://127.0.0.1:4096"
# The corpus's folder under the project folder.
CORPUS = "loadkit-docs"


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


def seed(options: SeedOptions, password: str) -> Fixture:
    """Find the project folder and model, write the corpus; the fixture, or SeedError."""
    api_url = options.api_url
    with OpenCodeClient(api_url, password) as client:
        wait_for_api(client.answers, api_url, options.wait_s, "make opencode")
        try:
            client.health()
            directory = str(client.project().get("directory") or "")
            model = str(client.config().get("model") or "")
        except APIError as exc:
            raise SeedError(
                f"{exc}: export LOAD_PASSWORD with the server's password (OPENCODE_SERVER_PASSWORD)"
            ) from None
    provider, _, model_id = model.partition("/")
    if not (provider and model_id):
        raise SeedError(
            f"opencode at {api_url} names no model ({model!r} in GET /config): configure one "
            "(platforms/opencode does: stub/stub)"
        )
    if not Path(directory).is_dir():
        raise SeedError(
            f"the project folder opencode serves ({directory!r}) is not on this machine: seed "
            "where opencode runs (the corpus is written into that folder)"
        )
    written = write_corpus(Path(directory) / CORPUS, options.documents)
    print(f"seed: opencode model {model}; {CORPUS}/ in {directory} ({written} written)")
    own = OpenCodeSeeded(directory, CORPUS, options.documents, provider, model_id)
    return seeded_fixture(api_url, options.stub_url, PLATFORM, own)


main = seed_command(
    platform=PLATFORM,
    description="Write the corpus into the project folder opencode serves and write the "
    "fixture (password from LOAD_PASSWORD).",
    api_url=DEFAULT_API_URL,
    stub_help="the stub as opencode reaches it, for the record",
    seed=seed,
)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
