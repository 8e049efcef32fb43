"""The scheduler: queue each job when its frequency comes round (``strata scheduler``).

Every ``tick`` reads the job files (the source of truth: a job edited by hand or in the console is
picked up at the next tick) and the next-run time kept for each job in the run queue's database.
A job whose time has come is queued once; its next time is the first slot after *now*, so after
downtime a missed job runs once, not once per missed slot. A job whose run is still queued or
running is not queued again (the slot is spent). Paused and ``manual`` jobs are never queued.

Frequencies: ``hourly``, ``daily``, ``weekly`` (fixed intervals); ``monthly`` and ``quarterly``
(calendar months, same day of month, clamped to the month's length); or a five-field cron
expression in UTC (evaluated by ``cronsim``); or ``adaptive``: one interval after its last run, the
interval set by the change rates its runs observed (``harvester.change_rates``). A job never run by the scheduler
starts from its last
harvest run (``runs`` in the collection database): an interval job that never ran is due at once,
a cron job at its next slot.

The clock is injected (``clock=``), so tests move time by hand.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harvester.change_rates import HISTORY, adaptive_interval, pooled_rate
from harvester.frequency import ADAPTIVE, first_due, next_slot
from harvester.job import JobSettings, load_job_file
from harvester.jobs.queue import QueuedRun, RunQueue, ScheduleEntry
from index.collection import Collection, list_job_collections
from index.storage.state import job_runs, last_started, open_readonly
from strata.errors import ConfigError, StrataError
from strata.times import utc_now

log = logging.getLogger(__name__)
Clock = Callable[[], datetime]


@dataclasses.dataclass
class TickResult:
    queued: list[QueuedRun] = dataclasses.field(default_factory=list)
    skipped: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)  # (coll, job, why)
    errors: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)


def iter_jobs(root: Path) -> Iterator[tuple[str, str, JobSettings | ConfigError]]:
    for name in list_job_collections(root):
        coll = Collection(root, name)
        for path in sorted(coll.jobs_dir.glob("*.toml")):
            try:
                yield name, path.stem, load_job_file(path)
            except StrataError as exc:
                yield name, path.stem, ConfigError(exc.message)


def _parse_started(text: str) -> datetime:
    return datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)


def job_history(root: Path, collection: str, job: str) -> list[dict]:
    """The job's runs in the collection database, oldest first, figures decoded ([] when none)."""
    conn = open_readonly(Collection(root, collection).db_path)
    if conn is None:
        return []
    try:
        return job_runs(conn, job)
    finally:
        conn.close()


def last_run_started(root: Path, collection: str, job: str) -> datetime | None:
    conn = open_readonly(Collection(root, collection).db_path)
    if conn is None:
        return None
    try:
        text = last_started(conn, job)
    finally:
        conn.close()
    if not text:
        return None
    return datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)


class Scheduler:
    def __init__(self, root: Path, queue: RunQueue, clock: Clock = utc_now):
        self.root = Path(root)
        self.queue = queue
        self.clock = clock

    def tick(self) -> TickResult:
        result = TickResult()
        for collection, name, job in iter_jobs(self.root):
            if isinstance(job, ConfigError):
                result.errors.append((collection, name, job.message))
                continue
            try:
                self._consider(collection, job, result)
            except ConfigError as exc:
                result.errors.append((collection, name, exc.message))
        return result

    def _consider(self, collection: str, job: JobSettings, result: TickResult) -> None:
        now = self.clock()
        frequency = job.frequency
        if frequency == "manual":
            return
        if frequency == ADAPTIVE:
            self._consider_adaptive(collection, job, now, result)
            return
        entry = self.queue.schedule(collection, job.name)
        if entry is None or entry.frequency != frequency or entry.next_due is None:
            last = last_run_started(self.root, collection, job.name)
            entry = ScheduleEntry(
                collection,
                job.name,
                frequency,
                first_due(frequency, last, now),
                entry.last_queued if entry else None,
                entry.paused if entry else False,
            )
            self.queue.save_schedule(entry)
        if entry.paused:
            result.skipped.append((collection, job.name, "paused"))
            return
        assert entry.next_due is not None  # set just above when the queue held none
        if entry.next_due > now:
            return
        queued, created = self.queue.enqueue(collection, job.name, "auto", reason="schedule", now=now)
        if created:
            result.queued.append(queued)
        else:
            result.skipped.append((collection, job.name, f"run {queued.id} still {queued.status}"))
        entry.next_due = next_slot(frequency, entry.next_due, now)
        entry.last_queued = now
        self.queue.save_schedule(entry)

    def _consider_adaptive(self, collection: str, job: JobSettings, now: datetime, result: TickResult) -> None:
        """Due one adaptive interval (``harvester.change_rates``) after the job's last run started or
        was last queued, whichever is later; at once when it never ran. Recomputed every tick, so a
        run that just ended moves the next time by what it saw."""
        entry = self.queue.schedule(collection, job.name)
        if entry is None or entry.frequency != ADAPTIVE:
            entry = ScheduleEntry(
                collection,
                job.name,
                ADAPTIVE,
                None,
                entry.last_queued if entry else None,
                entry.paused if entry else False,
            )
        if entry.paused:
            self.queue.save_schedule(entry)
            result.skipped.append((collection, job.name, "paused"))
            return
        history = job_history(self.root, collection, job.name)
        interval = timedelta(
            seconds=adaptive_interval(
                pooled_rate(history[-HISTORY:]), job.adaptive_target, job.adaptive_min, job.adaptive_max
            )
        )
        starts = [_parse_started(run["started"]) for run in history if run.get("started")]
        base = max([t for t in (max(starts, default=None), entry.last_queued) if t is not None], default=None)
        entry.next_due = now if base is None else base + interval
        if entry.next_due > now:
            self.queue.save_schedule(entry)
            return
        queued, created = self.queue.enqueue(collection, job.name, "auto", reason="schedule", now=now)
        if created:
            result.queued.append(queued)
        else:
            result.skipped.append((collection, job.name, f"run {queued.id} still {queued.status}"))
        entry.last_queued, entry.next_due = now, now + interval
        self.queue.save_schedule(entry)

    def run_forever(
        self,
        interval: float = 30.0,
        stop: threading.Event | None = None,
        report: Callable[[TickResult], None] | None = None,
    ) -> None:
        stop = stop or threading.Event()
        while not stop.is_set():
            try:
                outcome = self.tick()
            except Exception:  # a bad tick must not end the scheduler; the next one tries again
                log.exception("scheduler tick failed")
            else:
                if report:
                    report(outcome)
            stop.wait(interval)


def set_paused(queue: RunQueue, collection: str, job: JobSettings, paused: bool, now: datetime | None = None) -> None:
    """Pause or resume a job's schedule (the console's Pause button)."""
    entry = queue.schedule(collection, job.name)
    if entry is None:
        entry = ScheduleEntry(collection, job.name, job.frequency, None, None, paused)
    entry.paused = paused
    if not paused:
        entry.next_due = None  # recomputed at the next tick from the last run, not from old slots
    queue.save_schedule(entry)


__all__ = ["Scheduler", "TickResult", "iter_jobs", "set_paused"]
