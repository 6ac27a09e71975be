"""A real headless Chromium for the tests that read a page as a person would.

Chromium and its driver come from Debian (.ci/run installs them); where they are
missing the test is skipped with the reason, never passed. Every browser test
starts it the same way, with the flags this machine needs.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

# Flags the machine's probe found Chromium needs here: no sandbox as root, and no
# background networking, which this machine's closed network would refuse.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
)


@contextlib.contextmanager
def chromium(user_data_dir: Path) -> Iterator[webdriver.Chrome]:
    """A headless Chromium session with its profile in ``user_data_dir``, quit when the block
    ends; the test is skipped when Debian's chromium or chromium-driver is missing."""
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    missing = [
        pkg for pkg, found in (("chromium", binary), ("chromium-driver", driver)) if not found
    ]
    if missing:
        pytest.skip(
            f"not installed: Debian's {' and '.join(missing)} (apt-get install "
            f"{' '.join(missing)}, as .ci/run does)"
        )
    options = webdriver.ChromeOptions()
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={user_data_dir}")
    options.binary_location = binary
    session = webdriver.Chrome(service=Service(driver), options=options)
    try:
        yield session
    finally:
        session.quit()
