"""``strata worker``: runs the harvests the console and the scheduler queued, in this process.

The worker claims queued runs (``harvester.jobs.queue``), at most ``max_parallel`` at once and never two of
one collection, and drives each as a ``harvester.run.Harvest`` on its own asyncio loop. While a run
goes, a heartbeat task writes its progress to the queue once a second and reads back whether staff
asked to cancel it; a cancel calls ``Harvest.request_stop()``, which seals the WARC files and
records the run as ``cancelled``.

Restarts lose nothing. On start, and every ``stale_after`` seconds, entries whose worker died
(a dead process on this host, or no heartbeat for ``stale_after`` seconds) are marked
``interrupted`` and queued again; the next harvest of the collection repairs what the dead
process left (``harvester.recovery``). A worker stopped by SIGTERM or SIGINT stops its runs
cleanly and queues them again the same way.

On a root that uses Redis (``index.storage.backend``) several workers, on one machine or many, share a
run: the one that claims the queue entry leads it (``harvester.shared_harvest``), and a worker with
a free slot joins any run open to more workers, taking URLs from its shared frontier. Each worker
has a label (``--label``; default: the host name), unique per machine (a lock file under the root's
``.strata/`` holds it): its WARC files carry it, and the next worker started with it repairs the
torn files a killed one left.

Every run the worker starts goes through the SSRF guard (``harvester.guard``) with the worker's
``NetworkPolicy``; a job's login cookies and proxies are applied by ``harvester.login``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harvester.guard import NetworkPolicy
from harvester.job import load_job_file
from harvester.jobs.queue import QueuedRun, RunQueue, open_queue, worker_id
from harvester.jobs.worker_label import check_label, host_label, joinable_runs, label_lock
from harvester.login import harvest_transport
from harvester.run import Harvest
from harvester.shared_harvest import SharedHarvest
from index.collection import Collection
from index.storage import redisdb
from index.storage.backend import backend_of
from strata import eventloop
from strata.errors import BackendUnavailable, StrataError

log = logging.getLogger(__name__)


@dataclasses.dataclass
class _Active:
    entry: QueuedRun
    harvest: Harvest | None = None
    progress: dict = dataclasses.field(default_factory=dict)
    cancelled: bool = False
    task: asyncio.Task | None = None


class Worker:
    def __init__(
        self,
        root: Path,
        policy: NetworkPolicy | None = None,
        *,
        queue: RunQueue | None = None,
        max_parallel: int = 2,
        poll: float = 1.0,
        heartbeat: float = 1.0,
        stale_after: float = 60.0,
        harvest_factory: Callable | None = None,
        report: Callable[[str], None] | None = None,
        label: str | None = None,
        lease_seconds: float | None = None,
    ):
        self.root = Path(root)
        self.policy = policy if policy is not None else NetworkPolicy()
        self.queue = queue or open_queue(self.root)
        self.max_parallel = max(1, max_parallel)
        self.poll = poll
        self.heartbeat_every = heartbeat
        self.stale_after = stale_after
        self.id = worker_id()
        self.report = report or (lambda text: log.info(text))
        self._harvest_factory = harvest_factory
        self._active: dict[int, _Active] = {}
        self._stopping = False
        self._wake = asyncio.Event()
        backend = backend_of(self.root)
        self.shared_url = backend.redis_url if backend.kind == "redis" else ""
        self.label = check_label(label or host_label())
        self.lease_seconds = lease_seconds
        self._helping: dict[str, _Active] = {}  # run id -> a run of another lead this worker works on
        self._redis: Any = None  # a client for the open shared runs (Guarded), made when first needed

    def stop(self) -> None:
        """Stop claiming; stop running harvests cleanly; they are queued again for the next start."""
        self._stopping = True
        for active in (*self._active.values(), *self._helping.values()):
            if active.harvest is not None:
                active.harvest.request_stop()
        self._wake.set()

    async def run(self, once: bool = False) -> None:
        """Work until ``stop()``; with ``once``, until the queue holds nothing this worker can take."""
        self._wake = asyncio.Event()
        last_recovery = -1e9
        loop = asyncio.get_running_loop()
        backoff = 0.0
        while not self._stopping:
            try:
                if loop.time() - last_recovery >= min(self.stale_after, 60.0):
                    for entry in self.queue.recover(stale_after=self.stale_after):
                        self.report(f"run {entry.id} ({entry.collection}/{entry.job}) was interrupted: {entry.error}")
                    last_recovery = loop.time()
                self._claim_more()
                if self.shared_url:
                    self._join_more()
                if once and not self._active and not self._helping and not self._work_elsewhere():
                    break
                backoff = 0.0
            except BackendUnavailable as exc:
                # Redis away: runs in progress wait inside their own calls; the loop waits here, longer each time.
                backoff = min(max(backoff * 2, 0.5), 30.0)
                self.report(f"{exc.message}; trying again in {backoff:g} s")
                await asyncio.sleep(backoff)
                continue
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll)
        tasks = [a.task for a in (*self._active.values(), *self._helping.values()) if a.task]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def _claim_more(self) -> None:
        while len(self._active) + len(self._helping) < self.max_parallel and not self._stopping:
            # Not a collection this worker helps a shared run of: leading the retry of that run's entry
            # too, the lead's recovery would take the helper's open file (one label) for a dead one's.
            helping = frozenset(a.entry.collection for a in self._helping.values())
            entry = self.queue.claim(self.id, skip=helping)
            if entry is None:
                return
            active = _Active(entry)
            self._active[entry.id] = active
            active.task = asyncio.create_task(self._execute(active))

    async def _execute(self, active: _Active) -> None:
        entry = active.entry
        self.report(f"run {entry.id}: {entry.collection}/{entry.job} ({entry.mode}, attempt {entry.attempt})")
        beat = asyncio.create_task(self._heartbeat(active))
        try:
            summary = await self._harvest(active)
        except StrataError as exc:
            message = exc.message
            await self._settle(lambda: self.queue.finish(entry.id, "failed", error=message))
            self.report(f"run {entry.id} failed: {message}")
        except Exception as exc:  # noqa: BLE001  (recorded on the run; the worker goes on)
            log.exception("run %s failed", entry.id)
            why = f"{type(exc).__name__}: {exc}"
            await self._settle(lambda: self.queue.finish(entry.id, "failed", error=why))
        else:
            if summary["status"] == "cancelled" and self._stopping and not active.cancelled:
                await self._settle(
                    lambda: self.queue.heartbeat(entry.id, self.id, progress=summary, run_id=summary["run_id"])
                )
                await self._settle(
                    lambda: self.queue.interrupt(entry.id, f"worker {self.id} was stopped during the run")
                )
                self.report(f"run {entry.id} stopped with the worker; queued again")
            elif summary.get("handed_over"):
                # Cut off from Redis long enough that the entry was retried: the retry's worker leads the
                # run now and records its outcome (this entry is already marked interrupted).
                self.report(f"run {entry.id}: another worker resumed the run; this one's URLs went to it")
            else:
                failure = summary.get("failure")  # a run that went to its end and still failed says why
                await self._settle(
                    lambda: self.queue.finish(entry.id, summary["status"], summary=summary, error=failure)
                )
                self.report(
                    f"run {entry.id} {summary['status']}: {summary['urls_fetched']} URLs, "
                    f"{summary['bytes_stored']} bytes stored" + (f"; {failure}" if failure else "")
                )
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
            self._active.pop(entry.id, None)
            self._wake.set()

    async def _settle(self, call: Callable[[], object]) -> None:
        """A run's outcome written to the queue, however long Redis is away: an outcome not written
        would leave the entry running, then retried as if interrupted (the run done twice)."""
        delay = 0.5
        while True:
            try:
                call()
                return
            except BackendUnavailable as exc:
                self.report(f"{exc.message}; the run's outcome is kept, trying again in {delay:g} s")
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)

    async def _harvest(self, active: _Active) -> dict:
        entry = active.entry
        coll = Collection.open(self.root, entry.collection)
        job = load_job_file(coll.job_path(entry.job))
        factory = self._harvest_factory or Harvest

        def progress(p: dict) -> None:
            active.progress = p

        shared: dict[str, Any] = {}
        if self.shared_url and self._harvest_factory is None:
            factory = SharedHarvest
            shared = {
                "redis_url": self.shared_url,
                "label": self.label,
                "lead": True,
                "lease_seconds": self.lease_seconds,
            }
        harvest = factory(
            coll,
            job,
            mode=entry.harvest_mode,
            progress=progress,
            transport=harvest_transport(job, self.policy),
            **shared,
        )
        active.harvest = harvest
        if self._stopping or active.cancelled:
            harvest.request_stop()
        return await harvest.run()

    # -- runs of other leads (Redis) ----------------------------------------------------------------------
    def _work_elsewhere(self) -> bool:
        """A queued or running entry on a shared root: a run this worker may yet join (``--once``)."""
        return bool(self.shared_url) and bool(self.queue.entries(statuses=("queued", "running"), limit=1))

    def _join_more(self) -> None:
        # One harvest per collection in this process: two with one label would repair each other's open files.
        busy = {a.entry.collection for a in (*self._active.values(), *self._helping.values())}
        if self._redis is None:
            self._redis = redisdb.Guarded(redisdb.connect(self.shared_url), self.shared_url)  # BackendUnavailable
        for coll, job, run_id in joinable_runs(self._redis):
            if len(self._active) + len(self._helping) >= self.max_parallel or self._stopping:
                return
            if coll in busy or run_id in self._helping:
                continue
            active = _Active(QueuedRun.helping(coll, job or "", run_id))
            self._helping[run_id] = active
            active.task = asyncio.create_task(self._help(active, run_id))

    async def _help(self, active: _Active, run_id: str) -> None:
        entry = active.entry
        self.report(f"joining run {run_id} of {entry.collection}/{entry.job} as {self.label}")
        try:
            coll = Collection.open(self.root, entry.collection)
            job = load_job_file(coll.job_path(entry.job))
            active.harvest = SharedHarvest(
                coll,
                job,
                transport=harvest_transport(job, self.policy),
                redis_url=self.shared_url,
                label=self.label,
                lead=False,
                run_id=run_id,
                lease_seconds=self.lease_seconds,
                adhoc=not entry.job,
            )
            summary = await active.harvest.run()
            self.report(f"left run {run_id}: {summary['urls_fetched']} URLs, {summary['bytes_stored']} bytes stored")
        except StrataError as exc:
            self.report(f"could not work on run {run_id}: {exc.message}")
        except Exception:  # noqa: BLE001  (the lead still closes the run; the worker goes on)
            log.exception("helping run %s failed", run_id)
        finally:
            await asyncio.sleep(self.poll)  # a closed run leaves the open set soon after: do not join it again
            self._helping.pop(run_id, None)
            self._wake.set()

    async def _heartbeat(self, active: _Active) -> None:
        while True:
            progress = active.progress or None
            try:
                cancel = self.queue.heartbeat(
                    active.entry.id, self.id, progress=progress, run_id=(progress or {}).get("run_id")
                )
            except BackendUnavailable:
                cancel = False  # the next beat tells; the run itself waits for Redis in its own calls
            if cancel and not active.cancelled:
                active.cancelled = True
                if active.harvest is not None:
                    active.harvest.request_stop()
                self.report(f"run {active.entry.id}: cancel requested; stopping cleanly")
            await asyncio.sleep(self.heartbeat_every)


def run_worker(
    root: Path,
    policy: NetworkPolicy,
    max_parallel: int = 2,
    once: bool = False,
    report: Callable[[str], None] | None = None,
    poll: float = 1.0,
    label: str | None = None,
    lease_seconds: float | None = None,
) -> None:
    """Run a worker until SIGINT/SIGTERM (or, with ``once``, until the queue is empty)."""
    import signal

    async def main() -> None:
        worker = Worker(
            root, policy, max_parallel=max_parallel, report=report, poll=poll, label=label, lease_seconds=lease_seconds
        )
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, worker.stop)
        try:
            with label_lock(root, worker.label):
                await worker.run(once=once)
        finally:
            worker.queue.close()

    eventloop.run(main())
