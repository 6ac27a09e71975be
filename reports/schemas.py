"""The JSON Schemas of the files the kit writes for machines (summary.json, sweep.json), each
generated from the type that writes and reads the file, never edited by hand: ``python -m
reports schema`` writes them all, and a test holds each committed schema to its type.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from reports.summary import SCHEMA_FILE as SUMMARY_SCHEMA
from reports.summary import Summary
from reports.sweep.record import SCHEMA_FILE as SWEEP_SCHEMA
from reports.sweep.record import Sweep

# A schema's $id: the repository, then the schema file's path in it.
REPOSITORY = "https://github.com/agent-loadkit/agent-loadkit/"
ROOT = Path(__file__).resolve().parent.parent
# Each schema file, and the type it is generated from.
SCHEMAS: dict[Path, type[msgspec.Struct]] = {SUMMARY_SCHEMA: Summary, SWEEP_SCHEMA: Sweep}


def schema(file: Path) -> dict[str, Any]:
    """The JSON Schema (Draft 2020-12) held in ``file``, generated from its type."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": REPOSITORY + file.relative_to(ROOT).as_posix(),
        **msgspec.json.schema(SCHEMAS[file]),
    }


def schema_text(file: Path) -> str:
    """The schema as ``file`` holds it: two-space indented JSON."""
    return json.dumps(schema(file), indent=2) + "\n"
