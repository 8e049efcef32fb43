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
import contextlib
import dataclasses
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from harvester import decide, records
from harvester.change import NoiseRules, content_digest, main_text, main_text_and_links, similarity
from harvester.fetchproc import FetchProcess
from harvester.fetchresult import FetchResult
from harvester.frontier import Frontier, Item
from harvester.job import JobSettings
from harvester.links import LINK_TYPES, Link, links_of_payload
from harvester.recovery import recover
from harvester.report import RunFigures
from harvester.robots import RobotsCache, RobotsRules, RobotsUnreachable, effective_delay
from harvester.run_end import close_figures
from harvester.schedule import PageKinds
from harvester.scope import Scope
from harvester.strategy import PagingStrategy
from harvester.warcfile import RecordLocation, WarcRoller
from index.capture import decision, runhistory
from index.capture.rebuild import rebuild_if_outdated
from index.capture.seal import index_sealed_file
from index.cdx import cdxj
from index.collection import Collection
from index.fulltext.followproc import RunIndexer
from index.integrity.fixity import Fixity
from index.payload import DecodeError, decode_content, read_record
from index.state import Capture, Original
from index.storage.redisstate import RedisHarvestState
from index.storage.statestore import open_harvest_state
from strata import __version__
from strata.charset import charset_param
from strata.media import HTML_TYPES
from strata.times import iso, ts14, utc_now, warc_date
from strata.urls import normalize_url, url_host, url_origin

if TYPE_CHECKING:  # httpx is imported where a fetch runs in this process (none, with a fetch process)
    import httpx

    from harvester.proxies import ProxyPool

ACCEPT_ENCODING = "gzip, deflate"  # no br: only capped decoders touch stored bodies
MAX_REDIRECT_HOPS = 10


URLS_PER_CONNECTION = 2
# Seconds a transaction of URL rows stays open for more URLs to join before it commits: a commit
# writes every page it changed to the WAL, 0.1-0.3 ms each, and at 2.4 URLs a commit (one turn of the
# event loop) that was 85 us of CPU a URL, at 16 or more 45 us. A kill takes the rows of the URLs
# recorded in this time; their records are in the WARC already, and recovery derives their rows
# from it (``index.capture.rebuild.add_missing_captures``), as a rebuild would.
COMMIT_INTERVAL = 0.05


def new_run_id(now: datetime) -> str:
    return f"{ts14(now)}-{secrets.token_hex(2)}"


@dataclasses.dataclass(frozen=True)
class _Look:
    """What the harvest sees in a 2xx HTML payload before it is written (see ``Harvest._look``)."""

    page_kind: str | None = None
    fingerprint: str | None = None
    score: float = 0.0
    main_text_same: bool = False
    links: list[Link] | None = None  # the page's links when they came from the parse that gave its main text


class Harvest:
    def __init__(
        self,
        collection: Collection,
        job: JobSettings,
        mode: str | None = None,
        progress: Callable[[dict], None] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        adhoc: bool = False,
        index_in_background: bool = False,
    ):
        self.collection = collection
        #: Leave the rest of the run's full-text indexing to its indexer, in the background, rather
        #: than wait for it at the run's end (``index.fulltext.followproc``; ``strata harvest``'s default).
        self.index_in_background = index_in_background
        self.job = job
        # The job the run belongs to: its file's name; None for a run from --seed URLs (adhoc). A job's
        # incremental run rechecks the URLs its own runs queued, and its first run is full.
        self.job_key: str | None = None if adhoc else job.name
        self.requested_mode = mode
        self.progress = progress
        if transport is None and job.shapes_transport:  # else there is none to make
            from harvester.login import harvest_transport

            transport = harvest_transport(job)  # login cookies and proxies; None when the job has neither
        self.transport = transport
        self.fetcher: FetchProcess | None = None
        self.figures = RunFigures()
        self.run_id = ""  # set when the run starts
        self.mode: str | None = None
        self.status = "running"
        self._stop = False
        self._workers: list[asyncio.Task] = []
        self._last_progress = 0.0
        self.recent_errors: list[tuple[str, str]] = []
        self.notes: list[str] = []
        self.surplus_urls: list[str] = []  # captures whose server sent more than the message held
        self.host_errors: dict[str, tuple[int, str]] = {}  # host[:port] -> (errors, first error)
        self.hosts_answered: set[str] = set()  # hosts[:port] that sent at least one response
        #: Why a run that went to its end still failed (seeds unreachable, robots.txt unreadable).
        self.failure: str | None = None
        self._proxy_pool: ProxyPool | None = None  # the transport's ProxyPool when the job has proxies
        self._seeds_answered: set[str] = set()
        self._seed_errors: dict[str, str] = {}
        self._robots_unread: dict[str, str] = {}  # origin -> why its robots.txt could not be read
        self._proxy_failures: dict[str, int] = {}  # proxy (no credentials) -> failures seen
        #: The worker's label in its WARC file names and warcinfo (None: this host's name); set by
        #: ``harvester.shared_harvest`` for one of several workers on a run.
        self.worker_label: str | None = None
        #: The process that indexes the run's payloads while it runs (``index.fulltext.followproc``).
        self.fulltext_indexer: RunIndexer | None = None
        self._follows_fulltext = False

    # -- public ------------------------------------------------------------------------------------
    def request_stop(self) -> None:
        """Stop cleanly: no new fetches, in-flight ones cancelled, files sealed, figures recorded."""
        self._stop = True
        for task in self._workers:
            task.cancel()

    async def run(self) -> dict:
        coll = self.collection
        coll.create()
        rebuild_if_outdated(coll)
        # Full-text indexing follows the run in a process of its own (index.fulltext.follow); not
        # for one of several workers on a run (harvester.shared_harvest): its lead indexes at the end.
        self._follows_fulltext = self.job.fulltext
        with coll.harvest_lock():
            self.state = open_harvest_state(coll)  # SQLite, or Redis for URL state and digests (index.storage.backend)
            try:
                recover(coll, self.state)
                summary = await self._run_locked()
            finally:
                self.state.close()
                if self.fulltext_indexer is not None:  # it indexes the rest (not after a failure), commits, stops
                    ok = sys.exc_info()[0] is None
                    if ok and self.index_in_background:
                        await self.fulltext_indexer.detach()
                    else:
                        await self.fulltext_indexer.stop(finish=ok)
            if self.job.fulltext:
                summary["fulltext"] = self._index_fulltext()
            return summary

    def _index_fulltext(self) -> dict:
        """Add this run's new payloads to the collection's Whoosh index (those the indexer that
        followed the run has not added). A failure here never costs the harvest: the index can be
        rebuilt from the WARCs (`strata index rebuild`)."""
        from index.fulltext.update import index_run
        from strata.errors import StrataError

        try:
            if self.fulltext_indexer is not None:
                if self.fulltext_indexer.detached:  # searchable once it is done (CaptureStore.run_figures)
                    return self.fulltext_indexer.figures
                return self.fulltext_indexer.finish_run()
            return index_run(self.collection, self.run_id)
        except (StrataError, OSError, ValueError) as exc:
            self.recent_errors.append(("fulltext", str(exc)))
            return {"error": f"full-text index not updated: {exc}; run: strata index rebuild {self.collection.name}"}

    # -- the run ---------------------------------------------------------------------------------
    async def _run_locked(self) -> dict:
        state, job = self.state, self.job
        await self._after_last_snapshot()
        if job.login_form_url:
            from harvester.login import form_login, with_cookies

            self.transport = with_cookies(job, self.transport, await form_login(job, self.transport))
        self._proxy_pool = getattr(self.transport, "proxy_pool", None)
        started = self._begin_run(utc_now())
        assert self.mode is not None  # chosen by _begin_run
        self.scope = Scope(
            list(job.seeds),
            hosts=job.scope,
            include=list(job.include),
            exclude=list(job.exclude),
            max_depth=job.depth,
            embeds_offsite=job.embeds_offsite,
            same_host_any_port=job.same_host_any_port,
        )
        # Twice as many URLs in hand as connections: while one is recorded, the next is on the wire.
        # Connections stay at `concurrency` (the fetch slots below and the client's pool).
        self.frontier = self._make_frontier()
        self._fetch_slots = asyncio.Semaphore(job.concurrency)
        self.kinds = PageKinds(job.index_patterns, job.content_patterns, job.default_page_kind, job.seeds)
        self.noise = NoiseRules(job.noise_selectors, job.noise_patterns)
        self.paging = PagingStrategy(
            state,
            self.run_id,
            job,
            self.mode,
            self.kinds,
            self.scope,
            self.frontier,
            self.figures,
            self._enqueue,
            self.notes,
            self.job_key,
        )
        self.roller = WarcRoller(
            coll_archive := self.collection.archive_dir,
            self.collection.name,
            warcinfo={
                "software": f"Strata/{__version__} (warcio, httpx)",
                **({"job": self.job_key} if self.job_key else {}),
                "run-id": self.run_id,
                "mode": self.mode,
                "started": iso(started),
                "robots": "classic" if job.robots == "obey" else "ignore",
                "http-header-user-agent": job.user_agent,
                "isPartOf": self.collection.name,
                **({"worker": self.worker_label} if self.worker_label else {}),
            },
            label=self.worker_label,
            max_size=job.warc_max_size,
            on_open=self._on_opened,
            on_sealed=self._on_sealed,
            indexer=cdxj.RecordIndexer(),
            fixity=Fixity(self.collection.fixity_dir),
        )
        self._archive_dir = coll_archive
        self.client: httpx.AsyncClient | None = None  # made when first needed: see _in_process_client
        self.fetcher = await self._start_fetch_process()
        if self._follows_fulltext:
            self.fulltext_indexer = RunIndexer(self.collection, self.run_id, background=self.index_in_background)
            self.fulltext_indexer.start_when(lambda: self.figures.urls_fetched)
        self.robots = RobotsCache(self._fetch_robots, user_agent=job.user_agent)
        self._robots_answered: dict[str, float] = {}  # host -> when its robots.txt last answered
        self._crawl_delays: dict[str, float] = {}  # host -> seconds between requests it was given
        try:
            self.roller.write([])  # the run's first file (its warcinfo) at once: even a killed run leaves one
            with self._grouped_commits():
                self._seed()
                self._workers = [
                    asyncio.create_task(self._worker()) for _ in range(job.concurrency * URLS_PER_CONNECTION)
                ]
                results = await asyncio.gather(*self._workers, return_exceptions=True)
            for res in results:
                if isinstance(res, BaseException) and not isinstance(res, asyncio.CancelledError):
                    raise res
            self.status = "cancelled" if self._stop else "finished"
            if self._proxy_pool is not None:
                self._take_proxy_events()
                for name, count in self._proxy_failures.items():
                    self.notes.append(f"proxy {name} failed {count} time(s); see the errors")
            if self.status == "finished":
                self.failure = self._failure()
                if self.failure:
                    self.status = "failed"
            if self.status == "finished" and self._closes_run():
                self.paging.record_vanished()
        except BaseException:
            self.status = "failed" if not self._stop else "cancelled"
            raise
        finally:
            if self.fetcher is not None:
                await self.fetcher.close()
            if self.client is not None:
                await self.client.aclose()
            finished = await self._end_run(started)
        return self.summary(started, finished)

    # -- seams for harvester.shared_harvest (several workers on one run) --------------------------------
    def _begin_run(self, started: datetime) -> datetime:
        """Name the run, choose its mode, record its start; when it started."""
        self.run_id = new_run_id(started)
        # Incremental once this job has a finished full run: an interrupted or cancelled first run is no
        # baseline, and another job's runs are not this job's.
        self.mode = self.requested_mode or ("incremental" if self.state.has_full_baseline(self.job_key) else "full")
        self.state.begin_run(self.run_id, self.job_key, self.mode, iso(started), os.getpid())
        return started

    def _make_frontier(self) -> Frontier:
        job = self.job
        return Frontier(delay=job.delay, per_host=job.concurrency * URLS_PER_CONNECTION, max_urls=job.max_urls)

    def _seed(self) -> None:
        with self.state.transaction():  # every known URL seen again: one commit, not one per URL
            self.paging.seed()

    def _closes_run(self) -> bool:
        """Whether this harvest ends the run (vanished URLs, report, figures): one of several workers does not."""
        return True

    async def _end_run(self, started: datetime) -> datetime:
        """Seal the files and record how the run ended; when it ended."""
        state = self.state
        finished = utc_now()
        self._note_failed_hosts()
        if self.surplus_urls:
            self.notes.append(
                f"{len(self.surplus_urls)} response(s) came with bytes past their end (more than "
                f"Content-Length), e.g. {self.surplus_urls[0]}: their connections were closed "
                "and their records carry WARC-Strata-Note: content-length-surplus"
            )
        # the estimate and change rates go in the run's report: what the run stored before its report
        self.figures.warc_files, self.figures.bytes_stored = self._stored()
        close_figures(state, self.run_id, self.job_key, iso(started), self.figures)
        figures = self.figures.as_dict()
        if self.failure:
            figures["failure"] = self.failure
        self._write_run_record(iso(started), finished, figures)
        self.roller.close()
        self.figures.warc_files, self.figures.bytes_stored = self._stored()
        figures = self.figures.as_dict()
        if self.failure:
            figures["failure"] = self.failure
        state.update_run(
            self.run_id, status=self.status, finished=iso(finished), snapshot=ts14(finished), figures=figures
        )
        self._report(force=True)
        return finished

    def _stored(self) -> tuple[list[str], int]:
        """The run's WARC files and the bytes they hold (several workers: all of theirs)."""
        return list(self.roller.files), self.roller.bytes_written

    def _note_failed_hosts(self) -> None:
        """Hosts every request to which failed: a figure of the run, a note, and (CLI) a non-zero exit."""
        failed = sorted(h for h in self.host_errors if h not in self.hosts_answered)
        self.figures.failed_hosts = failed
        for host in failed:
            count, first = self.host_errors[host]
            self.notes.append(
                f"every request to {host or 'a URL without a host'} failed ({count} request(s); first error: {first})"
            )

    def _write_run_record(self, started: str, finished: datetime, figures: dict) -> None:
        """The run's report as a WARC metadata record, last in its last file (``index.capture.runhistory``):
        what a rebuild needs to restore the run, its checks and the URL state no capture holds."""
        self.figures.warc_files = list(self.roller.files)
        self.figures.bytes_stored = self.roller.bytes_written
        run = {
            "run_id": self.run_id,
            "job": self.job.name,
            "mode": self.mode,
            "status": self.status,
            "started": started,
            "finished": iso(finished),
            "snapshot": ts14(finished),
        }
        try:
            with tempfile.TemporaryFile() as report:
                runhistory.write_report(self.state, run, {**figures, **self.figures.as_dict()}, report)
                report.seek(0)
                self.roller.write([records.run_record(runhistory.run_uri(self.run_id), report, warc_date(utc_now()))])
        except OSError as exc:
            self.notes.append(
                f"the run's report was not written to its WARC ({exc}): a rebuild will restore this run as interrupted"
            )

    def summary(self, started: datetime, finished: datetime) -> dict:
        return {
            "run_id": self.run_id,
            "collection": self.collection.name,
            "job": self.job.name,
            "mode": self.mode,
            "status": self.status,
            "started": iso(started),
            "finished": iso(finished),
            "snapshot": ts14(finished),
            **self.figures.as_dict(),
            "connections_per_host": self.job.concurrency,
            "recent_errors": [{"url": u, "error": e} for u, e in self.recent_errors[-10:]],
            "notes": list(self.notes),
            "failure": self.failure,
        }

    def _take_proxy_events(self) -> None:
        """A proxy's failures go among the run's errors, under the proxy's name."""
        if self._proxy_pool is None:
            return
        for name, text in self._proxy_pool.take_events():
            self._proxy_failures[name] = self._proxy_failures.get(name, 0) + 1
            self.recent_errors = (self.recent_errors + [(name, text)])[-20:]

    def _failure(self) -> str | None:
        """Why this run must count as failed though it ran to its end, or None.

        RFC 9309: a robots.txt that cannot be read (5xx, unreachable) disallows the whole site, so
        a seed's site with one was not harvested at all; and a run none of whose seeds answered
        harvested nothing. Both used to end as "finished" with a few skipped URLs."""
        if self._proxy_pool is not None and self._proxy_pool.exhausted:
            return self._proxy_pool.exhausted
        seed_origins = {url_origin(seed) for seed in self.job.seeds}
        unread = [(origin, why) for origin, why in self._robots_unread.items() if origin in seed_origins]
        if unread:
            origin, why = unread[0]
            more = f" (and {len(unread) - 1} more seed site(s))" if len(unread) > 1 else ""
            return (
                f"robots.txt of {origin} could not be read ({why}), so nothing there was fetched "
                f"(RFC 9309: disallow all until it can be read){more}"
            )
        if self._seeds_answered:
            return None
        seed = self.job.seeds[0]
        if seed in self._seed_errors:
            return f"no seed could be fetched: {seed}: {self._seed_errors[seed]}"
        return (
            'no seed was fetched: robots.txt disallows every seed (robots = "ignore" only with the site\'s permission)'
        )

    async def _after_last_snapshot(self) -> None:
        """Runs get distinct snapshot seconds, so a snapshot never includes the next run's captures."""
        last = self.state.last_snapshot()
        for _ in range(30):
            if not last or ts14(utc_now()) > last:
                return
            await asyncio.sleep(0.1)

    def _enqueue(self, item: Item) -> None:
        if item.url.endswith("/robots.txt") and self.job.robots == "obey":
            return  # fetched (and archived) once per host by the robots cache
        if not self.frontier.add(item) or item.kind == "recheck":
            return  # a recheck was read from the job's own rows in the state: nothing new to record there
        link_kind = "embed" if item.kind == "embed" else "navigation"
        self.state.see_url(
            item.url,
            url_host(item.url),
            self.run_id,
            iso(utc_now()),
            item.via,
            item.depth,
            link_kind,
            job=self.job_key,
        )

    async def _worker(self) -> None:
        while not self._stop:
            item = await self.frontier.get()
            if item is None:
                return
            try:
                await self._visit(item)
            finally:
                await self.frontier.done(item)
            if self._proxy_pool is not None:
                self._take_proxy_events()
            self._report()

    # -- one URL -------------------------------------------------------------------------------------
    async def _visit(self, item: Item) -> None:
        if self.job.robots == "obey" and not item.url.endswith("/robots.txt"):
            rules = await self.robots.rules_for(item.url)
            if rules.crawl_delay is not None and item.host not in self._crawl_delays:
                self._apply_crawl_delay(item.host, rules.crawl_delay)
            if not rules.allowed(item.url):
                self.figures.skipped += 1
                why = (
                    self._robots_unreadable(item.url, rules)
                    if rules.disallows_everything
                    else "disallowed by robots.txt"
                )
                self.state.add_check(self.run_id, item.url, "skipped", why, iso(utc_now()))
                return
        if self.frontier.paced(item.host):
            await self.frontier.pace(item.host)
        self.paging.fetched.add(item.url)
        previous = self.state.url(item.url)
        conditional = decide.conditional_headers(previous) if self.mode == "incremental" else {}
        referer = {"Referer": item.via} if item.via else {}  # also lets a rebuild recover where it was found
        result = await self._fetch(item.url, {**referer, **conditional})
        try:
            self._record(item, result, previous, bool(conditional))
        finally:
            result.close()

    def _robots_unreadable(self, url: str, rules: RobotsRules) -> str:
        """Say once per site, among the run's errors, that its robots.txt was unreadable; the reason
        each of its URLs was skipped."""
        origin = url_origin(url) or url
        why = rules.reason.removesuffix(": disallow all")
        if origin not in self._robots_unread:
            self._robots_unread[origin] = why
            self.recent_errors = (
                self.recent_errors
                + [
                    (
                        origin + "/robots.txt",
                        f"robots.txt could not be read ({why}): nothing on {origin} is fetched (RFC 9309)",
                    )
                ]
            )[-20:]
        return f"not fetched: robots.txt could not be read ({why}); RFC 9309 then disallows everything"

    def _apply_crawl_delay(self, host: str, asked: float) -> None:
        seconds = effective_delay(asked, self.job.delay, self.job.max_crawl_delay)
        self._crawl_delays[host] = seconds
        if seconds <= self.job.delay:
            return
        self.frontier.set_host_delay(host, seconds, since=self._robots_answered.get(host))
        capped = f" (it asks for {asked:g} s; capped by max_crawl_delay)" if asked > seconds else ""
        if len(self.notes) < 50:
            self.notes.append(
                f"{host}: requests spaced {seconds:g} s apart, as its robots.txt Crawl-delay asks{capped}"
            )

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
            from harvester.fetch import fetch

            async with self._fetch_slots:  # a request waits for a connection before its deadline starts
                result = await fetch(
                    self._in_process_client(),
                    url,
                    headers=headers,
                    deadline=self.job.timeout,
                    max_size=self.job.max_resource_size,
                )
        self.figures.bytes_downloaded += result.wire_bytes
        return result

    def _in_process_client(self) -> httpx.AsyncClient:
        """The client for fetching in this process (no fetch process, or it died), made at the first
        such fetch: making one loads the CA bundle (0.2 s of CPU), which a run whose fetch process
        does every fetch never needs here."""
        if self.client is None:
            from harvester.fetch import make_client

            job = self.job
            self.client = make_client(
                job.concurrency, job.connect_timeout, job.timeout, job.user_agent, transport=self.transport
            )
        return self.client

    async def _fetch_robots(self, url: str) -> tuple[int | None, bytes | None]:
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
                self._record(Item(url, 0, "robots"), result, previous, False, follow=False)
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

    def _record(
        self, item: Item, result: FetchResult, previous: dict | None, conditional: bool, follow: bool = True
    ) -> None:
        """Write what a fetch brought back and the URL's next state (``index.capture.decision``), then queue
        its links."""
        now = utc_now()
        if result.error:
            self.figures.errors += 1
            self.recent_errors = (self.recent_errors + [(item.url, result.error)])[-20:]
            self.state.add_check(self.run_id, item.url, "error", result.error, iso(now))
            host = urlsplit(item.url).netloc
            count, first = self.host_errors.get(host, (0, result.error))
            self.host_errors[host] = (count + 1, first)
            if item.kind == "seed":
                self._seed_errors.setdefault(item.url, result.error)
            return
        if item.kind == "seed":
            self._seeds_answered.add(item.url)
        self.figures.urls_fetched += 1
        self.hosts_answered.add(urlsplit(item.url).netloc)
        if result.surplus:
            self.surplus_urls.append(item.url)
        content_type = result.header("Content-Type") or ""
        mime = content_type.split(";")[0].strip().lower() or "unknown"
        parsed: list[Link] | None = None  # the links, when the main text's parse gave them
        if result.status == 304 and conditional and previous:
            capture, loc, mime, link_source = self._write_not_modified(item, result, previous, now, mime)
        else:
            look = self._look(item, result, previous, content_type, mime, follow)
            if look.main_text_same and not self.job.store_soft_changes:  # soft, and not stored
                self._skip_soft(item, result, previous, look, now, follow)
                return
            capture, loc = self._write_response(item, result, now, look)
            parsed = look.links
            link_source = None  # () -> (raw body, Content-Type, Content-Encoding), called on a cache miss
            if follow and mime in LINK_TYPES and result.status and result.status < 300:
                link_source = lambda: (result.read_body(), content_type, result.header("Content-Encoding"))  # noqa: E731
        decided = decision.decide(previous, capture)
        # a record Strata wrote has all three
        assert capture.warc_date and capture.record_type and capture.record_id
        # The capture's state and the URLs it leads to in one transaction: one commit per URL, not one
        # more for each new URL seen and for its outlinks.
        failed: Exception | None = None
        with self.state.transaction():
            self.state.add_capture(
                Capture(
                    run_id=self.run_id,
                    url=item.url,
                    timestamp=ts14(now),
                    warc_date=capture.warc_date,
                    record_type=capture.record_type,
                    cls=decided.cls,
                    status=result.status,
                    digest=capture.digest,
                    mime=mime,
                    payload_length=result.body_length,
                    warc=loc.filename,
                    offset=loc.offset,
                    length=loc.length,
                    record_id=capture.record_id,
                    refers_to_uri=capture.refers_to.url if capture.refers_to else None,
                    refers_to_date=capture.refers_to.warc_date if capture.refers_to else None,
                    location=capture.location,
                )
            )
            self.state.update_url(item.url, **decided.state)
            if decided.original and capture.digest:
                self.state.add_digest(capture.digest, decided.original)
            self.figures.count(decided.cls)
            if follow:
                try:
                    self._follow(item, decided.redirect, capture.digest, mime, link_source, parsed)
                except Exception as exc:  # the capture is written: its state is committed all the same
                    failed = exc
        if failed is not None:
            raise failed

    def _follow(
        self, item: Item, redirect: str | None, digest: str | None, mime: str, link_source, parsed: list[Link] | None
    ) -> None:
        """Queue where a capture leads: its redirect's target, its links."""
        if redirect is not None:
            target = normalize_url(redirect, item.url)
            if target:
                self.paging.follow(item, target, "redirect", item.depth)
        if link_source is not None:
            self._queue_links(item, digest, mime, link_source, parsed)

    def _write_not_modified(
        self, item: Item, result: FetchResult, previous: dict, now: datetime, mime: str
    ) -> tuple[decision.Observation, RecordLocation, str, Callable | None]:
        """A 304 to a conditional request: a server-not-modified revisit of the payload held."""
        date = warc_date(now)
        original = Original(
            previous["orig_uri"], previous["orig_date"], previous["orig_record_id"], previous["orig_warc"]
        )
        main = records.not_modified_revisit(result, date, original, previous["digest"])
        loc = self._write_pair(result, date, main)
        held = self.state.capture_by_record_id(original.record_id) or {}
        self.figures.bytes_saved += held.get("payload_length") or 0
        self.figures.revisits += 1
        mime = held.get("mime") or mime
        link_source = None
        if mime in LINK_TYPES and held:
            # a 304 has no body: the links are those of the stored original
            link_source = lambda: self._stored_body(held)  # noqa: E731
        return self._observation(item, result, now, main, loc, previous["digest"], original), loc, mime, link_source

    def _look(
        self, item: Item, result: FetchResult, previous: dict | None, content_type: str, mime: str, follow: bool
    ) -> _Look:
        """The page kind of a 2xx HTML payload and its main text's fingerprint, with, when only the
        main text can tell changed from soft, how alike it is to the text held. The fingerprint is
        taken whenever the page is parsed anyway, for its links (a payload new to this URL, from the
        same parse: ``harvester.change.main_text_and_links``), or for the comparison, so that a later
        change is told by the fingerprint alone, without reading back and parsing what is stored."""
        if mime not in HTML_TYPES or not decision.is_success(result.status):
            return _Look()
        page_kind = self.kinds.kind(item.url)
        compares = decision.compares_main_text(previous, result.status, result.digest)
        parses_links = follow and (previous is None or previous.get("digest") != result.digest)
        if not compares and not (parses_links and not self.noise.selectors):
            return _Look(page_kind)
        charset = charset_param(content_type)
        links = None
        try:
            body = decode_content(result.read_body(), result.header("Content-Encoding"))
        except DecodeError:  # no text; the links' own attempt reports the error
            text = ""
        else:
            if parses_links:
                text, links = main_text_and_links(body, item.url, charset, self.noise)
            else:
                text = main_text(body, charset, self.noise)
        fingerprint = content_digest(text)
        if not compares:
            return _Look(page_kind, fingerprint, links=links)
        assert previous is not None  # compares_main_text says there is a text held
        score = self._main_text_score(text, fingerprint, previous)
        return _Look(page_kind, fingerprint, score, score >= self.job.change_threshold, links)

    def _write_response(
        self, item: Item, result: FetchResult, now: datetime, look: _Look
    ) -> tuple[decision.Observation, RecordLocation]:
        """A response record, or an identical-payload revisit when an indexed original holds the payload."""
        date = warc_date(now)
        original = self._original_of(result.digest)
        write = decide.dedup_decision(result.digest, result.truncated, result.body_length, original, result.status)
        if write.kind == "revisit" and write.original is not None:
            main = records.identical_revisit(result, date, write.original)
            self.figures.bytes_saved += result.body_length
            self.figures.revisits += 1
        else:
            main = records.response_record(result, date)
        loc = self._write_pair(result, date, main)
        holds = write.kind == "response" and bool(result.digest) and not result.truncated and result.body_length > 0
        return self._observation(item, result, now, main, loc, result.digest, write.original, look, holds), loc

    def _original_of(self, digest: str | None) -> Original | None:
        """The record a payload may refer to. URL-agnostic: any URL's payload counts. An incremental
        run refers to any indexed file or earlier in its open one; a full run only to its own files,
        so that it stays complete on its own."""
        if not digest:
            return None
        original = self.state.lookup_digest(digest, self.roller.current_file)
        if original is not None and self.mode != "incremental" and original.warc not in self.roller.files:
            return None
        return original

    def _write_pair(self, result: FetchResult, date: str, main) -> RecordLocation:
        """The capture's record and, unless the job keeps requests of changed captures only and this
        is a revisit, the request it answered (``WARC-Concurrent-To`` the capture)."""
        if main.rec_type == "revisit" and self.job.request_records == "changed":
            return self.roller.write([main])[0]
        request = records.request_record(result, date, records.record_id(main))
        written, request_written = self.roller.write([main, request])
        self.figures.request_records += 1
        self.figures.request_bytes += request_written.length
        return written

    def _observation(
        self,
        item: Item,
        result: FetchResult,
        now: datetime,
        main,
        loc: RecordLocation,
        digest: str | None,
        refers: Original | None,
        look: _Look | None = None,
        holds: bool = False,
    ) -> decision.Observation:
        look = look or _Look()
        return decision.Observation(
            url=item.url,
            at=iso(now),
            run_id=self.run_id,
            status=result.status,
            digest=digest,
            record_type=main.rec_type,
            profile=main.rec_headers.get_header("WARC-Profile"),
            record_id=records.record_id(main),
            warc_date=main.rec_headers.get_header("WARC-Date"),
            warc=loc.filename,
            holds_payload=holds,
            refers_to=refers,
            etag=result.header("ETag"),
            last_modified=result.header("Last-Modified"),
            location=result.header("Location"),
            page_kind=look.page_kind,
            fingerprint=look.fingerprint,
            main_text_same=look.main_text_same,
        )

    def _links(self, item: Item, digest: str | None, source, parsed: list[Link] | None = None) -> list[Link]:
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
            self.recent_errors = (self.recent_errors + [(item.url, f"links not extracted: {exc}")])[-20:]
            return []
        if digest:
            self.state.set_outlinks(item.url, digest, [(link.url, link.kind) for link in links])
        return links

    def _queue_links(self, item: Item, digest: str | None, mime: str, source, parsed: list[Link] | None = None) -> None:
        self.paging.queue_links(item, self._links(item, digest, source, parsed), mime)

    def _skip_soft(
        self, item: Item, result: FetchResult, previous: dict | None, look: _Look, now: datetime, follow: bool
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
                self._queue_links(
                    item,
                    result.digest,
                    mime,
                    lambda: (result.read_body(), content_type, result.header("Content-Encoding")),
                    look.links,
                )

    def _main_text_score(self, text: str, fingerprint: str, previous: dict) -> float:
        """How alike the new main text is to the stored one (1.0: the same). Below a threshold of 1.0
        that is the Jaccard index; at 1.0 only equality matters, so the stored text is read back
        only when no fingerprint of it was kept, and no index is computed."""
        if previous.get("fingerprint") == fingerprint:
            return 1.0  # the same main text: only noise moved
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
        return main_text(decoded, charset_param(content_type), self.noise)

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
    def _grouped_commits(self) -> contextlib.AbstractContextManager:
        """The URLs recorded within ``COMMIT_INTERVAL`` share a commit (``index.state.commits_deferred``).
        Not with URL state in Redis: a Redis call waiting out an outage would then hold SQLite's
        write lock, which the run's other workers wait for."""
        if isinstance(self.state, RedisHarvestState):
            return contextlib.nullcontext()
        loop = asyncio.get_running_loop()
        return self.state.commits_deferred(lambda commit: loop.call_later(COMMIT_INTERVAL, commit))

    def _on_opened(self, filename: str) -> None:
        self.state.commit_now()  # a file's states are committed as they change, as without deferred commits
        self.state.warc_opened(filename, self.run_id)
        self.state.commit_now()

    def _on_sealed(self, filename: str, size: int, lines: list[bytes] | None) -> None:
        self.state.commit_now()
        self.state.warc_state(filename, "sealed", size)
        self.state.commit_now()
        index_sealed_file(self.collection, self.state, filename, lines)
        self.state.commit_now()

    def _report(self, force: bool = False) -> None:
        if not self.progress:
            return
        now = time.monotonic()
        if not force and now - self._last_progress < 0.5:
            return
        self._last_progress = now
        self.progress(
            {
                "run_id": self.run_id,
                "queued": len(self.frontier),
                "in_flight": self.frontier.in_flight,
                "done": self.frontier.handed_out,
                "final": force,
                **self.figures.as_dict(),
                "bytes_stored": self.roller.bytes_written,
                "recent_errors": list(self.recent_errors[-5:]),
            }
        )
