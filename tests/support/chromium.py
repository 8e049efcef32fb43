"""Headless Chromium as the browser tests start it: Debian's binary, the flags FIELD-NOTES gives
for these closed machines, and a clear failure when it is not installed (``.ci/run`` installs it).
Playwright gives each launch a fresh profile directory of its own."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harvester.browser.chromium import CHROMIUM, CLOSED_MACHINE_FLAGS
from harvester.browser.keeper import naming

FLAGS = list(CLOSED_MACHINE_FLAGS)


def launch(pw, extra_args: tuple[str, ...] = ()) -> Any:
    """A headless browser from a running ``sync_playwright()``."""
    return pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=[*FLAGS, *extra_args])


@contextlib.contextmanager
def launched(extra_args: tuple[str, ...] = ()) -> Iterator[Any]:
    """Playwright and a headless browser for the block; fails the test if Chromium is missing.
    ``extra_args``: more Chromium flags (e.g. ``--host-resolver-rules`` for a non-local host name)."""
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = launch(pw, extra_args)
        try:
            yield browser
        finally:
            browser.close()


def left_behind(workdir: str, seconds: float = 30.0) -> list[int]:
    """The processes that still name a killed owner's browser directory once its keeper has had
    ``seconds`` to clean up (the directory gone too: else ``[-1]``); ``[]`` when nothing is left."""
    deadline = time.monotonic() + seconds
    while (naming(workdir) or Path(workdir).exists()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return naming(workdir) or ([-1] if Path(workdir).exists() else [])
