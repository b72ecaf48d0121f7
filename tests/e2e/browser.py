"""What the browser tests share: Debian's Chromium, its flags on this closed network, and where artifacts go."""

from __future__ import annotations

import os
from collections.abc import Sequence

import pytest

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps dialling Google on this closed network.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
# Where the tests copy their screenshots and results when set (docs/screenshots for the README).
ARTIFACTS_ENV = "DOCUTHINKER_WEB_ARTIFACTS"


def launch(playwright, extra_args: Sequence[str] = ()):
    """Debian's Chromium under Playwright (its own browser download is unreachable here), with ``extra_args``."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: run `make setup` as root "
                    "(tools/system_packages.sh installs Debian's chromium)")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *extra_args])
