"""The run queue's model: entries, schedules, ``RunQueue`` (the queue's logic, written once over the
storage each backend gives: ``harvester.jobs.queue.SQLiteQueue``, ``harvester.jobs.redisqueue.RedisQueue``),
and the worker-liveness rules. ``harvester.jobs.queue`` re-exports all of it."""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import json
import os
import socket
from datetime import UTC, datetime, timedelta
from typing import Any

from strata.errors import ConfigError, HarvestError
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
    """What the console, the worker and the scheduler need from a queue, written once over a
    backend's storage: each backend (``SQLiteQueue``, ``RedisQueue``) keeps entries as rows of their
    stored fields (``fields_of_entry``) and schedules, and says how a change is made exclusive."""

    # -- the storage, per backend ----------------------------------------------------------------
    @abc.abstractmethod
    def _tx(self) -> contextlib.AbstractContextManager:
        """One change at a time across every process sharing the queue: reads inside see what the
        change writes, and no other change runs meanwhile."""

    @abc.abstractmethod
    def _fields(self, entry_id: int) -> dict | None:
        """The stored fields of one entry."""

    @abc.abstractmethod
    def _rows(
        self,
        collection: str | None = None,
        job: str | None = None,
        statuses: tuple[str, ...] | None = None,
        newest_first: bool = False,
        limit: int | None = None,
    ) -> list[dict]:
        """Stored entries, in id order, filtered as asked."""

    @abc.abstractmethod
    def _insert(self, fields: dict) -> int:
        """A new entry (its id given by the backend); the id."""

    @abc.abstractmethod
    def _update(self, row: dict, changes: dict) -> None:
        """Store ``changes`` (stored fields) to the entry ``row`` (as read in this change)."""

    @abc.abstractmethod
    def _drop_schedule(self, collection: str, job: str) -> None: ...

    @abc.abstractmethod
    def schedule(self, collection: str, job: str) -> ScheduleEntry | None: ...

    @abc.abstractmethod
    def save_schedule(self, entry: ScheduleEntry) -> None: ...

    @abc.abstractmethod
    def schedules(self) -> list[ScheduleEntry]:
        """Every job's schedule (``strata backend copy``)."""

    @abc.abstractmethod
    def put_entry(self, entry: QueuedRun) -> None:
        """Store ``entry`` whole, under its own id (``strata backend copy``; later ids follow it)."""

    def close(self) -> None:
        return None

    # -- the queue, once -------------------------------------------------------------------------
    def get(self, entry_id: int) -> QueuedRun | None:
        row = self._fields(entry_id)
        return entry_of_fields(row) if row else None

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
        if mode not in MODES:
            raise ConfigError(f"run mode must be one of {', '.join(MODES)}, not {mode!r}")
        now = now or datetime.now(UTC)
        with self._tx():
            existing = self._rows(collection, job, ACTIVE, limit=1)
            if existing:
                return entry_of_fields(existing[0]), False
            entry_id = self._insert(_new_entry(collection, job, mode, reason, requested_by, now, attempt, retry_of))
        entry = self.get(entry_id)
        assert entry is not None
        return entry, True

    def claim(self, worker: str, now: datetime | None = None, skip: frozenset[str] = frozenset()) -> QueuedRun | None:
        """Take the oldest queued run whose collection has nothing running, and whose collection
        is not in ``skip`` (the worker's own: it works on a shared run of it already)."""
        now = now or datetime.now(UTC)
        with self._tx():
            rows = self._rows(statuses=ACTIVE)
            busy = {r["collection"] for r in rows if r["status"] == "running"} | set(skip)
            row = next((r for r in rows if r["status"] == "queued" and r["collection"] not in busy), None)
            if row is None:
                return None
            changes = {"status": "running", "worker": worker, "started_at": iso_micro(now), "heartbeat": iso_micro(now)}
            self._update(row, changes)
        return entry_of_fields({**row, **changes})

    def heartbeat(
        self,
        entry_id: int,
        worker: str,
        progress: dict | None = None,
        run_id: str | None = None,
        now: datetime | None = None,
    ) -> bool:
        """Record that ``worker`` still runs the entry; True when staff asked to cancel it."""
        now = now or datetime.now(UTC)
        with self._tx():
            row = self._fields(entry_id)
            if row is None:
                return False
            if row["worker"] == worker and row["status"] == "running":
                changes: dict = {"heartbeat": iso_micro(now)}
                if progress is not None:
                    changes["progress"] = json.dumps(progress, ensure_ascii=False, default=str)
                if run_id is not None:
                    changes["run_id"] = run_id
                self._update(row, changes)
        return bool(row["cancel_requested"])

    def finish(
        self,
        entry_id: int,
        status: str,
        summary: dict | None = None,
        error: str | None = None,
        now: datetime | None = None,
    ) -> None:
        if status not in DONE:
            raise ValueError(f"not a final status: {status!r}")
        now = now or datetime.now(UTC)
        summary = summary or {}
        with self._tx():
            row = self._fields(entry_id)
            if row is None or row["status"] != "running":
                return
            changes = {
                "status": status,
                "finished_at": iso_micro(now),
                "summary": json.dumps(summary, ensure_ascii=False, default=str),
                "error": error,
                "run_id": summary.get("run_id") or row["run_id"],
            }
            self._update(row, changes)

    def cancel(self, entry_id: int, now: datetime | None = None) -> QueuedRun:
        """Cancel a queued run at once; ask the worker to stop a running one."""
        now = now or datetime.now(UTC)
        with self._tx():
            row = self._fields(entry_id)
            if row is None:
                raise HarvestError(f"no queued run {entry_id}")
            changes = self._cancelling(row, now, "cancelled before it started")
            if changes:
                self._update(row, changes)
        return entry_of_fields({**row, **changes})

    @staticmethod
    def _cancelling(row: dict, now: datetime, why: str) -> dict:
        """A queued entry is cancelled; a running one asked to stop (its worker stops it)."""
        if row["status"] == "queued":
            return {"status": "cancelled", "finished_at": iso_micro(now), "error": why}
        if row["status"] == "running":
            return {"cancel_requested": 1}
        return {}

    def interrupt(self, entry_id: int, why: str, retry: bool = True, now: datetime | None = None) -> QueuedRun | None:
        """Mark a running entry interrupted and queue it again (unless out of attempts)."""
        now = now or datetime.now(UTC)
        with self._tx():
            row = self._fields(entry_id)
            if row is None or row["status"] != "running":
                return None
            again = retry and not row["cancel_requested"] and row["attempt"] < MAX_ATTEMPTS
            changes = {
                "status": "interrupted",
                "finished_at": iso_micro(now),
                "error": why + ("; queued again" if again else "; not retried"),
            }
            self._update(row, changes)
            if again:
                self._insert(
                    _new_entry(
                        row["collection"],
                        row["job"],
                        row["mode"],
                        "retry",
                        row["requested_by"],
                        now,
                        row["attempt"] + 1,
                        row["id"],
                    )  # fmt: skip
                )
        return entry_of_fields({**row, **changes})

    def stale(self, now: datetime | None = None, stale_after: float = 60.0) -> list[QueuedRun]:
        """Running entries whose worker is gone: dead process on this host, or no heartbeat lately."""
        now = now or datetime.now(UTC)
        running = [entry_of_fields(r) for r in self._rows(statuses=("running",))]
        return [entry for entry in running if is_stale(entry, now, stale_after)]

    def entries(
        self,
        collection: str | None = None,
        job: str | None = None,
        statuses: tuple[str, ...] | None = None,
        limit: int = 100,
    ) -> list[QueuedRun]:
        """The newest entries first."""
        return [entry_of_fields(r) for r in self._rows(collection, job, statuses, newest_first=True, limit=int(limit))]

    def forget_job(self, collection: str, job: str, now: datetime | None = None) -> None:
        """A job was deleted: drop its schedule, cancel its queued runs (history stays)."""
        now = now or datetime.now(UTC)
        with self._tx():
            self._drop_schedule(collection, job)
            for row in self._rows(collection, job, ACTIVE):
                self._update(row, self._cancelling(row, now, "job deleted"))

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


def _new_entry(
    collection: str,
    job: str,
    mode: str,
    reason: str,
    requested_by: str | None,
    now: datetime,
    attempt: int,
    retry_of: int | None,
) -> dict:
    """The stored fields of a queued entry, its id left to the backend."""
    return {
        "collection": collection,
        "job": job,
        "mode": mode,
        "status": "queued",
        "reason": reason,
        "requested_by": requested_by,
        "queued_at": iso_micro(now),
        "started_at": None,
        "finished_at": None,
        "worker": None,
        "heartbeat": None,
        "cancel_requested": 0,
        "attempt": attempt,
        "retry_of": retry_of,
        "run_id": None,
        "progress": "{}",
        "summary": "{}",
        "error": None,
    }


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


def schedule_of_fields(fields: Any) -> ScheduleEntry:
    """A ``ScheduleEntry`` from its stored fields (a mapping: dates as ISO text, ``paused`` 0/1 or bool)."""
    return ScheduleEntry(
        fields["collection"],
        fields["job"],
        fields["frequency"],
        parse_iso(fields["next_due"]),
        parse_iso(fields["last_queued"]),
        bool(fields["paused"]),
    )


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
