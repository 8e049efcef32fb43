"""The run queue and job schedule in the root's Redis (``index.storage.backend``): ``RunQueue`` as
``SQLiteQueue`` implements it, for several workers and console processes on several machines.

Each entry is one JSON value (``strata:queue:entry:<id>``, the SQLite row's fields) and its id in
the sorted set ``strata:queue:ids``; schedules are fields of the hash ``strata:schedule``. Every
change runs under the lock ``strata:queue:lock`` (what ``BEGIN IMMEDIATE`` is to the SQLite
queue): a claim, an enqueue and an interrupt read and write several entries, and two workers
must never take the same run. The lock expires by itself (``LOCK_SECONDS``) if its holder dies;
a holder that was only paused (stopped, swapped out, cut off) past that checks before each write
that the lock is still its own, and otherwise writes nothing more: the change is a
``BackendUnavailable``, made again by the caller (the worker waits and tries again), since what it
read may be stale and another process may hold the lock now.
Reads take no lock: each entry is written whole, so a reader sees it before or after a change.
A Redis that cannot be reached is a ``BackendUnavailable`` from any method (the console answers
503 with it; the worker waits and tries again).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from valkey.exceptions import LockError, LockNotOwnedError

from harvester.jobs.queue_model import (
    MAX_ATTEMPTS,
    MODES,
    QueuedRun,
    RunQueue,
    ScheduleEntry,
    entry_of_fields,
    fields_of_entry,
    is_stale,
)
from index.storage import redisdb
from index.storage.backend import backend_of
from strata.errors import BackendUnavailable, ConfigError, HarvestError
from strata.times import iso_micro as iso
from strata.times import parse_iso_micro as parse_iso
from strata.times import utc_now

LOCK_SECONDS = 10.0
LOCK_WAIT = 30.0  # seconds a change waits for another process's
IDS = redisdb.key("queue", "ids")
SEQ = redisdb.key("queue", "seq")
LOCK = redisdb.key("queue", "lock")
SCHEDULE = redisdb.key("schedule")


class _LockLost(LockError):
    """The queue's lock expired while this process held it."""


def _entry_key(entry_id: int) -> str:
    return redisdb.key("queue", "entry", str(entry_id))


class RedisQueue(RunQueue):
    def __init__(self, url: str, client: Any = None):
        self.url = url
        self.r = redisdb.Guarded(client if client is not None else redisdb.connect(url), url)
        self._change = threading.local()  # .lock: the lock of this thread's change in progress

    @classmethod
    def for_root(cls, root: Path) -> RedisQueue:
        backend = backend_of(root)
        if backend.kind != "redis":
            raise ConfigError(f"the queue backend redis needs a Redis URL: set STRATA_REDIS or redis in {root}")
        return cls(backend.redis_url)

    def close(self) -> None:
        self.r.close()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        lock = self.r.lock(LOCK, timeout=LOCK_SECONDS, blocking_timeout=LOCK_WAIT)
        try:
            with lock:
                self._change.lock = lock
                try:
                    yield
                finally:
                    self._change.lock = None
        except LockError as exc:  # not acquired in time, or expired while this process held it
            lost = isinstance(exc, (_LockLost, LockNotOwnedError))
            raise BackendUnavailable(
                f"the run queue's lock in Redis ({redisdb.shown(self.url)}) expired while this process held it "
                f"(paused for over {LOCK_SECONDS:g} s); its change was not finished and is made again"
                if lost
                else f"the run queue's lock in Redis ({redisdb.shown(self.url)}) stayed taken for {LOCK_WAIT:g} s"
            ) from None
        except redisdb.unavailable_errors() as exc:
            raise redisdb.unavailable(self.url, exc) from None

    def _check_held(self) -> None:
        """Before a write inside ``_tx``: the lock must still be this process's."""
        lock = getattr(self._change, "lock", None)
        if lock is not None and not lock.owned():
            raise _LockLost("no longer owned")

    # -- entries ---------------------------------------------------------------------------------
    def _fields(self, entry_id: int) -> dict | None:
        raw = self.r.get(_entry_key(entry_id))
        return json.loads(raw) if raw else None

    def _put(self, fields: dict) -> None:
        self._check_held()
        self.r.set(_entry_key(fields["id"]), json.dumps(fields, ensure_ascii=False, default=str))

    def _all(self, newest_first: bool = False) -> list[dict]:
        ids = self.r.zrevrange(IDS, 0, -1) if newest_first else self.r.zrange(IDS, 0, -1)
        if not ids:
            return []
        raws = self.r.mget([_entry_key(int(i)) for i in ids])
        return [json.loads(raw) for raw in raws if raw]

    def _insert(self, **fields) -> int:
        entry_id = int(self.r.incr(SEQ))
        row = {
            "id": entry_id,
            "started_at": None,
            "finished_at": None,
            "worker": None,
            "heartbeat": None,
            "cancel_requested": 0,
            "run_id": None,
            "progress": "{}",
            "summary": "{}",
            "error": None,
            **fields,
        }
        self._put(row)
        self.r.zadd(IDS, {str(entry_id): entry_id})
        return entry_id

    def _active(self, collection: str, job: str) -> dict | None:
        for row in self._all():
            if row["collection"] == collection and row["job"] == job and row["status"] in ("queued", "running"):
                return row
        return None

    def enqueue(
        self, collection, job, mode="auto", reason="manual", requested_by=None, now=None, retry_of=None, attempt=1
    ):
        if mode not in MODES:
            raise ConfigError(f"run mode must be one of {', '.join(MODES)}, not {mode!r}")
        now = now or utc_now()
        with self._tx():
            existing = self._active(collection, job)
            if existing is not None:
                return entry_of_fields(existing), False
            entry_id = self._insert(
                collection=collection,
                job=job,
                mode=mode,
                status="queued",
                reason=reason,
                requested_by=requested_by,
                queued_at=iso(now),
                attempt=attempt,
                retry_of=retry_of,
            )
        entry = self.get(entry_id)
        assert entry is not None
        return entry, True

    def claim(self, worker, now=None, skip=frozenset()):
        now = now or utc_now()
        with self._tx():
            rows = self._all()
            busy = {r["collection"] for r in rows if r["status"] == "running"} | set(skip)
            row = next((r for r in rows if r["status"] == "queued" and r["collection"] not in busy), None)
            if row is None:
                return None
            row.update(status="running", worker=worker, started_at=iso(now), heartbeat=iso(now))
            self._put(row)
        return entry_of_fields(row)

    def heartbeat(self, entry_id, worker, progress=None, run_id=None, now=None):
        now = now or utc_now()
        with self._tx():
            row = self._fields(entry_id)
            if row is None:
                return False
            if row["worker"] == worker and row["status"] == "running":
                row["heartbeat"] = iso(now)
                if progress is not None:
                    row["progress"] = json.dumps(progress, ensure_ascii=False, default=str)
                if run_id is not None:
                    row["run_id"] = run_id
                self._put(row)
        return bool(row["cancel_requested"])

    def finish(self, entry_id, status, summary=None, error=None, now=None):
        if status not in ("finished", "failed", "cancelled", "interrupted"):
            raise ValueError(f"not a final status: {status!r}")
        now = now or utc_now()
        summary = summary or {}
        with self._tx():
            row = self._fields(entry_id)
            if row is None or row["status"] != "running":
                return
            row.update(
                status=status,
                finished_at=iso(now),
                summary=json.dumps(summary, ensure_ascii=False, default=str),
                error=error,
                run_id=summary.get("run_id") or row["run_id"],
            )
            self._put(row)

    def cancel(self, entry_id, now=None):
        now = now or utc_now()
        with self._tx():
            row = self._fields(entry_id)
            if row is None:
                raise HarvestError(f"no queued run {entry_id}")
            if row["status"] == "queued":
                row.update(status="cancelled", finished_at=iso(now), error="cancelled before it started")
                self._put(row)
            elif row["status"] == "running":
                row["cancel_requested"] = 1
                self._put(row)
        return entry_of_fields(row)

    def interrupt(self, entry_id, why, retry=True, now=None):
        now = now or utc_now()
        with self._tx():
            row = self._fields(entry_id)
            if row is None or row["status"] != "running":
                return None
            again = retry and not row["cancel_requested"] and row["attempt"] < MAX_ATTEMPTS
            row.update(
                status="interrupted", finished_at=iso(now), error=why + ("; queued again" if again else "; not retried")
            )
            self._put(row)
            if again:
                self._insert(
                    collection=row["collection"],
                    job=row["job"],
                    mode=row["mode"],
                    status="queued",
                    reason="retry",
                    requested_by=row["requested_by"],
                    queued_at=iso(now),
                    attempt=row["attempt"] + 1,
                    retry_of=row["id"],
                )
        return entry_of_fields(row)

    def stale(self, now=None, stale_after=60.0):
        now = now or utc_now()
        running = [entry_of_fields(r) for r in self._all() if r["status"] == "running"]
        return [entry for entry in running if is_stale(entry, now, stale_after)]

    def get(self, entry_id):
        row = self._fields(entry_id)
        return entry_of_fields(row) if row else None

    def entries(self, collection=None, job=None, statuses=None, limit=100):
        out: list[QueuedRun] = []
        for row in self._all(newest_first=True):
            if collection is not None and row["collection"] != collection:
                continue
            if job is not None and row["job"] != job:
                continue
            if statuses and row["status"] not in statuses:
                continue
            out.append(entry_of_fields(row))
            if len(out) >= int(limit):
                break
        return out

    # -- schedules -------------------------------------------------------------------------------
    def schedule(self, collection, job):
        raw = self.r.hget(SCHEDULE, f"{collection}\t{job}")
        if not raw:
            return None
        d = json.loads(raw)
        return ScheduleEntry(
            d["collection"],
            d["job"],
            d["frequency"],
            parse_iso(d["next_due"]),
            parse_iso(d["last_queued"]),
            d["paused"],
        )

    def save_schedule(self, entry):
        value = {
            "collection": entry.collection,
            "job": entry.job,
            "frequency": entry.frequency,
            "next_due": iso(entry.next_due) if entry.next_due else None,
            "last_queued": iso(entry.last_queued) if entry.last_queued else None,
            "paused": bool(entry.paused),
        }
        self.r.hset(SCHEDULE, f"{entry.collection}\t{entry.job}", json.dumps(value))

    def schedules(self):
        out = []
        for raw in self.r.hvals(SCHEDULE):
            d = json.loads(raw)
            out.append(
                ScheduleEntry(
                    d["collection"],
                    d["job"],
                    d["frequency"],
                    parse_iso(d["next_due"]),
                    parse_iso(d["last_queued"]),
                    d["paused"],
                )
            )
        return sorted(out, key=lambda e: (e.collection, e.job))

    def put_entry(self, entry):
        with self._tx():
            fields = fields_of_entry(entry)
            self._put(fields)
            self.r.zadd(IDS, {str(entry.id): entry.id})
            if int(self.r.get(SEQ) or 0) < entry.id:
                self.r.set(SEQ, entry.id)

    def forget_job(self, collection, job, now=None):
        now = now or utc_now()
        with self._tx():
            self.r.hdel(SCHEDULE, f"{collection}\t{job}")
            for row in self._all():
                if row["collection"] != collection or row["job"] != job:
                    continue
                if row["status"] == "queued":
                    row.update(status="cancelled", finished_at=iso(now), error="job deleted")
                    self._put(row)
                elif row["status"] == "running":
                    row["cancel_requested"] = 1
                    self._put(row)
