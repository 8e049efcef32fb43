"""One worker's part in a run that several workers share (``strata worker`` on a root that uses Redis).

``shared_harvest(...)`` is a ``Harvest`` (``harvester.run``) with a ``SharedCoordinator``: its frontier
is the run's ``SharedFrontier`` (URLs leased from Redis, politeness across workers), its WARC files
carry the worker's label (name and warcinfo), and its run (``SharedRun``) outlives any one worker:

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
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any

from harvester.coordinator import Coordinator
from harvester.job import JobSettings
from harvester.robots import RobotsUnreachable
from harvester.run import Harvest
from harvester.shared_frontier import SharedFrontier
from harvester.shared_run import SharedRun, add_figures
from harvester.visit import RobotsFetch
from harvester.warcfile import OPEN_SUFFIX
from index.capture.rebuild import rebuild_if_outdated
from index.collection import Collection
from index.storage import redisdb
from strata.errors import CollectionBusy, HarvestError
from strata.times import iso, utc_now

log = logging.getLogger(__name__)
BEAT_EVERY = 0.5
_NOT_ADDED = ("warc_files", "bytes_stored", "full_estimate", "change_rates")


def shared_harvest(
    collection: Collection,
    job: JobSettings,
    *,
    redis_url: str,
    label: str,
    lead: bool,
    run_id: str | None = None,
    lease_seconds: float | None = None,
    **kwargs: Any,
) -> Harvest:
    """One worker's harvest of a shared run: the lead's (it claimed the queue entry) or a helper's
    (it joins ``run_id``). Browser capture is refused (docs/browser-capture.md, "Shared runs")."""
    if job.capture == "browser":
        raise HarvestError(
            f'job {job.name!r}: capture = "browser" runs on one machine only, not as a shared run on Redis '
            "(each worker would capture the resources its pages share once more); run it with "
            "`strata harvest COLLECTION --job JOB`, which captures on this machine alone"
        )
    coordinator = SharedCoordinator(
        redis_url=redis_url,
        label=label,
        lead=lead,
        run_id=run_id,
        lease_seconds=lease_seconds or max(60.0, job.timeout * 3),
    )
    return Harvest(collection, job, coordinator=coordinator, **kwargs)


class SharedCoordinator(Coordinator):
    follows_fulltext = False  # the lead indexes the run at its end

    def __init__(self, *, redis_url: str, label: str, lead: bool, run_id: str | None, lease_seconds: float):
        self.label = label
        self.worker_key = f"{label}:{os.getpid()}:{os.urandom(2).hex()}"  # one per incarnation
        self.lead = lead
        self.join_run_id = run_id
        self.redis_url = redis_url
        self.r = redisdb.connect(redis_url)
        self.lease_seconds = lease_seconds
        self.shared: SharedRun | None = None
        self._last_beat = 0.0
        self._last_wait_said = -1e9
        self.expired_leases = 0
        self.captured_twice: list[str] = []
        self.handed_over = False  # this lead found another leading the run at its end: it left as a helper
        own_suffix = f"-{label}.warc.gz{OPEN_SUFFIX}"
        self.own_files: Callable[[str], bool] | None = lambda name: name.endswith(own_suffix)
        self.on_wait: Callable[[str], None] | None = self._waiting

    def _patient(self, call):
        return redisdb.patiently(self.redis_url, call, on_wait=self._waiting)

    def _waiting(self, message: str) -> None:
        """Redis is away: the whole worker waits (every step of a run needs it), and says so once per outage."""
        now = time.monotonic()
        if now - self._last_wait_said > 10.0:
            log.warning("worker %s: %s", self.label, message)
            self.harvest.log.note_some(f"{utc_now():%H:%M:%S} {message}")
        self._last_wait_said = now

    @property
    def indexes_fulltext(self) -> bool:
        return self.lead  # (a lead that handed over is no longer one)

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        coll = self.harvest.collection
        try:
            if self.lead:
                rebuild_if_outdated(coll)
                # A run left unfinished is this worker's to lead from now on, before it waits for the
                # collection's lock: a lead cut off from Redis may still hold that lock, and must learn
                # at its end that it no longer leads (``end_run``), or it would close the run itself.
                resumed = self._patient(lambda: SharedRun.unfinished(self.r, coll.name, self.harvest.job_key))
                if resumed is not None:
                    self._patient(lambda: resumed.take_lead(self.worker_key))
                with await self._collection_lock(waits=resumed is not None):
                    yield
            else:
                yield
        finally:
            self.r.close()

    async def _collection_lock(self, waits: bool) -> contextlib.ExitStack:
        """The collection's harvest lock, held. A lead resuming a run waits for it: the lead it takes
        over from may be alive, cut off from Redis, and hold it until it hands the run over."""
        said = False
        while True:
            stack = contextlib.ExitStack()
            try:
                stack.enter_context(self.harvest.collection.harvest_lock())
                return stack
            except CollectionBusy:
                if not waits:
                    raise
                if not said:
                    log.warning("worker %s: waiting for the worker that led the run to leave it", self.label)
                    said = True
                await asyncio.sleep(0.5)

    # -- the steps of the run ------------------------------------------------------------------------
    def begin_run(self, started: datetime) -> tuple[str, str, datetime]:
        harvest = self.harvest
        coll = harvest.collection.name
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
            self.shared = run
            return run.run_id, run.mode, datetime.fromisoformat(run.started)
        resumed = SharedRun.unfinished(self.r, coll, harvest.job_key)
        if resumed is None:
            run_id, mode, started = super().begin_run(started)
            self.shared = SharedRun.create(
                self.r, coll, harvest.job_key, run_id, mode, iso(started), lead=self.worker_key
            )
            return run_id, mode, started
        resumed.take_lead(self.worker_key)
        self.shared = resumed
        state = harvest.state
        if state.run(resumed.run_id) is None:
            state.begin_run(resumed.run_id, harvest.job_key, resumed.mode, resumed.started, os.getpid())
        else:
            state.update_run(resumed.run_id, status="running")
        harvest.log.notes.append(f"run {resumed.run_id} resumed by {self.label} after its lead stopped")
        return resumed.run_id, resumed.mode, datetime.fromisoformat(resumed.started)

    def holding(self, url: str) -> contextlib.AbstractContextManager[None]:
        # The worker holds the URL's lease while it visits: its state row is read from Redis once.
        return self.harvest.state.holding(url)

    def make_frontier(self) -> Any:  # a SharedFrontier: Frontier's interface, in Redis
        harvest = self.harvest
        job = harvest.job
        return SharedFrontier(
            self.r,
            harvest.collection.name,
            harvest.run_id,
            self.worker_key,
            delay=job.delay,
            per_host=job.concurrency,  # leases per host across all workers: the job's connections per host
            per_worker=job.concurrency,  # and per worker: one URL a connection (no URL in hand holds a host)
            max_urls=job.max_urls,
            lease_seconds=self.lease_seconds,
            do=self._patient,
        )

    def seed(self) -> None:
        if self.lead:
            self.harvest.paging.seed()
            assert self.shared is not None
            self.shared.open_to_others()

    # Listing pages are read by whichever worker takes them: no one worker can tell that a content
    # page vanished from all of them. The lead does, at its end, from what every worker read.
    closes_run = False

    def stored(self) -> tuple[list[str], int]:
        recorder = self.harvest.recorder
        files, size = recorder.files, recorder.bytes_written
        if self.lead:
            for figures in self._others():
                files += figures.get("warc_files") or []
                size += figures.get("bytes_stored") or 0
        return sorted(set(files)), size

    def failure(self) -> str | None:
        fetched = self.harvest.figures.urls_fetched + sum(f.get("urls_fetched") or 0 for f in self._others())
        return None if fetched else super().failure()

    async def end_run(self, started: datetime) -> datetime:
        harvest = self.harvest
        assert self.shared is not None
        if isinstance(harvest.frontier, SharedFrontier):
            harvest.frontier.flush()  # the leases of its last URLs, done after its last take
        shared, me = self.shared, self.worker_key
        if self.lead and not self._patient(lambda: shared.close_as_lead(me)):
            # Cut off long enough for the queue to retry the entry: another worker resumed the run and
            # leads it. This one leaves as a helper; the new lead adds up its figures and closes the run.
            self.lead, self.handed_over = False, True
            harvest.log.notes.append(
                f"run {harvest.run_id} is led by another worker now; {self.label} left it as a helper"
            )
        if not self.lead:
            if harvest.paging.tells_vanished and harvest.status == "finished":
                reading = harvest.paging.reading()
                self._patient(lambda: shared.put_paging(me, reading))  # before it leaves: the lead waits for that
            harvest.recorder.close()
            harvest.figures.warc_files, harvest.figures.bytes_stored = self.stored()
            self._beat(left=True)
            return utc_now()
        while not self._patient(lambda: shared.others_done(self.worker_key, self.lease_seconds)):
            await asyncio.sleep(0.2)
        for figures in self._others():
            add_figures(harvest.figures.__dict__, {k: v for k, v in figures.items() if k not in _NOT_ADDED})
        if harvest.paging.tells_vanished and harvest.status == "finished":
            self._record_vanished(shared)
        assert isinstance(harvest.frontier, SharedFrontier)
        self.expired_leases, _ = harvest.frontier.expired()
        counts = collections.Counter(c["url"] for c in harvest.state.captures(run_id=harvest.run_id))
        self.captured_twice = sorted(url for url, n in counts.items() if n > 1)
        if self.expired_leases:
            harvest.log.notes.append(
                f"{self.expired_leases} lease(s) expired (a worker stopped or was too slow); "
                f"{len(self.captured_twice)} URL(s) captured twice because of it"
            )
        finished = await harvest.close_run(started)
        shared.close()
        return finished

    def _record_vanished(self, shared: SharedRun) -> None:
        """Content pages gone from every listing, as one harvester tells them, from what every worker
        read. A worker that stopped before saying what it read (killed, failed) may have read the
        listing a page moved to: then no page is called vanished, each is left to its due recheck."""
        harvest = self.harvest
        readings = self._patient(shared.pagings)
        workers = self._patient(shared.workers)
        # who must have said: every other worker that fetched something, or did not leave (died)
        others = {
            key
            for key, w in workers.items()
            if key != self.worker_key and (not w["left"] or (w["figures"].get("urls_fetched") or 0) > 0)
        }
        if others - readings.keys():
            harvest.log.notes.append(
                f"{len(others - readings.keys())} worker(s) stopped before saying which listings they read: "
                "no page is called vanished in this run; each is left to its due recheck"
            )
            return
        for key, reading in readings.items():
            if key != self.worker_key:
                harvest.paging.add_reading(reading)
        harvest.paging.record_vanished()

    def _others(self) -> list[dict]:
        if self.shared is None:
            return []
        workers = self._patient(self.shared.workers)
        return [w["figures"] for key, w in workers.items() if key != self.worker_key]

    def progressed(self, force: bool) -> None:
        if force or time.monotonic() - self._last_beat >= BEAT_EVERY:
            self._beat()

    def _beat(self, left: bool = False) -> None:
        shared = self.shared
        if shared is None:
            return
        self._last_beat = time.monotonic()
        harvest = self.harvest
        figures = {**harvest.figures.as_dict(), "warc_files": harvest.recorder.files}
        figures["bytes_stored"] = harvest.recorder.bytes_written
        self._patient(lambda: shared.beat(self.worker_key, figures, left))

    def summary(self, out: dict) -> None:
        out.update(
            worker=self.label,
            lead=self.lead,
            handed_over=self.handed_over,
            expired_leases=self.expired_leases,
            captured_twice=self.captured_twice,
        )

    # -- robots.txt once per run -------------------------------------------------------------------------
    def share_robots(self, fetch: RobotsFetch) -> RobotsFetch:
        """robots.txt of a site fetched by one worker of the run, its answer (or its failure) kept in
        Redis for the others."""

        async def robots(url: str) -> tuple[int | None, bytes | None]:
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
                    return await self._fetch_robots_for_all(shared, url, fetch)
                await asyncio.sleep(0.05)

        return robots

    async def _fetch_robots_for_all(
        self, shared: SharedRun, url: str, fetch: RobotsFetch
    ) -> tuple[int | None, bytes | None]:
        try:
            fetched = await fetch(url)
        except RobotsUnreachable as exc:
            why = str(exc)
            self._patient(lambda: shared.put_robots_error(url, why))
            raise
        self._patient(lambda: shared.put_robots(url, *fetched))
        return fetched
