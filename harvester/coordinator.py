"""Who else works on a run: the parts of a run's lifecycle that depend on it.

``Coordinator`` is a run harvested by one process alone, on the collection's lock: it names the
run and chooses its mode, seeds an in-memory frontier, and closes the run at its end. Several
workers sharing a run (``harvester.shared_harvest.SharedCoordinator``) replace these steps (a
frontier in Redis, a lead that seeds and closes, robots.txt fetched once per run) while the
harvest itself (``harvester.run``) stays the same:

    session()            what the run holds while it runs (the collection's lock)
    begin_run(started)   the run's id, mode and start, recorded
    make_frontier()      where its URLs wait
    seed()               its first URLs
    holding(url)         around each visit (a lease's row kept)
    share_robots(fetch)  how robots.txt is fetched
    progressed(force)    after each URL (a heartbeat)
    failure()            why a run that went to its end still failed
    end_run(started)     seal, add up, record how the run ended
    summary(out)         what it adds to the run's summary
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from harvester.frontier import Frontier
from harvester.job import JobSettings
from harvester.patch import Patch
from harvester.recorder import Recorder
from harvester.report import RunFigures
from harvester.runlog import RunLog
from harvester.strategy import PagingStrategy
from harvester.visit import RobotsFetch
from index.capture.rebuild import rebuild_if_outdated
from index.collection import Collection
from index.storage.state import HarvestState
from strata.times import iso, ts14

if TYPE_CHECKING:
    from harvester.proxies import ProxyPool

URLS_PER_CONNECTION = 2


class Harvest(Protocol):
    """What a coordinator reads and calls of the harvest it coordinates (``harvester.run.Harvest``)."""

    collection: Collection
    job: JobSettings
    job_key: str | None
    requested_mode: str | None
    patch: Patch | None
    state: HarvestState
    frontier: Frontier
    paging: PagingStrategy
    recorder: Recorder
    figures: RunFigures
    log: RunLog
    proxy_pool: ProxyPool | None
    run_id: str
    status: str

    async def close_run(self, started: datetime) -> datetime: ...


def new_run_id(now: datetime) -> str:
    return f"{ts14(now)}-{secrets.token_hex(2)}"


class Coordinator:
    """One process harvests the run alone."""

    #: The worker's label in its WARC file names and warcinfo (None: this host's name).
    label: str | None = None
    #: Full text indexed while the run runs (``index.fulltext.follow``), by a process of its own.
    follows_fulltext = True
    #: Which ``.open`` files recovery may repair (None: every one: no other writer is alive).
    own_files: Callable[[str], bool] | None = None
    #: Whether this harvest ends the run: vanished URLs, the run's report and figures.
    closes_run = True
    #: Hears each wait for a backend that is away (given to the harvest state).
    on_wait: Callable[[str], None] | None = None

    def bind(self, harvest: Harvest) -> None:
        self.harvest = harvest

    @property
    def indexes_fulltext(self) -> bool:
        """Whether this harvest adds the run to the full-text index at its end."""
        return True

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        collection = self.harvest.collection
        rebuild_if_outdated(collection)
        with collection.harvest_lock():
            yield

    def begin_run(self, started: datetime) -> tuple[str, str, datetime]:
        """Name the run, choose its mode, record its start: (run id, mode, when it started)."""
        harvest = self.harvest
        run_id = new_run_id(started)
        # Incremental once this job has a finished full run: an interrupted or cancelled first run is no
        # baseline, and another job's runs are not this job's. Until then a run is full, whoever asked
        # for an incremental one (the console's "Harvest now (incremental)" as the command line).
        baseline = harvest.state.has_full_baseline(harvest.job_key)
        mode = "full" if not baseline else harvest.requested_mode or "incremental"
        if harvest.patch is not None:  # a few resources for an earlier run: never the job's full baseline
            mode = "incremental"
        elif harvest.requested_mode == "incremental" and not baseline:
            harvest.log.notes.append(
                "an incremental run was asked for, but this job has no full run yet: this run is full"
            )
        harvest.state.begin_run(run_id, harvest.job_key, mode, iso(started), os.getpid())
        return run_id, mode, started

    def make_frontier(self) -> Frontier:
        # Twice as many URLs in hand as connections: while one is recorded, the next is on the wire.
        # Connections stay at `concurrency` (``harvester.fetcher``'s slots and its client's pool).
        job = self.harvest.job
        return Frontier(delay=job.delay, per_host=job.concurrency * URLS_PER_CONNECTION, max_urls=job.max_urls)

    def seed(self) -> None:
        harvest = self.harvest
        with harvest.state.transaction():  # every known URL seen again: one commit, not one per URL
            harvest.paging.seed()

    def holding(self, url: str) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def share_robots(self, fetch: RobotsFetch) -> RobotsFetch:
        return fetch

    def progressed(self, force: bool) -> None:
        pass

    def failure(self) -> str | None:
        harvest = self.harvest
        return harvest.log.failure(harvest.job, harvest.proxy_pool)

    def stored(self) -> tuple[list[str], int]:
        """The run's WARC files and the bytes they hold (several workers: all of theirs)."""
        recorder = self.harvest.recorder
        return recorder.files, recorder.bytes_written

    async def end_run(self, started: datetime) -> datetime:
        return await self.harvest.close_run(started)

    def summary(self, out: dict[str, Any]) -> None:
        pass
