"""Loading one page: navigate, run the behaviours, then read what the page became.

``load_page(context, url, resolve, settings, page_ref)`` works in a fresh browser context (cookies,
storage and caches of its own; service workers blocked) whose every request the interceptor
answers through ``resolve``. It returns a ``PageCapture``: the rendered DOM's links (after
scripts, every frame), its text (``innerText``: what the page showed), its title, a screenshot of
the viewport at the top of the page (PNG), and the list of requests with their outcomes.

The page deadline bounds navigation and behaviours; reading the page gets ``extract_grace`` on top,
so a page that never stops still yields what it showed. A navigation that fails (refused by
``resolve``, a network error, the deadline) yields a capture with ``error`` set and whatever could
be read.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from datetime import datetime

from harvester.browser.behaviours import BehaviourFigures, run_behaviours
from harvester.browser.contract import FULFILLED, PageRef, RequestOutcome, Resolve
from harvester.browser.intercept import Interceptor
from harvester.browser.settings import BrowserSettings
from strata.times import utc_now
from strata.urls import normalize_url

# Links, text and title of one frame. innerText is the text as laid out (hidden elements left out);
# the links are the resolved href of every <a> and <area>, as the browser would follow them.
_READ = """(maxLinks) => {
  const links = [];
  for (const el of document.querySelectorAll('a[href], area[href]')) {
    if (links.length >= maxLinks) break;
    links.push(el.href);
  }
  return {title: document.title || '', text: document.body ? document.body.innerText : '', links};
}"""


@dataclass
class PageCapture:
    url: str  # the URL asked for
    page: PageRef
    started: datetime  # when the navigation began (UTC)
    final_url: str = ""  # where the navigation ended, redirects followed
    status: int | None = None  # the final navigation response's status
    title: str = ""
    text: str = ""
    links: list[str] = field(default_factory=list)  # normalised http(s) URLs, in document order, once each
    screenshot: bytes | None = None  # PNG of the viewport, scrolled to the top
    requests: list[RequestOutcome] = field(default_factory=list)
    behaviours: BehaviourFigures = field(default_factory=BehaviourFigures)
    error: str | None = None  # the navigation failed, or the page crashed
    timed_out: bool = False  # the deadline cut the page short (what it showed is still read)
    elapsed: float = 0.0

    @property
    def navigation(self) -> RequestOutcome | None:
        """The page's own navigation request (the last hop of its redirects)."""
        hops = [r for r in self.requests if r.top_level]
        return hops[-1] if hops else None

    def failed_requests(self) -> list[RequestOutcome]:
        return [r for r in self.requests if r.outcome != FULFILLED]

    def info(self) -> dict:
        """The page as its ``urn:pageinfo:`` record says it (``harvester.browser.records``)."""
        return {
            "url": self.url,
            "final_url": self.final_url,
            "started": self.started.isoformat().replace("+00:00", "Z"),
            "status": self.status,
            "title": self.title,
            "error": self.error,
            "timed_out": self.timed_out,
            "behaviours": self.behaviours.as_dict(),
            "links": len(self.links),
            "requests": [r.as_dict() for r in self.requests],
        }


async def load_page(context, url: str, resolve: Resolve, settings: BrowserSettings, page_ref: PageRef) -> PageCapture:
    """Load ``url`` in ``context`` (a fresh Playwright browser context), every request through
    ``resolve``. The context is left open; the caller closes it."""
    began = time.monotonic()
    deadline = began + settings.page_deadline
    capture = PageCapture(url=url, page=page_ref, started=utc_now())
    interceptor = Interceptor(page_ref, resolve, deadline, settings.max_body)
    page = await context.new_page()
    await interceptor.attach(context, page)
    try:
        await _navigate(page, url, capture, deadline)
        if capture.error is None and not capture.timed_out:
            try:
                capture.behaviours = await asyncio.wait_for(
                    run_behaviours(page, settings, _quiet(interceptor, settings), deadline),
                    max(0.1, deadline - time.monotonic()),
                )
            except TimeoutError:
                capture.timed_out = True
                capture.behaviours.stopped = "deadline"
            except Exception as exc:  # the page crashed or navigated away: read what is there
                capture.behaviours.stopped = f"{type(exc).__name__}: {str(exc)[:200]}"
        await _read(page, capture, settings)
    finally:
        interceptor.closing = True
        capture.requests = interceptor.outcomes
        with contextlib.suppress(Exception):
            await page.close()
        await interceptor.drain(settings.extract_grace + settings.page_deadline)
        capture.elapsed = round(time.monotonic() - began, 3)
    return capture


def _quiet(interceptor: Interceptor, settings: BrowserSettings):
    async def quiet(timeout: float) -> bool:
        return await interceptor.wait_quiet(settings.quiet, timeout)

    return quiet


async def _navigate(page, url: str, capture: PageCapture, deadline: float) -> None:
    """Navigate, then wait for the load event until the deadline. A document that came but never
    finished loading (a resource that hangs) is still the page: ``timed_out``, not ``error``."""
    try:
        response = await page.goto(url, wait_until="commit", timeout=_ms_left(deadline))
    except Exception as exc:  # refused, a network error, no answer before the deadline
        capture.timed_out = "Timeout" in type(exc).__name__
        capture.error = str(exc).split("\n", 1)[0][:300]
        return
    capture.final_url = page.url
    capture.status = response.status if response is not None else None
    try:
        await page.wait_for_load_state("load", timeout=_ms_left(deadline))
    except Exception:
        capture.timed_out = True


def _ms_left(deadline: float) -> float:
    return max(100.0, (deadline - time.monotonic()) * 1000)


async def _read(page, capture: PageCapture, settings: BrowserSettings) -> None:
    """Links, text, title and the screenshot, within ``extract_grace``."""
    try:
        await asyncio.wait_for(_read_frames(page, capture, settings), settings.extract_grace)
    except Exception as exc:
        capture.error = capture.error or f"page not readable: {type(exc).__name__}"
        return
    if settings.screenshot:
        with contextlib.suppress(Exception):
            capture.screenshot = await page.screenshot(
                type="png", timeout=settings.extract_grace * 1000, animations="disabled", caret="hide"
            )


async def _read_frames(page, capture: PageCapture, settings: BrowserSettings) -> None:
    capture.final_url = capture.final_url or page.url
    texts: list[str] = []
    seen: dict[str, None] = {}
    for number, frame in enumerate(page.frames[: settings.frames]):
        try:
            read = await frame.evaluate(_READ, settings.max_links)
        except Exception:  # a frame that went away or forbids scripts
            continue
        if number == 0:
            capture.title = read["title"]
        if read["text"].strip():
            texts.append(read["text"].strip())
        for href in read["links"]:
            link = normalize_url(href, frame.url or capture.final_url)
            if link is not None and len(seen) < settings.max_links:
                seen.setdefault(link, None)
    capture.text = "\n\n".join(texts)[: settings.max_text]
    capture.links = list(seen)
