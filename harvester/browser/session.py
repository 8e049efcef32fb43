"""A browser session: one Chromium owned by its caller, driven by Playwright over the DevTools
protocol, loading several pages at once (``BrowserSettings.pages``), each in a fresh context.

    async with BrowserSession(settings) as session:
        capture = await session.load(url, resolve)

Playwright's Python package is the driver (the ``browser`` extra: ``pip install
'strata-archive[browser]'``). It is not a base dependency because HTTP capture, the default, never
needs it, and it carries its own Node.js (some 100 MB). It attaches to a Chromium that Strata
starts itself (``connect_over_cdp`` to ``harvester.browser.chromium``), not one Playwright
launches: a Playwright-launched browser is its driver's child and could outlive a SIGKILLed
owner; Strata's keeper guarantees it does not. Playwright's own driver process exits when its
pipe from this process closes.
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
from pathlib import Path
from typing import Any

from harvester.browser.chromium import CHROMIUM, ChromiumProcess, check_executable
from harvester.browser.contract import PageRef, Resolve
from harvester.browser.page import PageCapture, load_page
from harvester.browser.settings import BrowserSettings
from strata.errors import BrowserUnavailable

CONNECT_TIMEOUT = 90_000  # ms: attaching waits for the browser's first targets, slow on a loaded machine
NO_PLAYWRIGHT = "browser capture needs Playwright's Python package: pip install 'strata-archive[browser]'"


def check_browser(executable: str = CHROMIUM) -> None:
    """Raise ``BrowserUnavailable``, saying what to install, when a session could not start for want of
    Playwright's package or of Chromium: asked before a run, so that it fails before it begins."""
    if importlib.util.find_spec("playwright") is None:
        raise BrowserUnavailable(NO_PLAYWRIGHT)
    check_executable(executable)


class BrowserSession:
    def __init__(
        self,
        settings: BrowserSettings | None = None,
        *,
        workdir_parent: Path | None = None,
        dead_proxy: bool = True,
        extra_args: tuple[str, ...] = (),
    ):
        self.settings = settings or BrowserSettings()
        self.workdir_parent = workdir_parent
        self.dead_proxy = dead_proxy
        self.extra_args = extra_args
        self.chromium: ChromiumProcess | None = None
        self._playwright: Any = None
        self._browser: Any = None
        self._slots = asyncio.Semaphore(self.settings.pages)
        self._ids = itertools.count(1)

    async def __aenter__(self) -> BrowserSession:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def start(self) -> None:
        try:
            from playwright.async_api import async_playwright
        except ImportError:
            raise BrowserUnavailable(NO_PLAYWRIGHT) from None
        self.chromium = await asyncio.to_thread(
            ChromiumProcess.start, parent=self.workdir_parent, dead_proxy=self.dead_proxy, extra_args=self.extra_args
        )
        try:
            self._playwright = await async_playwright().start()
            self._browser = await self._playwright.chromium.connect_over_cdp(
                self.chromium.cdp_url, timeout=CONNECT_TIMEOUT
            )
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        browser, self._browser = self._browser, None
        playwright, self._playwright = self._playwright, None
        chromium, self.chromium = self.chromium, None
        if browser is not None:
            try:
                await asyncio.wait_for(browser.close(), 10)
            except Exception:
                pass  # the keeper kills what is left
        if playwright is not None:
            try:
                await asyncio.wait_for(playwright.stop(), 10)
            except Exception:
                pass
        if chromium is not None:
            await asyncio.to_thread(chromium.stop)

    @property
    def alive(self) -> bool:
        return (
            self._browser is not None and self._browser.is_connected() and bool(self.chromium and self.chromium.alive)
        )

    async def load(self, url: str, resolve: Resolve, *, settings: BrowserSettings | None = None) -> PageCapture:
        """Load one page, every request through ``resolve``. Waits for a free page slot first; the
        page deadline starts once it has one. ``settings`` overrides the session's for this page
        (its ``pages`` is ignored)."""
        if self._browser is None:
            raise BrowserUnavailable("the browser session is not started (or has been closed)")
        settings = settings or self.settings
        async with self._slots:
            context = await self._browser.new_context(
                service_workers="block",
                accept_downloads=False,
                viewport={"width": settings.viewport[0], "height": settings.viewport[1]},
                user_agent=settings.user_agent,
            )
            try:
                return await load_page(context, url, resolve, settings, PageRef(url, str(next(self._ids))))
            finally:
                try:
                    await asyncio.wait_for(context.close(), 10)
                except Exception:
                    pass
