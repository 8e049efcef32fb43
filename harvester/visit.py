"""Visiting a URL: the path every request of a harvest takes, given a fetcher, the decision and a
recorder.

    RequestPath.visit(item)
      robots.txt (``harvester.robots``: allowed? its Crawl-delay paces the host)
      politeness (``harvester.frontier``: the host's pace; ``harvester.hostgate``: counted from the
        request actually sent, where the fetcher sends it)
      the fetch (``harvester.fetcher.Fetcher``), conditional when the collection holds validators
        (``harvester.write_policy.conditional_headers``) in an incremental run
      what the payload says (``harvester.look``: page kind, main text, a soft change)
      the records (``harvester.recorder``) and the capture recorded (``index.capture.record``:
        the one decision, ``index.capture.decision``), in one transaction with
      where it leads (its redirect, its links: ``harvester.links``, through the outlink cache)
        queued by the paging strategy (``harvester.strategy``)

A ``Visitor`` visits a page; ``HttpVisitor`` visits one as one request, its links those of its
payload. A visitor that loads pages in a browser replaces it (``VISITORS``, chosen by the job's
``capture``) and sends each request the page makes through ``RequestPath.answer``: the same path,
once per URL and run, answered with the bytes as stored (for a 304, the stored original's).
docs/architecture.md ("A browser visitor") gives the contract.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Protocol

from harvester import write_policy
from harvester.browser.visitor import BrowserVisitor
from harvester.fetcher import Fetcher
from harvester.fetchresult import FetchResult
from harvester.frontier import Frontier, Item
from harvester.job import JobSettings
from harvester.links import LINK_TYPES, Link, links_of_payload
from harvester.look import Look, Looker
from harvester.recorder import Recorder
from harvester.report import RunFigures
from harvester.robots import RobotsCache, RobotsUnreachable, effective_delay
from harvester.runlog import RunLog
from harvester.scope import Scope
from harvester.strategy import PagingStrategy
from index.capture import decision
from index.capture.decision import Observation, Row
from index.payload import DecodeError
from index.storage.state import HarvestState
from strata.times import iso, utc_now
from strata.urls import normalize_url, url_host

#: robots.txt of a URL's site: (status, body) or ``RobotsUnreachable`` (``harvester.robots.RobotsCache``)
RobotsFetch = Callable[[str], Awaitable[tuple[int | None, bytes | None]]]
#: () -> (payload as stored, Content-Type, Content-Encoding), read when the outlink cache misses
LinkSource = Callable[[], tuple[bytes | None, str, str | None]]


@dataclasses.dataclass(frozen=True)
class Answer:
    """What a request was answered with, for a browser: the payload as stored (still content-encoded,
    as its headers say), the status and headers as answered (a 304: the stored original's)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


class Visitor(Protocol):
    """Visits one page of the frontier: its requests, records and links."""

    async def visit(self, item: Item) -> None: ...

    async def close(self) -> None: ...


class RequestPath:
    """The path of one request in a run (the module's docstring, in order), for every visitor: one
    per run, made by ``harvester.run`` with the run's parts."""

    def __init__(
        self,
        *,
        job: JobSettings,
        run_id: str,
        mode: str,
        job_key: str | None,
        state: HarvestState,
        scope: Scope,
        frontier: Frontier,
        paging: PagingStrategy,
        fetcher: Fetcher,
        recorder: Recorder,
        looker: Looker,
        figures: RunFigures,
        log: RunLog,
        share_robots: Callable[[RobotsFetch], RobotsFetch] = lambda fetch: fetch,
    ):
        self.job, self.run_id, self.mode, self.job_key = job, run_id, mode, job_key
        self.state, self.scope, self.frontier, self.paging = state, scope, frontier, paging
        self.fetcher, self.recorder, self.looker = fetcher, recorder, looker
        self.figures, self.log = figures, log
        # robots.txt fetched through this path, archived like any capture (several workers: once per run)
        self.robots = RobotsCache(share_robots(self.fetch_robots), user_agent=job.user_agent)
        self._robots_answered: dict[str, float] = {}  # host -> when its robots.txt last answered
        self._crawl_delays: dict[str, float] = {}  # host -> seconds between requests it was given
        # Requests answered (``request``): URL -> the record id of the capture to read back (None:
        # refused or failed), and those in flight, which a second asker waits for.
        self._answered: dict[str, str | None] = {}
        self._answering: dict[str, asyncio.Future[Answer | None]] = {}

    # -- one URL ---------------------------------------------------------------------------------
    async def visit(self, item: Item) -> None:
        await self._request(item, follow=True, answer=False)

    async def _request(self, item: Item, follow: bool, answer: bool) -> Answer | None:
        if not await self._allowed(item):
            return None
        if self.frontier.paced(item.host):
            await self.frontier.pace(item.host)
        self.paging.fetched.add(item.url)
        previous = self.state.url(item.url)
        conditional = write_policy.conditional_headers(previous) if self.mode == "incremental" else {}
        referer = {"Referer": item.via} if item.via else {}  # also lets a rebuild recover where it was found
        result = await self._fetch(item.url, {**referer, **conditional})
        try:
            observed = self.take(item, result, previous, bool(conditional), follow)
            if not answer or result.error or result.status is None:
                return None
            # what a later asker reads back: this capture, or (a soft change not stored) the one held
            self._answered[item.url] = observed.record_id if observed else (previous or {}).get("orig_record_id")
            if result.status == 304 and conditional and previous:
                return self._read_back(self._answered[item.url])  # the stored original's
            return Answer(result.status, list(result.headers), result.read_body())
        finally:
            result.close()

    # -- a browser's requests --------------------------------------------------------------------
    async def answer(self, url: str, method: str, page: Item, navigation: bool) -> Answer | None:
        """One request of a page loaded in a browser (``page``: the frontier's item the visitor is
        visiting), through this path, or None to fail it. Only GET is fetched. The page's own
        navigation is the page's item, its links followed as for HTTP capture; another top-level
        navigation (the page's redirect) is a redirect at the page's depth; every other request
        (scripts, styles, images, XHR and fetch, frames) is an embed of the page, in scope as
        embeds are (``embeds_offsite``)."""
        target = normalize_url(url)
        if method.upper() != "GET" or target is None:
            return None
        if target == page.url:
            item, follow = page, True
        else:
            kind = "redirect" if navigation else "embed"
            if not self.scope.decide(target, page.depth, "navigation" if navigation else "embed").accept:
                return None
            item, follow = Item(target, page.depth, kind, via=page.url), False
            if not self.frontier.seen(target):  # the URL's row first: the capture path updates it
                self.frontier.add_seen(target)
                link_kind = "navigation" if navigation else "embed"
                self.state.see_url(
                    target, url_host(target), self.run_id, iso(utc_now()), page.url, page.depth, link_kind,
                    job=self.job_key,
                )  # fmt: skip
        return await self.request(item, follow)

    async def request(self, item: Item, follow: bool = False) -> Answer | None:
        """``item`` fetched and recorded once in the run, however many pages ask for it: a second
        asker waits for the first, a later one gets the capture read back from the WARC."""
        url = item.url
        if url in self._answered:
            return self._read_back(self._answered[url])
        pending = self._answering.get(url)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Answer | None] = asyncio.get_running_loop().create_future()
        self._answering[url] = future
        answer: Answer | None = None
        try:
            answer = await self._request(item, follow, answer=True)
        finally:
            self._answered.setdefault(url, None)
            del self._answering[url]
            future.set_result(answer)
        return answer

    def record_of(self, url: str) -> str | None:
        """The record id of the capture ``request`` answered ``url`` with in this run (None: not asked
        yet, refused or failed)."""
        return self._answered.get(url)

    def _read_back(self, record_id: str | None) -> Answer | None:
        capture = self.state.capture_by_record_id(record_id) if record_id else None
        stored = self.recorder.stored_answer(capture) if capture else None
        return Answer(*stored) if stored else None

    async def _allowed(self, item: Item) -> bool:
        """robots.txt allows the URL (or the job ignores it); a disallowed one is recorded as skipped."""
        if self.job.robots != "obey" or item.url.endswith("/robots.txt"):
            return True
        rules = await self.robots.rules_for(item.url)
        if rules.crawl_delay is not None and item.host not in self._crawl_delays:
            self._apply_crawl_delay(item.host, rules.crawl_delay)
        if rules.allowed(item.url):
            return True
        self.figures.skipped += 1
        why = self.log.robots_unreadable(item.url, rules) if rules.disallows_everything else "disallowed by robots.txt"
        self.state.add_check(self.run_id, item.url, "skipped", why, iso(utc_now()))
        return False

    def _apply_crawl_delay(self, host: str, asked: float) -> None:
        seconds = effective_delay(asked, self.job.delay, self.job.max_crawl_delay)
        self._crawl_delays[host] = seconds
        if seconds <= self.job.delay:
            return
        self.frontier.set_host_delay(host, seconds, since=self._robots_answered.get(host))
        capped = f" (it asks for {asked:g} s; capped by max_crawl_delay)" if asked > seconds else ""
        self.log.note_some(f"{host}: requests spaced {seconds:g} s apart, as its robots.txt Crawl-delay asks{capped}")

    async def _fetch(self, url: str, headers: dict[str, str]) -> FetchResult:
        self.figures.requests += 1
        # politeness from the previous request actually sent to the host (harvester.hostgate): by the
        # fetcher, where it sends; across a shared run's workers, by Redis first
        host = url_host(url)
        await self.frontier.before_send(host)
        result = await self.fetcher.fetch(url, headers, self.frontier.interval(host))
        self.figures.bytes_downloaded += result.wire_bytes
        return result

    async def fetch_robots(self, url: str) -> tuple[int | None, bytes | None]:
        """robots.txt through the harvester's own client, archived like any capture, up to 5 redirects."""
        for _ in range(6):
            host = url_host(url)
            if self.frontier.paced(host):
                await self.frontier.pace(host)
            previous = self.state.url(url)
            if previous is None:
                self.state.see_url(url, url_host(url), self.run_id, iso(utc_now()), None, 0, "embed", job=self.job_key)
                previous = None
            result = await self._fetch(url, {})
            # When the request really left is not known here (the fetch process may take a while to
            # send it); the answer came after it, so spacing from the answer is never too short.
            self._robots_answered[host] = time.monotonic()
            try:
                self.take(Item(url, 0, "robots"), result, previous, False, follow=False)
                if result.error:
                    raise RobotsUnreachable(result.error)
                if result.status in (301, 302, 303, 307, 308):
                    target = normalize_url(result.header("Location") or "", url)
                    if target:
                        url = target
                        continue
                return result.status, result.read_body(600 * 1024) if result.status else None
            finally:
                result.close()
        raise RobotsUnreachable("more than 5 redirects")

    # -- what came back --------------------------------------------------------------------------
    def take(
        self, item: Item, result: FetchResult, previous: Row | None, conditional: bool, follow: bool = True
    ) -> Observation | None:
        """Write what a fetch brought back and record the capture (``index.capture.record``), then
        queue where it leads. What was recorded (None: nothing was written)."""
        now = utc_now()
        if result.error:
            self.figures.errors += 1
            self.log.fetch_failed(item, result.error)
            self.state.add_check(self.run_id, item.url, "error", result.error, iso(now))
            return None
        self.log.answered(item, result.surplus)
        self.figures.urls_fetched += 1
        content_type = result.header("Content-Type") or ""
        mime = content_type.split(";")[0].strip().lower() or "unknown"
        parsed: list[Link] | None = None  # the links, when the main text's parse gave them
        link_source: LinkSource | None = None  # called when the outlink cache has no links for the payload
        if result.status == 304 and conditional and previous:
            observed, held = self.recorder.write_not_modified(item.url, result, previous, now, mime)
            mime = observed.mime
            if mime in LINK_TYPES and held:
                # a 304 has no body: the links are those of the stored original
                link_source = lambda: self.recorder.stored_body(held)  # noqa: E731
        else:
            look = self.looker.look(item.url, result, previous, content_type, mime, follow)
            if look.main_text_same and not self.job.store_soft_changes:  # soft, and not stored
                self._skip_soft(item, result, previous, look, now, follow)
                return None
            observed = self.recorder.write_response(item.url, result, now, look, mime)
            parsed = look.links
            if follow and mime in LINK_TYPES and result.status and result.status < 300:
                link_source = lambda: (result.read_body(), content_type, result.header("Content-Encoding"))  # noqa: E731
        # The capture's state and the URLs it leads to in one transaction: one commit per URL, not one
        # more for each new URL seen and for its outlinks.
        failed: Exception | None = None
        with self.state.transaction():
            decided = self.recorder.record(previous, observed)
            if follow:
                try:
                    self._follow(item, decided.redirect, observed.digest, mime, link_source, parsed)
                except Exception as exc:  # the capture is written: its state is committed all the same
                    failed = exc
        if failed is not None:
            raise failed
        return observed

    def _follow(
        self,
        item: Item,
        redirect: str | None,
        digest: str | None,
        mime: str,
        link_source: LinkSource | None,
        parsed: list[Link] | None,
    ) -> None:
        """Queue where a capture leads: its redirect's target, its links."""
        if redirect is not None:
            target = normalize_url(redirect, item.url)
            if target:
                self.paging.follow(item, target, "redirect", item.depth)
        if link_source is not None:
            self.paging.queue_links(item, self._links(item, digest, link_source, parsed), mime)

    def _links(
        self, item: Item, digest: str | None, source: LinkSource, parsed: list[Link] | None = None
    ) -> list[Link]:
        """The page's links: *parsed* when the main text's parse gave them, from the outlink cache
        when its payload was parsed before (unchanged pages and 304s cost no parse), else extracted;
        cached either way."""
        if parsed is not None:
            if digest:
                self.state.set_outlinks(item.url, digest, [(link.url, link.kind) for link in parsed])
            return parsed
        cached = self.state.outlinks(item.url, digest) if digest else None
        if cached is not None:
            return [Link(url, kind, "cache") for url, kind in cached]
        raw, content_type, encoding = source()
        if raw is None:
            return []
        try:
            links = links_of_payload(raw, item.url, content_type, encoding)
        except DecodeError as exc:
            self.log.error(item.url, f"links not extracted: {exc}")
            return []
        if digest:
            self.state.set_outlinks(item.url, digest, [(link.url, link.kind) for link in links])
        return links

    def _skip_soft(
        self, item: Item, result: FetchResult, previous: Row | None, look: Look, now: datetime, follow: bool
    ) -> None:
        """A soft change the job does not store: nothing written, the check recorded (replay of this
        run shows the previous capture, as the NLC harvester does)."""
        self.figures.count("soft")
        with self.state.transaction():  # the check, the URL's state and the URLs it leads to: one commit
            self.state.add_check(
                self.run_id,
                item.url,
                "soft",
                f"main content {look.score:.3f} similar to the stored capture; not stored",
                iso(now),
            )
            self.state.update_url(item.url, **decision.not_stored(previous, "soft", iso(now), self.run_id))
            if follow:
                content_type = result.header("Content-Type") or ""
                mime = content_type.split(";")[0].strip().lower()
                self.paging.queue_links(
                    item,
                    self._links(
                        item,
                        result.digest,
                        lambda: (result.read_body(), content_type, result.header("Content-Encoding")),
                        look.links,
                    ),
                    mime,
                )


class HttpVisitor:
    """A page visited as one request: its links are those of its payload."""

    def __init__(self, path: RequestPath):
        self.path = path

    async def visit(self, item: Item) -> None:
        await self.path.visit(item)

    async def close(self) -> None:
        pass


#: How a job's pages are visited (its ``capture`` setting) -> the visitor, given the path of a request.
VISITORS: dict[str, Callable[[RequestPath], Visitor]] = {"http": HttpVisitor, "browser": BrowserVisitor}


def visitor_for(job: JobSettings, path: RequestPath) -> Visitor:
    return VISITORS[job.capture](path)


def check_visitor(job: JobSettings) -> None:
    """Before a run: what the job's visitor needs is there (a browser visitor: Playwright and
    Chromium); a ``StrataError`` that says what to install otherwise."""
    check = getattr(VISITORS[job.capture], "check", None)
    if check is not None:
        check(job)
