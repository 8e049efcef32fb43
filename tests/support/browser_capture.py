"""Browser capture without the harvest: ``harvester.browser`` loads the pages, and a ``resolve`` of
this module's fetches each request over HTTP (httpx, identity encoding) and writes it with warcio
into one WARC file of a collection, as another tool would. ``strata index rebuild`` then derives
the CDXJ, the harvest state and full text from it (real WARCs, real pywb).

Used by ``bench/browser_bench.py`` (the browser layer alone); ``record_live`` records what Chromium
asks for on its own, the reference ``tests/browser/test_script_pages.py`` holds the harvest's
browser capture (``capture = "browser"``, ``harvester.browser.visitor``) to. This resolve writes
every response whole, once per URL and run: a URL asked for again in the same run (every page's
stylesheet) is answered from memory, as the harvest answers it from what the run stored.
"""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvester.browser.behaviours import run_behaviours
from harvester.browser.contract import BrowserRequest, BrowserResponse
from harvester.browser.page import PageCapture
from harvester.browser.records import page_records
from harvester.browser.session import BrowserSession
from harvester.browser.settings import BrowserSettings
from index.collection import Collection
from strata.times import utc_now, warc_date

_DROPPED = {"host", "accept-encoding", "connection", "content-length"}  # httpx sets these itself


class WarcRecorder:
    """One WARC file under ``<collection>/archive/``: a warcinfo record, then whatever is written."""

    def __init__(self, collection: Collection, filename: str):
        collection.archive_dir.mkdir(parents=True, exist_ok=True)
        self.path = collection.archive_dir / filename
        self._fh = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        self.writer = WARCWriter(self._fh, gzip=True, warc_version="1.1")
        self.writer.write_record(
            self.writer.create_warcinfo_record(filename, {"software": "strata tests (browser capture)"})
        )

    def write(self, records: Iterable) -> None:
        for record in records:
            self.writer.write_record(record)

    def close(self) -> None:
        self._fh.close()


class HttpResolve:
    """``resolve`` for a ``BrowserSession``: requests to ``origins`` are fetched and recorded, any
    other fails in the browser. Remembers each page's navigation record (id and date) for its page
    records, and every request it answered (``asked``)."""

    def __init__(self, recorder: WarcRecorder, client: httpx.AsyncClient, origins: set[str]):
        self.recorder = recorder
        self.client = client
        self.origins = origins
        self.asked: list[BrowserRequest] = []
        self.navigations: dict[str, tuple[str, str]] = {}  # page id -> (record id, WARC-Date)
        self._answered: dict[tuple[str, str], BrowserResponse] = {}
        self._lock = asyncio.Lock()

    async def __call__(self, request: BrowserRequest) -> BrowserResponse | None:
        self.asked.append(request)
        parts = urlsplit(request.url)
        if f"{parts.scheme}://{parts.netloc}" not in self.origins:
            return None
        key = (request.method, request.url)
        if key in self._answered and not request.navigation:
            return self._answered[key]
        headers = [(k, v) for k, v in request.headers if k.lower() not in _DROPPED]
        try:
            answer = await self.client.request(
                request.method, request.url, headers=[*headers, ("Accept-Encoding", "identity")], content=request.body
            )
        except httpx.HTTPError:
            return None
        date = warc_date(utc_now())
        response = _response_record(request.url, answer, date)
        wire_request = _request_record(request, answer, date)
        async with self._lock:
            self.recorder.write([response, wire_request])
        if request.top_level:
            self.navigations[request.page.id] = (response.rec_headers.get_header("WARC-Record-ID"), date)
        pairs = [(k, v) for k, v in answer.headers.multi_items() if k.lower() not in ("transfer-encoding",)]
        found = BrowserResponse(answer.status_code, pairs, answer.content)
        self._answered[key] = found
        return found

    def write_page(self, capture: PageCapture) -> None:
        """The page's screenshot, text and page info, dated as its navigation."""
        record_id, date = self.navigations.get(capture.page.id, (None, warc_date(capture.started)))
        self.recorder.write(page_records(capture, date, record_id))


def _response_record(url: str, answer: httpx.Response, date: str):
    http = StatusAndHeaders(
        f"{answer.status_code} {answer.reason_phrase}".strip(),
        [(k, v) for k, v in answer.headers.multi_items() if k.lower() != "transfer-encoding"],
        protocol="HTTP/1.1",
    )
    return WARCWriter(None, gzip=True, warc_version="1.1").create_warc_record(
        url, "response", payload=io.BytesIO(answer.content), http_headers=http, warc_headers_dict={"WARC-Date": date}
    )


def _request_record(request: BrowserRequest, answer: httpx.Response, date: str):
    sent = answer.request
    parts = urlsplit(request.url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    http = StatusAndHeaders(f"{request.method} {target or '/'} HTTP/1.1", list(sent.headers.multi_items()))
    return WARCWriter(None, gzip=True, warc_version="1.1").create_warc_record(
        request.url,
        "request",
        payload=io.BytesIO(request.body or b""),
        http_headers=http,
        warc_headers_dict={"WARC-Date": date},
    )


async def capture_pages(
    collection: Collection,
    filename: str,
    urls: list[str],
    settings: BrowserSettings | None = None,
    session: BrowserSession | None = None,
) -> tuple[list[PageCapture], HttpResolve]:
    """Load ``urls`` in a browser session (``session``, or one of its own), every request fetched
    from the live site and written to ``archive/<filename>``, each page's records after it."""
    origins = {f"{urlsplit(u).scheme}://{urlsplit(u).netloc}" for u in urls}
    recorder = WarcRecorder(collection, filename)
    own = session is None
    try:
        async with httpx.AsyncClient(trust_env=False, timeout=30) as client:
            resolve = HttpResolve(recorder, client, origins)
            if session is None:
                session = BrowserSession(settings)
                await session.start()
            try:

                async def one(url: str) -> PageCapture:
                    assert session is not None
                    capture = await session.load(url, resolve, settings=settings)
                    resolve.write_page(capture)
                    return capture

                captures = list(await asyncio.gather(*(one(u) for u in urls)))
            finally:
                if own:
                    await session.close()
    finally:
        recorder.close()
    return captures, resolve


def site_root(tmp: Path) -> Path:
    root = tmp / "collections"
    root.mkdir(parents=True, exist_ok=True)
    return root


class _EventQuiet:
    """Network quiet from a live page's own request events (no interception): for the reference."""

    def __init__(self, page):
        self.in_flight = 0
        self.last = time.monotonic()
        page.on("request", lambda _r: self._change(+1))
        page.on("requestfinished", lambda _r: self._change(-1))
        page.on("requestfailed", lambda _r: self._change(-1))

    def _change(self, delta: int) -> None:
        self.in_flight += delta
        self.last = time.monotonic()

    async def __call__(self, timeout: float, idle: float = 0.3) -> bool:
        called = time.monotonic()
        while time.monotonic() - called < timeout:
            if self.in_flight <= 0 and time.monotonic() - max(self.last, called) >= idle:
                return True
            await asyncio.sleep(0.05)
        return False


async def record_live(urls: list[str], settings: BrowserSettings) -> dict[str, list[tuple[str, str]]]:
    """What Chromium itself asks for on each live page (its own network stack, no interception),
    the same behaviours run: page URL -> [(method, URL)] in order. The reference the browser
    capture is held to."""
    from playwright.async_api import async_playwright

    from tests.support.chromium import CHROMIUM, FLAGS

    found: dict[str, list[tuple[str, str]]] = {}
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=list(FLAGS))
        try:
            for url in urls:
                context = await browser.new_context(
                    service_workers="block", viewport={"width": settings.viewport[0], "height": settings.viewport[1]}
                )
                page = await context.new_page()
                asked: list[tuple[str, str]] = []
                page.on("request", lambda r, asked=asked: asked.append((r.method, r.url)))
                quiet = _EventQuiet(page)
                await page.goto(url, wait_until="load")
                await run_behaviours(page, settings, quiet, time.monotonic() + settings.page_deadline)
                await quiet(settings.quiet_timeout)
                found[url] = asked
                await context.close()
        finally:
            await browser.close()
    return found
