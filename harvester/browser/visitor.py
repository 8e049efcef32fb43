"""The harvest's browser visitor (``capture = "browser"``): each page of the frontier loaded in
Chromium, every request it makes going through the run's one request path.

    BrowserVisitor(path).visit(item)
      an embed the HTML named (``item.kind == "embed"``): one request through the path, no page;
      else the page's URL through the path first (``RequestPath.request``: robots.txt, politeness,
        the conditional fetch, the decision, the records; its HTML's links queued); an HTML page
        that answered 2xx, or 304 (its stored original), is then loaded in the browser:
      every request the page makes (its own navigation, read back from what was just recorded;
        scripts, styles, images, XHR and fetch, frames, redirect hops) -> ``RequestPath.answer``,
        ``navigation`` true only for the page's main frame (``BrowserRequest.top_level``);
      after the behaviours, the rendered DOM's links queued (``path.paging.queue_links``);
      the page's screenshot, text and page info written with the run's records
        (``harvester.browser.records.page_records``, dated as the page's navigation record).

One ``BrowserSession`` (one Chromium, ``browser_pages`` pages at once) per run, started at the first
page and closed by ``close()``, which the run calls before its files are sealed, whatever ended it.
The harvest queues no embeds from a page's payload in browser capture
(``PagingStrategy.embeds_with_pages``): the browser asks for what the page uses, and an HTML
parser's candidates (every ``srcset`` width, ``data-src`` guesses) are URLs a browser would not ask
for. For the same reason an incremental run rechecks pages only: their resources come back with
them.

The visitor knows the path only through ``PagePath``, what it uses of ``harvester.visit.RequestPath``
(which registers this visitor as ``VISITORS["browser"]``).
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from harvester.browser.contract import BrowserRequest, BrowserResponse
from harvester.browser.page import PageCapture
from harvester.browser.records import page_records
from harvester.browser.session import BrowserSession, check_browser
from harvester.browser.settings import BrowserSettings
from harvester.frontier import Item
from harvester.job import JobSettings
from harvester.links import NAVIGATION, Link
from harvester.recorder import Recorder
from harvester.runlog import RunLog
from harvester.strategy import PagingStrategy
from index.storage.state import HarvestState
from strata.times import warc_date

PAGE_TYPES = ("text/html", "application/xhtml+xml")


class Answered(Protocol):
    """What ``RequestPath`` answers a request with (``harvester.visit.Answer``)."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> list[tuple[str, str]]: ...

    @property
    def body(self) -> bytes: ...


class PagePath(Protocol):
    """What the browser visitor uses of the run's request path (``harvester.visit.RequestPath``)."""

    job: JobSettings
    run_id: str
    state: HarvestState
    paging: PagingStrategy
    recorder: Recorder
    log: RunLog

    async def answer(self, url: str, method: str, page: Item, navigation: bool) -> Answered | None: ...

    async def request(self, item: Item, follow: bool = False) -> Answered | None: ...

    def record_of(self, url: str) -> str | None: ...


def browser_settings(job: JobSettings) -> BrowserSettings:
    """The job's browser settings (``harvester.job``) as the browser layer takes them."""
    return BrowserSettings(
        pages=job.browser_pages,
        page_deadline=job.page_deadline,
        click_selectors=job.click_selectors,
        clicks=job.clicks,
        click_time=job.click_time,
        scroll_steps=job.scroll_steps,
        scroll_time=job.scroll_time,
        quiet_timeout=job.quiet_timeout,
        max_body=job.max_resource_size,
    )


def is_page(answer: Answered) -> bool:
    """An answer the browser loads as a page: HTML (or XHTML) that answered 2xx."""
    content_type = next((v for k, v in answer.headers if k.lower() == "content-type"), "")
    return 200 <= answer.status < 300 and content_type.split(";")[0].strip().lower() in PAGE_TYPES


class BrowserVisitor:
    """Visits each page in Chromium; ``harvester.visit.VISITORS["browser"]``."""

    def __init__(self, path: PagePath):
        self.path = path
        self.settings = browser_settings(path.job)
        path.paging.embeds_with_pages = True
        self._session: BrowserSession | None = None
        self._starting: asyncio.Lock | None = None
        self._failed: BaseException | None = None

    @staticmethod
    def check(job: JobSettings) -> None:
        """Before the run: Playwright and Chromium are there (``BrowserUnavailable`` says what to install)."""
        check_browser()

    async def visit(self, item: Item) -> None:
        path = self.path
        if item.kind == "embed":  # an embed the HTML named (or an embed's redirect): one request, no page
            await path.request(item)
            return
        answer = await path.request(item, follow=True)  # recorded once: the browser's navigation reads it back
        if answer is None or not is_page(answer):
            return
        session = await self._started()

        async def resolve(request: BrowserRequest) -> BrowserResponse | None:
            # navigation: the page's main frame only; a frame's document is an embed of the page
            answered = await path.answer(request.url, request.method, item, request.top_level)
            return None if answered is None else BrowserResponse(answered.status, answered.headers, answered.body)

        capture = await session.load(item.url, resolve, settings=self.settings)
        if capture.error is not None:
            path.log.error(item.url, f"in the browser: {capture.error}")
        path.paging.queue_links(item, [Link(url, NAVIGATION, "dom") for url in capture.links], "text/html")
        self._write_page(item, capture)

    def _write_page(self, item: Item, capture: PageCapture) -> None:
        """The page's records, dated as the record of its navigation in this run (none was written
        when a soft change is not stored: then as the page's load)."""
        path = self.path
        record_id = path.record_of(item.url)
        row = path.state.capture_by_record_id(record_id) if record_id else None
        if row is None or row.get("run_id") != path.run_id:
            record_id, date = None, warc_date(capture.started)
        else:
            date = row["warc_date"]
        records = page_records(capture, date, record_id)
        if capture.error is not None:  # what it showed is nothing: the page info says what happened
            records = records[-1:]
        path.recorder.write_page_records(records)

    async def _started(self) -> BrowserSession:
        """The run's browser session, started by the first page that needs it."""
        if self._failed is not None:
            raise self._failed
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._failed is not None:
                raise self._failed
            if self._session is None:
                session = BrowserSession(self.settings, workdir_parent=self.path.recorder.collection.state_dir)
                try:
                    await session.start()
                except BaseException as exc:
                    self._failed = exc
                    raise
                self._session = session
        return self._session

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()
