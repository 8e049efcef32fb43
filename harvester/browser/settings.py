"""What a browser session may do, and for how long: the bounds of every loop the loader runs.

One frozen dataclass with defaults; the harvest's job settings (``harvester.job``) will map onto it
when browser capture is wired in (``click_selectors``, page concurrency, page deadline, behaviour
bounds). Every behaviour is bounded in count and in time, and the page deadline bounds them all.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BrowserSettings:
    pages: int = 2  # pages loaded at once (one browser context each)
    page_deadline: float = 60.0  # seconds for one page: navigation, behaviours; the extraction gets a grace on top
    extract_grace: float = 10.0  # seconds past the deadline for links, text, title and the screenshot
    viewport: tuple[int, int] = (1280, 800)
    user_agent: str | None = None  # None: Chromium's own
    # behaviours
    scroll_steps: int = 30  # viewport-high scroll steps, at most
    scroll_time: float = 15.0
    click_selectors: tuple[str, ...] = ()  # CSS selectors clicked until they are gone ("load more")
    clicks: int = 20  # clicks per selector, at most
    click_time: float = 15.0
    media_time: float = 1.0  # seconds media may play (each element started once)
    media_elements: int = 10
    quiet: float = 0.3  # the network is quiet after this long without a request in flight
    quiet_timeout: float = 10.0  # the longest wait for quiet (a page that polls is never quiet)
    # what a page yields
    screenshot: bool = True
    max_links: int = 10_000
    max_text: int = 2 * 1024 * 1024  # characters of rendered text kept
    max_body: int = 100 * 1024 * 1024  # decoded bytes given to the browser for one response
    frames: int = 20  # frames whose links and text are read, at most

    def __post_init__(self) -> None:
        if self.pages < 1:
            raise ValueError("pages must be at least 1")
        if self.page_deadline <= 0:
            raise ValueError("page_deadline must be positive")
