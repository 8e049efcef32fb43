"""One harvest run of a collection: fetch, decide, write, index.

``Harvest(collection, job, mode).run()`` drives ``2 x concurrency`` workers over the frontier, with at
most ``concurrency`` fetches (connections) at once: while one URL is recorded, the next is on the
wire. Fetches run in a second process when there is one (``harvester.fetchproc``). For each
URL: robots.txt, a fetch (conditional when the collection holds validators), a class from
``harvester.decide``, records written through ``WarcRoller``, state updated in one transaction, links
queued. When a WARC is sealed its CDXJ lines are merged and its digest entries become usable.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime

import httpx

from harvester import decide, records
from harvester.change import NoiseRules, content_digest, main_text, similarity
from harvester.fetch import FetchResult, fetch, make_client
from harvester.fetchproc import FetchProcess
from harvester.frontier import Frontier, Item
from harvester.links import LINK_TYPES, Link, links_of_payload
from harvester.report import RunFigures
from harvester.robots import RobotsCache
from harvester.schedule import (
    HTML_TYPES,
    PageKinds,
    due_at,
    is_ordered_listing,
    is_pagination_link,
    page_number,
    url_order_key,
)
from harvester.scope import Scope
from harvester.urls import normalize_url, url_host
from harvester.warcfile import WarcRoller
from index import cdxj
from index.collection import Collection
from index.fixity import Fixity
from index.payload import DecodeError, decode_content, read_record
from index.state import Capture, HarvestState, Original
from strata import __version__
from strata.settings import JobSettings

ACCEPT_ENCODING = "gzip, deflate"   # no br: only capped decoders touch stored bodies
MAX_REDIRECT_HOPS = 10


def _section(url: str) -> str:
    """A listing's or an article's section: the first segment of its path (``/news/...``)."""
    return url.split("://", 1)[-1].partition("/")[2].split("/", 1)[0]


URLS_PER_CONNECTION = 2


def _charset(content_type: str) -> str | None:
    if "charset=" not in content_type.lower():
        return None
    return content_type.lower().split("charset=", 1)[1].split(";")[0].strip().strip('"') or None


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def warc_date(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def ts14(dt: datetime) -> str:
    return dt.strftime("%Y%m%d%H%M%S")


def new_run_id(now: datetime) -> str:
    return f"{ts14(now)}-{secrets.token_hex(2)}"


class Harvest:
    def __init__(self, collection: Collection, job: JobSettings, mode: str | None = None,
                 progress: Callable[[dict], None] | None = None,
                 transport: httpx.AsyncBaseTransport | None = None):
        self.collection = collection
        self.job = job
        self.requested_mode = mode
        self.progress = progress
        if transport is None:
            from harvester.login import harvest_transport

            transport = harvest_transport(job)  # login cookies and proxies; None when the job has neither
        self.transport = transport
        self.fetcher: FetchProcess | None = None
        self.figures = RunFigures()
        self.run_id: str | None = None
        self.mode: str | None = None
        self.status = "running"
        self._stop = False
        self._workers: list[asyncio.Task] = []
        self._last_progress = 0.0
        self.recent_errors: list[tuple[str, str]] = []
        self.notes: list[str] = []

    # -- public ------------------------------------------------------------------------------------
    def request_stop(self) -> None:
        """Stop cleanly: no new fetches, in-flight ones cancelled, files sealed, figures recorded."""
        self._stop = True
        for task in self._workers:
            task.cancel()

    async def run(self) -> dict:
        from harvester.recovery import recover

        coll = self.collection
        coll.create()
        cdxj.preload_indexer()
        with coll.harvest_lock():
            self.state = HarvestState(coll.db_path)
            try:
                recover(coll, self.state)
                summary = await self._run_locked()
            finally:
                self.state.close()
            if self.job.fulltext:
                summary["fulltext"] = self._index_fulltext()
            return summary

    def _index_fulltext(self) -> dict:
        """Add this run's new payloads to the collection's Whoosh index. A failure here never costs
        the harvest: the index can be rebuilt from the WARCs (`strata index rebuild`)."""
        from index.fulltext import index_run
        from strata.errors import StrataError

        try:
            return index_run(self.collection, self.run_id)
        except (StrataError, OSError, ValueError) as exc:
            self.recent_errors.append(("fulltext", str(exc)))
            return {"error": f"full-text index not updated: {exc}; run: strata index rebuild "
                             f"{self.collection.name}"}

    # -- the run ---------------------------------------------------------------------------------
    async def _run_locked(self) -> dict:
        state, job = self.state, self.job
        await self._after_last_snapshot()
        if job.login_form_url:
            from harvester.login import form_login, with_cookies

            self.transport = with_cookies(job, self.transport, await form_login(job, self.transport))
        started = utc_now()
        self.run_id = new_run_id(started)
        self.mode = self.requested_mode or ("incremental" if state.has_completed_run() else "full")
        state.begin_run(self.run_id, job.name, self.mode, iso(started), os.getpid())
        self.scope = Scope(list(job.seeds), hosts=job.scope, include=list(job.include), exclude=list(job.exclude),
                           max_depth=job.depth, embeds_offsite=job.embeds_offsite)
        # Twice as many URLs in hand as connections: while one is recorded, the next is on the wire.
        # Connections stay at `concurrency` (the fetch slots below and the client's pool).
        self.frontier = Frontier(delay=job.delay, per_host=job.concurrency * URLS_PER_CONNECTION,
                                 max_urls=job.max_urls)
        self._fetch_slots = asyncio.Semaphore(job.concurrency)
        self.kinds = PageKinds(job.index_patterns, job.content_patterns, job.default_page_kind, job.seeds)
        self.noise = NoiseRules(job.noise_selectors, job.noise_patterns)
        # Index/content strategy: only in incremental runs of jobs that name page kinds.
        self.strategy = self.mode == "incremental" and self.kinds.enabled and not job.recheck_all
        self.index_links: set[str] = set()
        self.index_pages_done: set[str] = set()
        self.fetched: set[str] = set()
        self.stopped_at: dict[str, int] = {}                         # listing section -> page where paging stopped
        self.oldest_on_page: dict[tuple[str, int], tuple] = {}      # (section, page) -> oldest link on it
        self.roller = WarcRoller(
            coll_archive := self.collection.archive_dir, self.collection.name,
            warcinfo={
                "software": f"Strata/{__version__} (warcio, httpx)",
                "job": job.name, "run-id": self.run_id, "mode": self.mode,
                "robots": "classic" if job.robots == "obey" else "ignore",
                "http-header-user-agent": job.user_agent,
                "isPartOf": self.collection.name,
            },
            max_size=job.warc_max_size,
            on_open=lambda name: state.warc_opened(name, self.run_id),
            on_sealed=self._on_sealed,
            indexer=cdxj.RecordIndexer(),
            fixity=Fixity(self.collection.fixity_dir),
        )
        self._archive_dir = coll_archive
        self.client = make_client(job.concurrency, job.connect_timeout, job.timeout, job.user_agent,
                                  transport=self.transport)
        self.fetcher = await self._start_fetch_process()
        self.robots = RobotsCache(self._fetch_robots, user_agent=job.user_agent)
        self._seed_frontier()
        try:
            self._workers = [asyncio.create_task(self._worker())
                             for _ in range(job.concurrency * URLS_PER_CONNECTION)]
            results = await asyncio.gather(*self._workers, return_exceptions=True)
            for res in results:
                if isinstance(res, BaseException) and not isinstance(res, asyncio.CancelledError):
                    raise res
            self.status = "cancelled" if self._stop else "finished"
            if self.status == "finished" and self.strategy and job.check_deleted_links:
                self._record_vanished()
        except BaseException:
            self.status = "failed" if not self._stop else "cancelled"
            raise
        finally:
            if self.fetcher is not None:
                await self.fetcher.close()
            await self.client.aclose()
            self.roller.close()
            finished = utc_now()
            self.figures.warc_files = list(self.roller.files)
            self.figures.bytes_stored = self.roller.bytes_written
            state.update_run(self.run_id, status=self.status, finished=iso(finished), snapshot=ts14(finished),
                             figures=self.figures.as_dict())
            self._report(force=True)
        return self.summary(started, finished)

    def summary(self, started: datetime, finished: datetime) -> dict:
        return {
            "run_id": self.run_id, "collection": self.collection.name, "job": self.job.name,
            "mode": self.mode, "status": self.status, "started": iso(started), "finished": iso(finished),
            "snapshot": ts14(finished), **self.figures.as_dict(),
            "connections_per_host": self.job.concurrency,
            "recent_errors": [{"url": u, "error": e} for u, e in self.recent_errors[-10:]],
            "notes": list(self.notes),
        }

    async def _after_last_snapshot(self) -> None:
        """Runs get distinct snapshot seconds, so a snapshot never includes the next run's captures."""
        last = self.state.last_snapshot()
        for _ in range(30):
            if not last or ts14(utc_now()) > last:
                return
            await asyncio.sleep(0.1)

    def _seed_frontier(self) -> None:
        for seed in self.job.seeds:
            self._enqueue(Item(seed, 0, "seed"))
        if self.mode != "incremental":
            return
        for row in self.state.known_urls():
            decision = self.scope.decide(row["url"], row["depth"] or 0, row["link_kind"] or "navigation")
            if not decision.accept:
                continue
            if self.strategy:
                # Index pages are reached again from the seeds (so paging stops where old links
                # begin); content pages come back when due; resources come back with their pages.
                if row["page_kind"] != "content":
                    continue
                if not self._due(row):
                    self.frontier.add_seen(row["url"])
                    continue
            self._enqueue(Item(row["url"], row["depth"] or 0, "recheck", via=row["found_on"]))

    def _due(self, row: dict) -> bool:
        """Is a known content page due for a recheck? Records why not, for staff to see."""
        when, rate = due_at(row, self.job.min_interval, self.job.max_interval)
        if when is None or when <= utc_now():
            return True
        self.figures.skipped += 1
        self.state.add_check(self.run_id, row["url"], "not_due",
                             f"not due until {iso(when)} (estimated {rate:.3f} changes/day, "
                             f"{row.get('changes') or 0} changes in {row.get('checks') or 0} checks)", iso(utc_now()))
        return False

    def _enqueue(self, item: Item) -> None:
        if item.url.endswith("/robots.txt") and self.job.robots == "obey":
            return  # fetched (and archived) once per host by the robots cache
        if self.frontier.add(item):
            link_kind = "embed" if item.kind == "embed" else "navigation"
            self.state.see_url(item.url, url_host(item.url), self.run_id, iso(utc_now()), item.via, item.depth,
                               link_kind)

    async def _worker(self) -> None:
        while not self._stop:
            item = await self.frontier.get()
            if item is None:
                return
            try:
                await self._visit(item)
            finally:
                await self.frontier.done(item)
            self._report()

    # -- one URL -------------------------------------------------------------------------------------
    async def _visit(self, item: Item) -> None:
        if self.job.robots == "obey" and not item.url.endswith("/robots.txt"):
            rules = await self.robots.rules_for(item.url)
            if not rules.allowed(item.url):
                self.figures.skipped += 1
                self.state.add_check(self.run_id, item.url, "skipped", "disallowed by robots.txt", iso(utc_now()))
                return
        self.fetched.add(item.url)
        previous = self.state.url(item.url)
        conditional = decide.conditional_headers(previous) if self.mode == "incremental" else {}
        referer = {"Referer": item.via} if item.via else {}  # also lets a rebuild recover where it was found
        result = await self._fetch(item.url, {**referer, **conditional})
        try:
            self._record(item, result, previous, bool(conditional))
        finally:
            result.close()

    async def _start_fetch_process(self) -> FetchProcess | None:
        """A second process for HTTP when the job allows it, the machine has a core for it, and the
        client needs nothing the child cannot build itself (a login's cookies, the network guard)."""
        job = self.job
        if not job.fetch_process or self.transport is not None or (os.cpu_count() or 1) < 2:
            return None
        try:
            return await FetchProcess(job.concurrency, job.connect_timeout, job.timeout, job.user_agent).start()
        except OSError as exc:
            self.notes.append(f"fetching in-process: the fetch process did not start ({exc})")
            return None

    async def _fetch(self, url: str, extra_headers: dict[str, str]) -> FetchResult:
        headers = {"Accept-Encoding": ACCEPT_ENCODING, **extra_headers}
        self.figures.requests += 1
        if self.fetcher is not None and self.fetcher.alive:
            result = await self.fetcher.fetch(url, headers, self.job.timeout, self.job.max_resource_size)
        else:
            async with self._fetch_slots:      # a request waits for a connection before its deadline starts
                result = await fetch(self.client, url, headers=headers, deadline=self.job.timeout,
                                     max_size=self.job.max_resource_size)
        self.figures.bytes_downloaded += result.wire_bytes
        return result

    async def _fetch_robots(self, url: str) -> tuple[int | None, bytes | None]:
        """robots.txt through the harvester's own client, archived like any capture, up to 5 redirects."""
        for _ in range(6):
            previous = self.state.url(url)
            if previous is None:
                self.state.see_url(url, url_host(url), self.run_id, iso(utc_now()), None, 0, "embed")
                previous = None
            result = await self._fetch(url, {})
            try:
                self._record(Item(url, 0, "robots"), result, previous, False, follow=False)
                if result.status in (301, 302, 303, 307, 308):
                    target = normalize_url(result.header("Location") or "", url)
                    if target:
                        url = target
                        continue
                return result.status, result.read_body(600 * 1024) if result.status else None
            finally:
                result.close()
        return None, None

    def _record(self, item: Item, result: FetchResult, previous: dict | None, conditional: bool,
                follow: bool = True) -> None:
        state, figures = self.state, self.figures
        now = utc_now()
        if result.error:
            figures.errors += 1
            self.recent_errors = (self.recent_errors + [(item.url, result.error)])[-20:]
            state.add_check(self.run_id, item.url, "error", result.error, iso(now))
            return
        figures.urls_fetched += 1
        cls = decide.classify(previous, result.status, result.digest)
        date = warc_date(now)
        link_source = None   # () -> (raw body, Content-Type, Content-Encoding), called on a cache miss
        content_type = result.header("Content-Type") or ""
        mime = content_type.split(";")[0].strip().lower() or "unknown"
        url_update: dict = {"last_checked": iso(now), "last_run": self.run_id, "last_class": cls}
        digest_entry: Original | None = None

        if result.status == 304 and conditional and previous:
            original = Original(previous["orig_uri"], previous["orig_date"], previous["orig_record_id"],
                                previous["orig_warc"])
            main = records.not_modified_revisit(result, date, original, previous["digest"])
            record_type, digest, refers = "revisit", previous["digest"], original
            held = state.capture_by_record_id(original.record_id) or {}
            figures.bytes_saved += held.get("payload_length") or 0
            mime = held.get("mime") or mime
            if follow and mime in LINK_TYPES and held:
                # a 304 has no body: the links are those of the stored original
                link_source = lambda: self._stored_body(held)  # noqa: E731
        else:
            if mime in HTML_TYPES and decide.is_success(result.status):
                url_update["page_kind"] = self.kinds.kind(item.url)
                if cls == "changed" and decide.is_success(previous.get("last_status")):
                    # Only a changed payload needs the (costly) main-content comparison.
                    text = main_text(self._decoded_body(result), _charset(content_type), self.noise)
                    url_update["fingerprint"] = content_digest(text)
                    score = self._main_text_score(text, url_update["fingerprint"], previous)
                    if score >= self.job.change_threshold:
                        cls = url_update["last_class"] = "soft"
                        if not self.job.store_soft_changes:
                            self._skip_soft(item, result, previous, score, now, follow)
                            return
            original = None
            if self.mode == "incremental":
                original = state.lookup_digest(result.digest)
            decision = decide.dedup_decision(result.digest, result.truncated, result.body_length, original,
                                             result.status)
            digest, refers = result.digest, decision.original
            if decision.kind == "revisit":
                main = records.identical_revisit(result, date, decision.original)
                record_type = "revisit"
                figures.bytes_saved += result.body_length
            else:
                main = records.response_record(result, date)
                record_type = "response"
            if follow and mime in LINK_TYPES and result.status and result.status < 300:
                link_source = lambda: (result.read_body(), content_type, result.header("Content-Encoding"))  # noqa: E731
        request = records.request_record(result, date, records.record_id(main))
        main_loc, _ = self.roller.write([main, request])
        main_id = records.record_id(main)
        if record_type == "revisit":
            figures.revisits += 1
        elif result.digest and not result.truncated and result.body_length:
            digest_entry = Original(item.url, date, main_id, main_loc.filename)

        if record_type == "response" or result.status != 304:
            url_update["last_status"] = result.status
        if decide.is_success(result.status) or result.status == 304:
            url_update["digest"] = digest
            if digest_entry:
                url_update.update(orig_uri=item.url, orig_date=date, orig_record_id=main_id,
                                  orig_warc=main_loc.filename)
            elif refers is not None and result.status != 304:
                url_update.update(orig_uri=refers.url, orig_date=refers.warc_date, orig_record_id=refers.record_id,
                                  orig_warc=refers.warc)
            if result.status != 304:
                url_update.update(etag=result.header("ETag"), last_modified=result.header("Last-Modified"))
        else:
            url_update.update(digest=digest, orig_uri=None, orig_date=None, orig_record_id=None, orig_warc=None,
                              etag=None, last_modified=None)
        if cls == "deleted":
            url_update["deleted_at"] = iso(now)
        elif decide.is_success(result.status) or result.status == 304:
            url_update["deleted_at"] = None
        url_update["checks"] = (previous or {}).get("checks", 0) + 1 if previous else 1
        if cls in ("changed", "deleted"):
            url_update["changes"] = (previous or {}).get("changes", 0) + 1
        if digest != (previous or {}).get("digest") and "fingerprint" not in url_update:
            url_update["fingerprint"] = None   # it described the payload held before

        with state.transaction():
            state.add_capture(Capture(
                run_id=self.run_id, url=item.url, timestamp=ts14(now), warc_date=date, record_type=record_type,
                cls=cls, status=result.status, digest=digest, mime=mime, payload_length=result.body_length,
                warc=main_loc.filename, offset=main_loc.offset, length=main_loc.length, record_id=main_id,
                refers_to_uri=refers.url if refers else None, refers_to_date=refers.warc_date if refers else None,
                location=result.header("Location"),
            ))
            state.update_url(item.url, **url_update)
            if digest_entry:
                state.add_digest(digest, digest_entry)
        figures.count(cls)

        if not follow:
            return
        if result.status in (301, 302, 303, 307, 308):
            target = normalize_url(result.header("Location") or "", item.url)
            if target:
                self._follow(item, target, "redirect", item.depth)
        if link_source is not None:
            self._queue_links(item, digest, mime, link_source)

    def _links(self, item: Item, digest: str | None, source) -> list[Link]:
        """The page's links: from the outlink cache when its payload was parsed before (unchanged
        pages and 304s cost no parse), else extracted and cached."""
        cached = self.state.outlinks(item.url, digest) if digest else None
        if cached is not None:
            return [Link(url, kind, "cache") for url, kind in cached]
        raw, content_type, encoding = source()
        if raw is None:
            return []
        try:
            links = links_of_payload(raw, item.url, content_type, encoding)
        except DecodeError as exc:
            self.recent_errors = (self.recent_errors + [(item.url, f"links not extracted: {exc}")])[-20:]
            return []
        if digest:
            self.state.set_outlinks(item.url, digest, [(link.url, link.kind) for link in links])
        return links

    def _queue_links(self, item: Item, digest: str | None, mime: str, source) -> None:
        links = self._links(item, digest, source)
        paging: bool | None = None     # None: not an ordered listing; True: read on; False: stop
        if self.strategy and mime in HTML_TYPES and self.kinds.kind(item.url) == "index":
            self.index_pages_done.add(item.url)
            content = [link.url for link in links if link.kind != "embed" and self.kinds.kind(link.url) == "content"]
            self.index_links.update(content)
            if is_ordered_listing(content):
                # Newest first: read on to the next page only while this one holds links new since the
                # last run; past that, older pages hold only old links.
                paging = any(self._new_since_last_run(u) for u in content)
                section, page = _section(item.url), page_number(item.url)
                oldest = min(url_order_key(u) for u in content if url_order_key(u))
                self.oldest_on_page[(section, page)] = oldest
                if not paging:
                    self.stopped_at[section] = min(page, self.stopped_at.get(section, page))
        next_page = None
        if paging:
            later = [link.url for link in links if link.kind != "embed" and is_pagination_link(item.url, link.url)
                     and self.kinds.kind(link.url) == "index" and page_number(link.url) > page_number(item.url)]
            next_page = min(later, key=page_number, default=None)
        for link in links:
            depth = item.depth if link.kind == "embed" else item.depth + 1
            if paging is not None and link.kind != "embed" and is_pagination_link(item.url, link.url) \
                    and self.kinds.kind(link.url) == "index" and not self.frontier.seen(link.url):
                never_seen = self._new_since_last_run(link.url)
                if (paging and link.url == next_page) or never_seen:
                    self._follow(item, link.url, link.kind, depth)   # the next page, or a new one
                elif not paging:
                    self.frontier.add_seen(link.url)
                    self.state.add_check(self.run_id, link.url, "not_followed",
                                         f"listing {item.url} holds no links newer than the last run",
                                         iso(utc_now()))
                continue
            self._follow(item, link.url, link.kind, depth)

    def _new_since_last_run(self, url: str) -> bool:
        """Unknown before this run. Not "never checked": another worker may have fetched it already
        in this run (the home page links to the newest articles too), which says nothing about
        whether the listing that links to it holds news."""
        row = self.state.url(url)
        return not row or not row.get("last_checked") or row.get("first_run") == self.run_id

    def _follow(self, item: Item, url: str, kind: str, depth: int) -> None:
        if self.frontier.seen(url):
            return
        scope_kind = "embed" if kind == "embed" else "navigation"
        if kind == "redirect" and item.kind == "embed":
            scope_kind = "embed"
        if not self.scope.decide(url, depth, scope_kind).accept:
            return
        if self.strategy and scope_kind == "navigation" and self.kinds.kind(url) == "content":
            row = self.state.url(url)
            if row and row.get("last_checked") and not self._due(row):
                self.frontier.add_seen(url)
                return
        self._enqueue(Item(url, depth, "embed" if scope_kind == "embed" else kind, via=item.url))

    def _skip_soft(self, item: Item, result: FetchResult, previous: dict | None, similarity: float,
                   now: datetime, follow: bool) -> None:
        """A soft change the job does not store: nothing written, the check recorded (replay of this
        run shows the previous capture, as the NLC harvester does)."""
        self.figures.count("soft")
        self.state.add_check(self.run_id, item.url, "soft",
                             f"main content {similarity:.3f} similar to the stored capture; not stored", iso(now))
        self.state.update_url(item.url, last_checked=iso(now), last_run=self.run_id, last_class="soft",
                              checks=((previous or {}).get("checks") or 0) + 1)
        if follow:
            content_type = result.header("Content-Type") or ""
            mime = content_type.split(";")[0].strip().lower()
            self._queue_links(item, result.digest, mime,
                              lambda: (result.read_body(), content_type, result.header("Content-Encoding")))

    def _maybe_on_unread_page(self, url: str) -> bool:
        """Where paging stopped at page N of a listing, pages 0..N were read in order: a link older than
        the oldest of them may sit on a page after N (pages read out of order, such as a listing's
        new tail pages, say nothing about that)."""
        section = _section(url)
        if section not in self.stopped_at:
            return False
        read = [key for (sec, page), key in self.oldest_on_page.items() if sec == section
                and page <= self.stopped_at[section]]
        return not read or url_order_key(url) <= min(read)

    def _record_vanished(self) -> None:
        """Content pages that were listed on an index page read this run, and are on none now. Only
        when every listing was read to its end: where paging stopped early, an article may just
        have moved to a page not read, and its due recheck (a 404) is the evidence to wait for."""
        unsure = 0
        for row in self.state.known_urls():
            if row["page_kind"] != "content" or row["deleted_at"] or row["url"] in self.index_links:
                continue
            if row["found_on"] not in self.index_pages_done or row["url"] in self.fetched:
                continue
            if self._maybe_on_unread_page(row["url"]):
                unsure += 1     # as old as links on pages not read: it may just have moved there
                continue
            now = iso(utc_now())
            self.state.add_check(self.run_id, row["url"], "deleted",
                                 f"no longer linked from any index page (was on {row['found_on']})", now)
            self.state.update_url(row["url"], deleted_at=now, last_class="deleted")
            self.figures.deleted += 1
        if unsure:
            self.notes.append(f"{unsure} content page(s) not on the listing pages read were left to their due "
                              "recheck: paging stopped before links as old as theirs")

    def _main_text_score(self, text: str, fingerprint: str, previous: dict) -> float:
        """How alike the new main text is to the stored one (1.0: the same). Below a threshold of 1.0
        that is the Jaccard index; at 1.0 only equality matters, so the stored text is read back
        only when no fingerprint of it was kept, and no index is computed."""
        if previous.get("fingerprint") == fingerprint:
            return 1.0                  # the same main text: only noise moved
        exact = self.job.change_threshold >= 1.0
        if exact and previous.get("fingerprint"):
            return 0.0
        stored = self._stored_main_text(previous)
        if stored is None:
            return 0.0
        return float(text == stored) if exact else similarity(text, stored)

    def _stored_main_text(self, previous: dict) -> str | None:
        """The main text of the payload the collection holds for a URL, read back from its WARC."""
        held = self.state.capture_by_record_id(previous["orig_record_id"]) if previous.get("orig_record_id") else None
        if not held:
            return None
        body, content_type, encoding = self._stored_body(held)
        try:
            decoded = decode_content(body or b"", encoding)
        except DecodeError:
            return None
        return main_text(decoded, _charset(content_type), self.noise)

    def _decoded_body(self, result: FetchResult) -> bytes:
        try:
            return decode_content(result.read_body(), result.header("Content-Encoding"))
        except DecodeError:
            return b""

    # -- originals ---------------------------------------------------------------------------------
    def _stored_body(self, capture: dict) -> tuple[bytes | None, str, str | None]:
        """(payload as stored, Content-Type, Content-Encoding) of a capture, read back from its WARC."""
        try:
            _, http_headers, body = read_record(self._archive_dir / capture["warc"], capture["offset"])
        except (OSError, ValueError):
            return None, "", None
        if http_headers is None:
            return body, "", None
        return body, http_headers.get_header("Content-Type") or "", http_headers.get_header("Content-Encoding")

    # -- sealing ------------------------------------------------------------------------------------
    def _on_sealed(self, filename: str, size: int, lines: list[bytes] | None) -> None:
        self.state.warc_state(filename, "sealed", size)
        index_sealed_file(self.collection, self.state, filename, lines)

    def _report(self, force: bool = False) -> None:
        if not self.progress:
            return
        now = time.monotonic()
        if not force and now - self._last_progress < 0.5:
            return
        self._last_progress = now
        self.progress({
            "run_id": self.run_id, "queued": len(self.frontier), "in_flight": self.frontier.in_flight,
            "done": self.frontier.handed_out, "final": force, **self.figures.as_dict(),
            "bytes_stored": self.roller.bytes_written, "recent_errors": list(self.recent_errors[-5:]),
        })


def index_sealed_file(collection: Collection, state: HarvestState, filename: str,
                      lines: list[bytes] | None = None) -> None:
    """Merge a sealed file's CDXJ lines (made as it was written, else read from it) into the
    collection index; then its digests become usable."""
    if lines is None:
        lines = cdxj.index_warc(collection.archive_dir / filename, filename)
    cdxj.merge_lines(collection.cdxj_path, lines)
    state.warc_state(filename, "indexed")
