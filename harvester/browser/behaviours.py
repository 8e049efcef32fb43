"""Behaviours: what the loader does to a page after it has loaded, so that it asks for what a reader
would make it ask for. Each is bounded in count and in time (``BrowserSettings``), and between
steps the loader waits for the network to go quiet (``quiet``, given by the caller: the
interceptor's count of requests in flight, or, for a live reference, the page's request events).

- scroll: a viewport at a time to the end of the page, again while the page grows (infinite
  scroll, lazy images under ``loading=lazy`` and ``IntersectionObserver``);
- click: each of the job's ``click_selectors`` ("load more"), until no visible, enabled element
  matches;
- media: every ``<video>`` and ``<audio>`` muted and played for a moment (their ranges are asked for);
- back to the top, for the screenshot.

Written for Strata (Apache-2.0). ``browsertrix-behaviors``, the field's library, is AGPL-3.0:
shipping it inside Strata, or injecting it from Strata into every page, would put Strata's
distribution under the AGPL's terms, so it is not used. Its site-specific behaviours (social media
timelines) are out of scope for national-library portals; what those portals need is the four
above.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from harvester.browser.settings import BrowserSettings

Quiet = Callable[[float], Awaitable[bool]]  # wait at most that long for quiet; True if quiet

# One viewport down, then two animation frames (at most a second): IntersectionObserver callbacks
# run in a frame's rendering steps, so the lazy images in view have been asked for before the
# network is watched for quiet, however loaded the machine.
_SCROLL_STEP = """async () => {
  const el = document.scrollingElement || document.documentElement;
  if (!el) return {moved: false, height: 0};
  const before = el.scrollTop;
  window.scrollBy(0, Math.max(200, window.innerHeight - 50));
  await Promise.race([
    new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))),
    new Promise(r => setTimeout(r, 1000)),
  ]);
  return {moved: el.scrollTop > before, height: el.scrollHeight};
}"""

_CLICK = """(selector) => {
  let nodes;
  try { nodes = document.querySelectorAll(selector); } catch (e) { return 'bad selector'; }
  for (const el of nodes) {
    const box = el.getBoundingClientRect();
    const style = window.getComputedStyle(el);
    if (el.disabled || box.width === 0 || box.height === 0 || style.visibility === 'hidden'
        || style.display === 'none') continue;
    el.scrollIntoView({block: 'center'});
    el.click();
    return 'clicked';
  }
  return 'gone';
}"""

_MEDIA = """(limit) => {
  let n = 0;
  for (const el of document.querySelectorAll('video, audio')) {
    if (n >= limit) break;
    el.muted = true;
    try { const p = el.play(); if (p && p.catch) p.catch(() => {}); n++; } catch (e) {}
  }
  return n;
}"""

_TOP = "() => window.scrollTo(0, 0)"


@dataclass
class BehaviourFigures:
    scrolls: int = 0
    clicks: int = 0
    media: int = 0
    quiet: bool = True  # every wait for quiet ended quiet
    stopped: str = ""  # why a behaviour stopped early: "deadline", a bad selector ...

    def as_dict(self) -> dict:
        return dict(self.__dict__)


async def run_behaviours(page, settings: BrowserSettings, quiet: Quiet, deadline: float) -> BehaviourFigures:
    """Run the behaviours on a Playwright page until they are done or ``deadline`` (monotonic) passes."""
    figures = BehaviourFigures()

    async def settle() -> None:
        left = deadline - time.monotonic()
        if left > 0 and not await quiet(min(settings.quiet_timeout, left)):
            figures.quiet = False

    await settle()
    await _scroll(page, settings, settle, deadline, figures)
    if settings.click_selectors:
        for selector in settings.click_selectors:
            await _click(page, selector, settings, settle, deadline, figures)
        await _scroll(page, settings, settle, deadline, figures)  # what the clicks added, lazy images included
    await _media(page, settings, settle, deadline, figures)
    if time.monotonic() < deadline:
        await page.evaluate(_TOP)
        await settle()
    elif not figures.stopped:
        figures.stopped = "deadline"
    return figures


async def _scroll(page, settings: BrowserSettings, settle, deadline: float, figures: BehaviourFigures) -> None:
    until = min(deadline, time.monotonic() + settings.scroll_time)
    for _ in range(settings.scroll_steps):
        if time.monotonic() >= until:
            figures.stopped = figures.stopped or "deadline"
            return
        step = await page.evaluate(_SCROLL_STEP)
        figures.scrolls += 1
        await settle()
        if not step["moved"]:
            # at the end: did the page grow once the network went quiet (infinite scroll)?
            grown = await page.evaluate("() => (document.scrollingElement || document.documentElement).scrollHeight")
            if grown <= step["height"]:
                return


async def _click(
    page, selector: str, settings: BrowserSettings, settle, deadline: float, figures: BehaviourFigures
) -> None:
    until = min(deadline, time.monotonic() + settings.click_time)
    for _ in range(settings.clicks):
        if time.monotonic() >= until:
            figures.stopped = figures.stopped or "deadline"
            return
        said = await page.evaluate(_CLICK, selector)
        if said == "bad selector":
            figures.stopped = f"bad selector {selector!r}"
            return
        if said != "clicked":
            return
        figures.clicks += 1
        await settle()


async def _media(page, settings: BrowserSettings, settle, deadline: float, figures: BehaviourFigures) -> None:
    if time.monotonic() >= deadline:
        return
    figures.media = await page.evaluate(_MEDIA, settings.media_elements)
    if figures.media:
        await asyncio.sleep(max(0.0, min(settings.media_time, deadline - time.monotonic())))
        await settle()
