"""A test skipped for want of a tool says exactly which, and ``make test`` ends by listing every
skip with how to get it: a suite that passed with tests skipped is not the whole suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import browser

ROOT = Path(__file__).parents[1]


def test_a_missing_chromium_driver_is_named_not_chromium(tmp_path, monkeypatch):
    (tmp_path / "chromium").write_text("#!/bin/sh\n")
    (tmp_path / "chromium").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.skip.Exception) as skipped, browser.chromium(tmp_path / "profile"):
        pass
    said = str(skipped.value)
    assert said == (
        "not installed: Debian's chromium-driver (apt-get install chromium-driver, as .ci/run does)"
    )


@pytest.mark.system
def test_the_suite_ends_by_listing_what_it_skipped_and_how_to_get_it(tmp_path):
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_terminal_summary\n")
    (tmp_path / "test_some.py").write_text(
        "import pytest\n"
        "def test_one(): pytest.skip('no X here (apt-get install x)')\n"
        "def test_two(): pytest.skip('no X here (apt-get install x)')\n"
        "def test_three(): pytest.skip('no Y here')\n"
        "def test_four(): pass\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "3 tests skipped: what each needs and how to get it" in out
    assert "   2  no X here (apt-get install x)" in out
    assert "   1  no Y here" in out
    assert ".ci/run installs all of them, then runs make test (as CI does)" in out
