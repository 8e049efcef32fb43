"""One harvest run of a collection, from its start to its end: the run's lifecycle.

``Harvest(collection, job, mode).run()``, in order:

1. the session (``harvester.coordinator``): the collection's lock, then recovery of what a killed
   run left (``harvester.recovery``);
2. the fetcher (``harvester.fetcher``: the job's login first), the run named and its mode chosen,
   its parts made: the scope, the frontier, the paging strategy (``harvester.strategy``), the
   recorder (``harvester.recorder``: WARC files, records, the capture path) and the visitor
   (``harvester.visit``: the path of one URL), and the full-text indexer that follows the run
   (``index.fulltext.followproc``);
3. the seeds, then ``2 x concurrency`` workers, each taking a URL from the frontier and visiting
   it, with at most ``concurrency`` fetches (connections) at once: while one URL is recorded, the
   next is on the wire;
4. the end: vanished pages, the run's figures and report (``harvester.run_end``,
   ``index.capture.runhistory``), the last file sealed, the run recorded, its full text indexed.

Several workers on one run differ only in their coordinator (``harvester.shared_harvest``).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harvester.change import NoiseRules
from harvester.coordinator import URLS_PER_CONNECTION, Coordinator
from harvester.fetcher import Fetcher, open_fetcher
from harvester.frontier import Frontier, Item
from harvester.job import JobSettings
from harvester.look import Looker
from harvester.recorder import Recorder
from harvester.recovery import recover
from harvester.report import RunFigures
from harvester.run_end import close_figures
from harvester.runlog import RunLog
from harvester.schedule import PageKinds
from harvester.scope import Scope
from harvester.strategy import PagingStrategy
from harvester.visit import RequestPath, Visitor, check_visitor, visitor_for
from index.collection import Collection
from index.fulltext.followproc import RunIndexer
from index.storage.state import HarvestState
from index.storage.statestore import open_harvest_state
from strata.times import iso, ts14, utc_now
from strata.urls import url_host

if TYPE_CHECKING:
    import httpx

    from harvester.proxies import ProxyPool

# Seconds a transaction of URL rows stays open for more URLs to join before it commits: a commit
# writes every page it changed to the WAL, 0.1-0.3 ms each, and at 2.4 URLs a commit (one turn of the
# event loop) that was 85 us of CPU a URL, at 16 or more 45 us. A kill takes the rows of the URLs
# recorded in this time; their records are in the WARC already, and recovery derives their rows
# from it (``index.capture.rebuild.add_missing_captures``), as a rebuild would.
COMMIT_INTERVAL = 0.05


class Harvest:
    state: HarvestState
    frontier: Frontier
    paging: PagingStrategy
    recorder: Recorder
    path: RequestPath
    visitor: Visitor

    def __init__(
        self,
        collection: Collection,
        job: JobSettings,
        mode: str | None = None,
        progress: Callable[[dict[str, Any]], None] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        adhoc: bool = False,
        index_in_background: bool = False,
        coordinator: Coordinator | None = None,
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
        self.transport = transport  # a transport of the caller's for every request (tests); None: the job's
        #: Who else works on the run (``harvester.coordinator``): nobody, unless one is given.
        self.coordinator = coordinator or Coordinator()
        self.coordinator.bind(self)
        #: What the run fetches through (``harvester.fetcher``): set when the run starts.
        self.fetcher: Fetcher | None = None
        self.proxy_pool: ProxyPool | None = None  # the fetcher's proxies when the job has some
        self.figures = RunFigures()
        self.log = RunLog()
        self.run_id = ""  # set when the run starts
        self.mode: str | None = None
        self.status = "running"
        #: Why a run that went to its end still failed (seeds unreachable, robots.txt unreadable).
        self.failure: str | None = None
        self._stop = False
        self._workers: list[asyncio.Task[None]] = []
        self._last_progress = 0.0
        #: The process that indexes the run's payloads while it runs (``index.fulltext.followproc``).
        self.fulltext_indexer: RunIndexer | None = None
        self._follows_fulltext = False

    @property
    def notes(self) -> list[str]:
        return self.log.notes

    @property
    def recent_errors(self) -> list[tuple[str, str]]:
        return self.log.recent_errors

    def request_stop(self) -> None:
        """Stop cleanly: no new fetches, in-flight ones cancelled, files sealed, figures recorded."""
        self._stop = True
        for task in self._workers:
            task.cancel()

    # -- the session -------------------------------------------------------------------------------
    async def run(self) -> dict[str, Any]:
        coll, coordinator = self.collection, self.coordinator
        check_visitor(self.job)  # a browser run without Chromium fails here, before anything is written
        coll.create()
        # Full-text indexing follows the run in a process of its own (index.fulltext.follow); not
        # for one of several workers on a run (harvester.shared_harvest): its lead indexes at the end.
        self._follows_fulltext = self.job.fulltext and coordinator.follows_fulltext
        async with coordinator.session():
            self.state = open_harvest_state(coll)  # SQLite, or Redis for URL state and digests (index.storage.backend)
            self.state.on_wait = coordinator.on_wait
            try:
                recover(coll, self.state, own=coordinator.own_files)
                summary = await self._run_locked()
            finally:
                self.state.close()
                if self.fulltext_indexer is not None:  # it indexes the rest (not after a failure), commits, stops
                    ok = sys.exc_info()[0] is None
                    if ok and self.index_in_background:
                        await self.fulltext_indexer.detach()
                    else:
                        await self.fulltext_indexer.stop(finish=ok)
            if self.job.fulltext and coordinator.indexes_fulltext:  # still under the collection's lock
                summary["fulltext"] = self._index_fulltext()
        return summary

    def _index_fulltext(self) -> dict[str, Any]:
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
            self.log.error("fulltext", str(exc))
            return {"error": f"full-text index not updated: {exc}; run: strata index rebuild {self.collection.name}"}

    # -- the run -----------------------------------------------------------------------------------
    async def _run_locked(self) -> dict[str, Any]:
        await self._after_last_snapshot()
        fetcher = await open_fetcher(self.job, self.transport, self.log.notes)  # a login first
        self.fetcher, self.proxy_pool = fetcher, fetcher.proxy_pool
        try:
            return await self._run_with(fetcher)
        finally:
            await fetcher.close()

    async def _run_with(self, fetcher: Fetcher) -> dict[str, Any]:
        state, job, coordinator = self.state, self.job, self.coordinator
        self.run_id, self.mode, started = coordinator.begin_run(utc_now())
        self.scope = Scope(
            list(job.seeds),
            hosts=job.scope,
            include=list(job.include),
            exclude=list(job.exclude),
            max_depth=job.depth,
            embeds_offsite=job.embeds_offsite,
            same_host_any_port=job.same_host_any_port,
        )
        self.frontier = coordinator.make_frontier()
        kinds = PageKinds(job.index_patterns, job.content_patterns, job.default_page_kind, job.seeds)
        self.paging = PagingStrategy(
            state,
            self.run_id,
            job,
            self.mode,
            kinds,
            self.scope,
            self.frontier,
            self.figures,
            self._enqueue,
            self.log.notes,
            self.job_key,
        )
        self.recorder = Recorder(
            self.collection,
            state,
            job,
            self.figures,
            run_id=self.run_id,
            mode=self.mode,
            job_key=self.job_key,
            started=started,
            label=coordinator.label,
        )
        looker = Looker(
            kinds,
            NoiseRules(job.noise_selectors, job.noise_patterns),
            job.change_threshold,
            state,
            self.recorder.stored_body,
        )
        self.path = RequestPath(
            job=job,
            run_id=self.run_id,
            mode=self.mode,
            job_key=self.job_key,
            state=state,
            scope=self.scope,
            frontier=self.frontier,
            paging=self.paging,
            fetcher=fetcher,
            recorder=self.recorder,
            looker=looker,
            figures=self.figures,
            log=self.log,
            share_robots=coordinator.share_robots,
        )
        self.visitor = visitor_for(job, self.path)
        if self._follows_fulltext:
            self.fulltext_indexer = RunIndexer(self.collection, self.run_id, background=self.index_in_background)
            self.fulltext_indexer.start_when(lambda: self.figures.urls_fetched)
        try:
            self.recorder.open_first_file()
            with self._grouped_commits():
                coordinator.seed()
                self._workers = [
                    asyncio.create_task(self._worker()) for _ in range(job.concurrency * URLS_PER_CONNECTION)
                ]
                results = await asyncio.gather(*self._workers, return_exceptions=True)
            for res in results:
                if isinstance(res, BaseException) and not isinstance(res, asyncio.CancelledError):
                    raise res
            self.status = "cancelled" if self._stop else "finished"
            if self.proxy_pool is not None:
                self.log.take_proxy_events(self.proxy_pool)
                self.log.note_proxy_failures()
            if self.status == "finished":
                self.failure = coordinator.failure()
                if self.failure:
                    self.status = "failed"
            if self.status == "finished" and coordinator.closes_run:
                self.paging.record_vanished()
        except BaseException:
            self.status = "failed" if not self._stop else "cancelled"
            raise
        finally:
            try:
                await self.visitor.close()
            finally:
                finished = await coordinator.end_run(started)
        return self.summary(started, finished)

    async def _after_last_snapshot(self) -> None:
        """Runs get distinct snapshot seconds, so a snapshot never includes the next run's captures."""
        last = self.state.last_snapshot()
        for _ in range(30):
            if not last or ts14(utc_now()) > last:
                return
            await asyncio.sleep(0.1)

    def _grouped_commits(self) -> contextlib.AbstractContextManager[None]:
        """The URLs recorded within ``COMMIT_INTERVAL`` share a commit (``index.storage.state.commits_deferred``),
        where the state's backend allows it."""
        loop = asyncio.get_running_loop()
        return self.state.grouped_commits(lambda commit: loop.call_later(COMMIT_INTERVAL, commit))

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
                with self.coordinator.holding(item.url):
                    await self.visitor.visit(item)
            finally:
                await self.frontier.done(item)
            if self.proxy_pool is not None:
                self.log.take_proxy_events(self.proxy_pool)
            self._report()

    # -- the end -----------------------------------------------------------------------------------
    async def close_run(self, started: datetime) -> datetime:
        """Seal the files and record how the run ended; when it ended."""
        state, coordinator = self.state, self.coordinator
        finished = utc_now()
        self.log.note_at_end(self.figures)
        # the estimate and change rates go in the run's report: what the run stored before its report
        self.figures.warc_files, self.figures.bytes_stored = coordinator.stored()
        close_figures(state, self.run_id, self.job_key, iso(started), self.figures)
        figures = self.figures.as_dict()
        if self.failure:
            figures["failure"] = self.failure
        self._write_run_record(iso(started), finished, figures)
        self.recorder.close()
        self.figures.warc_files, self.figures.bytes_stored = coordinator.stored()
        figures = self.figures.as_dict()
        if self.failure:
            figures["failure"] = self.failure
        state.update_run(
            self.run_id, status=self.status, finished=iso(finished), snapshot=ts14(finished), figures=figures
        )
        self._report(force=True)
        return finished

    def _write_run_record(self, started: str, finished: datetime, figures: dict[str, Any]) -> None:
        """The run's report as a WARC metadata record, last in its last file (``index.capture.runhistory``):
        what a rebuild needs to restore the run, its checks and the URL state no capture holds."""
        self.figures.warc_files = self.recorder.files
        self.figures.bytes_stored = self.recorder.bytes_written
        run = {
            "run_id": self.run_id,
            "job": self.job_key,  # None for a run from --seed URLs, as its row and its warcinfo say
            "mode": self.mode,
            "status": self.status,
            "started": started,
            "finished": iso(finished),
            "snapshot": ts14(finished),
        }
        failed = self.recorder.write_run_record(run, {**figures, **self.figures.as_dict()})
        if failed is not None:
            self.log.notes.append(
                f"the run's report was not written to its WARC ({failed}): "
                "a rebuild will restore this run as interrupted"
            )

    def _report(self, force: bool = False) -> None:
        if self.progress:
            now = time.monotonic()
            if force or now - self._last_progress >= 0.5:
                self._last_progress = now
                self.progress(
                    {
                        "run_id": self.run_id,
                        "queued": len(self.frontier),
                        "in_flight": self.frontier.in_flight,
                        "done": self.frontier.handed_out,
                        "final": force,
                        **self.figures.as_dict(),
                        "bytes_stored": self.recorder.bytes_written,
                        "recent_errors": list(self.log.recent_errors[-5:]),
                    }
                )
        self.coordinator.progressed(force)

    def summary(self, started: datetime, finished: datetime) -> dict[str, Any]:
        out = {
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
            "recent_errors": [{"url": u, "error": e} for u, e in self.log.recent_errors[-10:]],
            "notes": list(self.log.notes),
            "failure": self.failure,
        }
        self.coordinator.summary(out)
        return out
