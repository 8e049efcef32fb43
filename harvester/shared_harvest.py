"""One worker's part in a run that several workers share (``strata worker`` on a root that uses Redis).

``SharedHarvest`` is a ``Harvest`` whose frontier is the run's ``SharedFrontier`` (URLs leased from
Redis, politeness across workers), whose WARC files carry the worker's label (name and warcinfo),
and whose run (``SharedRun``) outlives any one worker:

- the *lead* (the worker that claimed the queue entry) names the run, or resumes the unfinished
  one a dead lead left, seeds it, and closes it: once the frontier is settled and the other
  workers have left, it adds up their figures, writes the run's report and records the run;
- a *helper* joins an open run, works until the frontier is settled, seals its files (their
  digests and CDX lines become usable as each is sealed) and leaves its figures in Redis.

A worker killed mid-run loses nothing: its leases expire and other workers take the URLs again
(counted: ``expired_leases``; such a URL may have two captures in the run, ``captured_twice`` says
which), and its torn ``.open`` file is repaired by the next worker started with its label.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import time
from datetime import datetime
from typing import Any

from harvester.recovery import recover
from harvester.robots import RobotsUnreachable
from harvester.run import Harvest
from harvester.shared_frontier import SharedFrontier
from harvester.shared_run import SharedRun, add_figures
from harvester.warcfile import OPEN_SUFFIX
from index.capture.rebuild import rebuild_if_outdated
from index.storage import redisdb
from index.storage.redisstate import RedisHarvestState
from index.storage.statestore import open_harvest_state
from strata.errors import CollectionBusy, HarvestError
from strata.times import iso, utc_now

log = logging.getLogger(__name__)
BEAT_EVERY = 0.5
_NOT_ADDED = ("warc_files", "bytes_stored", "full_estimate", "change_rates")


class SharedHarvest(Harvest):
    def __init__(
        self,
        collection,
        job,
        *,
        redis_url: str,
        label: str,
        lead: bool,
        run_id: str | None = None,
        lease_seconds: float | None = None,
        **kwargs,
    ):
        super().__init__(collection, job, **kwargs)
        self.worker_label = label
        self.worker_key = f"{label}:{os.getpid()}:{os.urandom(2).hex()}"  # one per incarnation
        self.lead = lead
        self.join_run_id = run_id
        self.redis_url = redis_url
        self.r = redisdb.connect(redis_url)
        self.lease_seconds = lease_seconds or max(60.0, job.timeout * 3)
        self.shared: SharedRun | None = None
        self._last_beat = 0.0
        self._last_wait_said = -1e9
        self.expired_leases = 0
        self.captured_twice: list[str] = []
        self.handed_over = False  # this lead found another leading the run at its end: it left as a helper

    def _patient(self, call):
        return redisdb.patiently(self.redis_url, call, on_wait=self._waiting)

    def _waiting(self, message: str) -> None:
        """Redis is away: the whole worker waits (every step of a run needs it), and says so once per outage."""
        now = time.monotonic()
        if now - self._last_wait_said > 10.0:
            log.warning("worker %s: %s", self.worker_label, message)
            if len(self.notes) < 50:
                self.notes.append(f"{utc_now():%H:%M:%S} {message}")
        self._last_wait_said = now

    async def run(self) -> dict:
        coll = self.collection
        coll.create()
        if self.lead:
            rebuild_if_outdated(coll)
        own_suffix = f"-{self.worker_label}.warc.gz{OPEN_SUFFIX}"
        try:
            if self.lead:
                # A run left unfinished is this worker's to lead from now on, before it waits for the
                # collection's lock: a lead cut off from Redis may still hold that lock, and must learn
                # at its end that it no longer leads (``_end_run``), or it would close the run itself.
                resumed = self._patient(lambda: SharedRun.unfinished(self.r, coll.name, self.job_key))
                if resumed is not None:
                    self._patient(lambda: resumed.take_lead(self.worker_key))
                with await self._collection_lock(waits=resumed is not None):
                    summary = await self._locked_part(lambda name: name.endswith(own_suffix))
            else:
                summary = await self._locked_part(lambda name: name.endswith(own_suffix))
        finally:
            self.r.close()
        if self.lead and self.job.fulltext:  # (a lead that handed over is no longer one)
            summary["fulltext"] = self._index_fulltext()
        return summary

    async def _collection_lock(self, waits: bool) -> contextlib.ExitStack:
        """The collection's harvest lock, held. A lead resuming a run waits for it: the lead it takes
        over from may be alive, cut off from Redis, and hold it until it hands the run over."""
        said = False
        while True:
            stack = contextlib.ExitStack()
            try:
                stack.enter_context(self.collection.harvest_lock())
                return stack
            except CollectionBusy:
                if not waits:
                    raise
                if not said:
                    log.warning("worker %s: waiting for the worker that led the run to leave it", self.worker_label)
                    said = True
                await asyncio.sleep(0.5)

    async def _locked_part(self, own) -> dict:
        self.state = open_harvest_state(self.collection)
        if isinstance(self.state, RedisHarvestState):
            self.state.on_wait = self._waiting
        try:
            recover(self.collection, self.state, own=own)  # this label's torn files: a killed worker's
            return await self._run_locked()
        finally:
            self.state.close()

    # -- the seams of Harvest ------------------------------------------------------------------------
    def _begin_run(self, started: datetime) -> datetime:
        coll = self.collection.name
        if not self.lead:
            run = SharedRun.load(self.r, coll, self.join_run_id or "")
            if run is not None:
                # Known to the lead first, then the run must still be open: a lead that closes it has
                # either seen this worker (and waits for it) or said "closing" before this check.
                run.beat(self.worker_key, {}, left=False)
            if run is None or run.status() != "open":
                if run is not None:
                    run.beat(self.worker_key, {}, left=True)
                raise HarvestError(f"run {self.join_run_id} of {coll} is not open to more workers")
            self.shared, self.run_id, self.mode = run, run.run_id, run.mode
            return datetime.fromisoformat(run.started)
        resumed = SharedRun.unfinished(self.r, coll, self.job_key)
        if resumed is None:
            started = super()._begin_run(started)
            assert self.mode is not None
            self.shared = SharedRun.create(
                self.r, coll, self.job_key, self.run_id, self.mode, iso(started), lead=self.worker_key
            )
            return started
        resumed.take_lead(self.worker_key)
        self.shared, self.run_id, self.mode = resumed, resumed.run_id, resumed.mode
        if self.state.run(self.run_id) is None:
            self.state.begin_run(self.run_id, self.job_key, self.mode, resumed.started, os.getpid())
        else:
            self.state.update_run(self.run_id, status="running")
        self.notes.append(f"run {self.run_id} resumed by {self.worker_label} after its lead stopped")
        return datetime.fromisoformat(resumed.started)

    async def _visit(self, item) -> None:
        # The worker holds the URL's lease while it visits: its state row is read from Redis once.
        state = self.state
        if not isinstance(state, RedisHarvestState):
            return await super()._visit(item)
        state.hold(item.url)
        try:
            await super()._visit(item)
        finally:
            state.release(item.url)

    def _make_frontier(self) -> Any:  # a SharedFrontier: Frontier's interface, in Redis
        job = self.job
        return SharedFrontier(
            self.r,
            self.collection.name,
            self.run_id,
            self.worker_key,
            delay=job.delay,
            per_host=job.concurrency,  # leases per host across all workers: the job's connections per host
            per_worker=job.concurrency,  # and per worker: one URL a connection (no URL in hand holds a host)
            max_urls=job.max_urls,
            lease_seconds=self.lease_seconds,
            do=self._patient,
        )

    def _seed(self) -> None:
        if self.lead:
            self.paging.seed()
            assert self.shared is not None
            self.shared.open_to_others()

    def _closes_run(self) -> bool:
        # Listing pages are read by whichever worker takes them: no one worker can tell that a content
        # page vanished from all of them. The lead does, at its end, from what every worker read.
        return False

    def _stored(self) -> tuple[list[str], int]:
        files, size = list(self.roller.files), self.roller.bytes_written
        if self.lead:
            for figures in self._others():
                files += figures.get("warc_files") or []
                size += figures.get("bytes_stored") or 0
        return sorted(set(files)), size

    def _failure(self) -> str | None:
        fetched = self.figures.urls_fetched + sum(f.get("urls_fetched") or 0 for f in self._others())
        return None if fetched else super()._failure()

    async def _end_run(self, started: datetime) -> datetime:
        assert self.shared is not None
        if isinstance(self.frontier, SharedFrontier):
            self.frontier.flush()  # the leases of its last URLs, done after its last take
        shared, me = self.shared, self.worker_key
        if self.lead and not self._patient(lambda: shared.close_as_lead(me)):
            # Cut off long enough for the queue to retry the entry: another worker resumed the run and
            # leads it. This one leaves as a helper; the new lead adds up its figures and closes the run.
            self.lead, self.handed_over = False, True
            self.notes.append(
                f"run {self.run_id} is led by another worker now; {self.worker_label} left it as a helper"
            )
        if not self.lead:
            if self.paging.tells_vanished and self.status == "finished":
                reading = self.paging.reading()
                self._patient(lambda: shared.put_paging(me, reading))  # before it leaves: the lead waits for that
            self.roller.close()
            self.figures.warc_files, self.figures.bytes_stored = self._stored()
            self._beat(left=True)
            return utc_now()
        while not self._patient(lambda: self.shared.others_done(self.worker_key, self.lease_seconds)):
            await asyncio.sleep(0.2)
        for figures in self._others():
            add_figures(self.figures.__dict__, {k: v for k, v in figures.items() if k not in _NOT_ADDED})
        if self.paging.tells_vanished and self.status == "finished":
            self._record_vanished(shared)
        assert isinstance(self.frontier, SharedFrontier)
        self.expired_leases, _ = self.frontier.expired()
        counts = collections.Counter(c["url"] for c in self.state.captures(run_id=self.run_id))
        self.captured_twice = sorted(url for url, n in counts.items() if n > 1)
        if self.expired_leases:
            self.notes.append(
                f"{self.expired_leases} lease(s) expired (a worker stopped or was too slow); "
                f"{len(self.captured_twice)} URL(s) captured twice because of it"
            )
        finished = await super()._end_run(started)
        self.shared.close()
        return finished

    def _record_vanished(self, shared: SharedRun) -> None:
        """Content pages gone from every listing, as one harvester tells them, from what every worker
        read. A worker that stopped before saying what it read (killed, failed) may have read the
        listing a page moved to: then no page is called vanished, each is left to its due recheck."""
        readings = self._patient(shared.pagings)
        workers = self._patient(shared.workers)
        # who must have said: every other worker that fetched something, or did not leave (died)
        others = {
            key
            for key, w in workers.items()
            if key != self.worker_key and (not w["left"] or (w["figures"].get("urls_fetched") or 0) > 0)
        }
        if others - readings.keys():
            self.notes.append(
                f"{len(others - readings.keys())} worker(s) stopped before saying which listings they read: "
                "no page is called vanished in this run; each is left to its due recheck"
            )
            return
        for key, reading in readings.items():
            if key != self.worker_key:
                self.paging.add_reading(reading)
        self.paging.record_vanished()

    def _others(self) -> list[dict]:
        if self.shared is None:
            return []
        workers = self._patient(self.shared.workers)
        return [w["figures"] for key, w in workers.items() if key != self.worker_key]

    def _report(self, force: bool = False) -> None:
        super()._report(force)
        if force or time.monotonic() - self._last_beat >= BEAT_EVERY:
            self._beat()

    def _beat(self, left: bool = False) -> None:
        if self.shared is None:
            return
        self._last_beat = time.monotonic()
        figures = {**self.figures.as_dict(), "warc_files": list(self.roller.files)}
        figures["bytes_stored"] = self.roller.bytes_written
        self._patient(lambda: self.shared.beat(self.worker_key, figures, left))

    def summary(self, started: datetime, finished: datetime) -> dict:
        out = super().summary(started, finished)
        out.update(
            worker=self.worker_label,
            lead=self.lead,
            handed_over=self.handed_over,
            expired_leases=self.expired_leases,
            captured_twice=self.captured_twice,
        )
        return out

    # -- robots.txt once per run -------------------------------------------------------------------------
    async def _fetch_robots(self, url: str) -> tuple[int | None, bytes | None]:
        assert self.shared is not None
        shared = self.shared
        while True:
            answer = self._patient(lambda: shared.robots_answer(url))
            if answer is not None:
                kind, value = answer
                if kind == "error":
                    raise RobotsUnreachable(value)
                return value
            if self._patient(lambda: shared.claim_robots(url, self.worker_key, self.lease_seconds)):
                return await self._fetch_robots_for_all(shared, url)
            await asyncio.sleep(0.05)

    async def _fetch_robots_for_all(self, shared: SharedRun, url: str) -> tuple[int | None, bytes | None]:
        try:
            fetched = await super()._fetch_robots(url)
        except RobotsUnreachable as exc:
            why = str(exc)
            self._patient(lambda: shared.put_robots_error(url, why))
            raise
        self._patient(lambda: shared.put_robots(url, *fetched))
        return fetched
