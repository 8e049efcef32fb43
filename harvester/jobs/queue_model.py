"""The run queue's model: entries, schedules, the ``RunQueue`` interface every backend implements
(``harvester.jobs.queue.SQLiteQueue``, ``harvester.jobs.redisqueue.RedisQueue``), and the
worker-liveness rules they share. ``harvester.jobs.queue`` re-exports all of it."""

from __future__ import annotations

import abc
import dataclasses
import json
import os
import socket
from datetime import UTC, datetime, timedelta

from strata.times import iso_micro
from strata.times import parse_iso_micro as parse_iso

MAX_ATTEMPTS = 3
ACTIVE = ("queued", "running")
DONE = ("finished", "failed", "cancelled", "interrupted")
MODES = ("auto", "incremental", "full")


@dataclasses.dataclass
class QueuedRun:
    id: int
    collection: str
    job: str
    mode: str
    status: str
    reason: str
    requested_by: str | None
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    worker: str | None
    heartbeat: datetime | None
    cancel_requested: bool
    attempt: int
    retry_of: int | None
    run_id: str | None
    progress: dict
    summary: dict
    error: str | None

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @classmethod
    def helping(cls, collection: str, job: str, run_id: str) -> QueuedRun:
        """A stand-in for a shared run this worker joins: the queue holds the lead's entry, not this."""
        now = datetime.now(UTC)
        return cls(
            0,
            collection,
            job,
            "auto",
            "running",
            "helping",
            None,
            now,
            now,
            None,
            None,
            None,
            False,
            1,
            None,
            run_id,
            {},
            {},
            None,
        )

    @property
    def harvest_mode(self) -> str | None:
        """The mode to pass to ``Harvest`` (None: let it choose)."""
        return None if self.mode == "auto" else self.mode


@dataclasses.dataclass
class ScheduleEntry:
    collection: str
    job: str
    frequency: str
    next_due: datetime | None
    last_queued: datetime | None
    paused: bool


class RunQueue(abc.ABC):
    """What the console, the worker and the scheduler need from a queue backend."""

    @abc.abstractmethod
    def enqueue(
        self,
        collection: str,
        job: str,
        mode: str = "auto",
        reason: str = "manual",
        requested_by: str | None = None,
        now: datetime | None = None,
        retry_of: int | None = None,
        attempt: int = 1,
    ) -> tuple[QueuedRun, bool]:
        """Queue a run; when the job already has a queued or running entry, return it and False."""

    @abc.abstractmethod
    def claim(self, worker: str, now: datetime | None = None, skip: frozenset[str] = frozenset()) -> QueuedRun | None:
        """Take the oldest queued run whose job and collection have nothing running, and whose
        collection is not in ``skip`` (the worker's own: it works on a shared run of it already)."""

    @abc.abstractmethod
    def heartbeat(
        self,
        entry_id: int,
        worker: str,
        progress: dict | None = None,
        run_id: str | None = None,
        now: datetime | None = None,
    ) -> bool:
        """Record that ``worker`` still runs the entry; True when staff asked to cancel it."""

    @abc.abstractmethod
    def finish(
        self,
        entry_id: int,
        status: str,
        summary: dict | None = None,
        error: str | None = None,
        now: datetime | None = None,
    ) -> None: ...

    @abc.abstractmethod
    def cancel(self, entry_id: int, now: datetime | None = None) -> QueuedRun:
        """Cancel a queued run at once; ask the worker to stop a running one."""

    @abc.abstractmethod
    def interrupt(self, entry_id: int, why: str, retry: bool = True, now: datetime | None = None) -> QueuedRun | None:
        """Mark a running entry interrupted and queue it again (unless out of attempts)."""

    @abc.abstractmethod
    def stale(self, now: datetime | None = None, stale_after: float = 60.0) -> list[QueuedRun]:
        """Running entries whose worker is gone: dead process on this host, or no heartbeat lately."""

    @abc.abstractmethod
    def get(self, entry_id: int) -> QueuedRun | None: ...

    @abc.abstractmethod
    def entries(
        self,
        collection: str | None = None,
        job: str | None = None,
        statuses: tuple[str, ...] | None = None,
        limit: int = 100,
    ) -> list[QueuedRun]: ...

    @abc.abstractmethod
    def schedule(self, collection: str, job: str) -> ScheduleEntry | None: ...

    @abc.abstractmethod
    def save_schedule(self, entry: ScheduleEntry) -> None: ...

    @abc.abstractmethod
    def forget_job(self, collection: str, job: str, now: datetime | None = None) -> None:
        """A job was deleted: drop its schedule, cancel its queued runs (history stays)."""

    @abc.abstractmethod
    def schedules(self) -> list[ScheduleEntry]:
        """Every job's schedule (``strata backend copy``)."""

    @abc.abstractmethod
    def put_entry(self, entry: QueuedRun) -> None:
        """Store ``entry`` whole, under its own id (``strata backend copy``; later ids follow it)."""

    def close(self) -> None:
        return None

    def recover(self, now: datetime | None = None, stale_after: float = 60.0) -> list[QueuedRun]:
        """Mark every stale running entry interrupted (each gets a retry); the entries marked."""
        out = []
        for entry in self.stale(now, stale_after):
            marked = self.interrupt(
                entry.id, f"worker {entry.worker} stopped while running it (restart or crash)", now=now
            )
            if marked:
                out.append(marked)
        return out


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"


def worker_alive(worker: str | None) -> bool | None:
    """True/False for a worker of this host; None when it runs elsewhere (only heartbeats tell)."""
    if not worker:
        return False
    host, _, rest = worker.partition(":")
    if host != socket.gethostname():
        return None
    try:
        os.kill(int(rest.split(":")[0]), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def is_stale(entry: QueuedRun, now: datetime, stale_after: float) -> bool:
    """A running entry whose worker is gone: a dead process on this host, or no heartbeat lately.
    A live process on this host may be busy (a long index merge holds its loop); it is trusted
    far longer than a silent worker elsewhere, but not forever (a pid reused after a reboot)."""
    alive = worker_alive(entry.worker)
    beat = entry.heartbeat or entry.queued_at
    limit = now - timedelta(seconds=max(stale_after * 10, 600) if alive else stale_after)
    return alive is False or beat < limit


def fields_of_entry(entry: QueuedRun) -> dict:
    """The stored fields of an entry (the inverse of ``entry_of_fields``)."""
    d = dataclasses.asdict(entry)
    for key in ("queued_at", "started_at", "finished_at", "heartbeat"):
        d[key] = iso_micro(d[key]) if d[key] else None
    d["progress"] = json.dumps(d["progress"], ensure_ascii=False, default=str)
    d["summary"] = json.dumps(d["summary"], ensure_ascii=False, default=str)
    d["cancel_requested"] = int(d["cancel_requested"])
    return d


def entry_of_fields(fields: dict) -> QueuedRun:
    """A ``QueuedRun`` from its stored fields (dates as ISO text, progress and summary as JSON)."""
    d = dict(fields)
    for key in ("queued_at", "started_at", "finished_at", "heartbeat"):
        d[key] = parse_iso(d.get(key))
    d["progress"] = json.loads(d.get("progress") or "{}")
    d["summary"] = json.loads(d.get("summary") or "{}")
    d["cancel_requested"] = bool(d.get("cancel_requested"))
    return QueuedRun(**d)
