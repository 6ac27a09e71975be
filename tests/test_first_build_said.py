"""A platform's own environment, built by make on first use, is said in one line before the
build starts, with about how long it takes; a built one is reused without a word."""

from __future__ import annotations

import pytest

from stack.local import build_once

pytestmark = pytest.mark.system


def test_a_build_make_has_work_for_is_said_once_before_it_starts(capsys):
    # `report` is a phony target: make always has work for it (here: one line and exit 2,
    # since no RUN is given), as for an environment not yet built.
    done = build_once("report", "the report's environment", "about a second")
    assert done.returncode != 0 and "give the run directory" in done.stdout
    assert capsys.readouterr().out == (
        "the report's environment: built on first use (about a second); later runs reuse it\n"
    )


def test_an_environment_already_built_is_reused_without_a_word(capsys):
    # The kit's own .venv is built: the tests run from it.
    assert build_once("venv", "the kit's environment", "about a minute").returncode == 0
    assert capsys.readouterr().out == ""
