"""The run queue and job schedule in the root's Redis (``index.storage.backend``): the storage of
``RunQueue`` (whose logic is ``harvester.jobs.queue_model``'s), for several workers and console
processes on several machines.

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

from harvester.jobs.queue_model import RunQueue, fields_of_entry, schedule_of_fields
from index.storage import redisdb
from index.storage.backend import backend_of
from strata.errors import BackendUnavailable, ConfigError
from strata.times import iso_micro as iso

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
    def _fields(self, entry_id):
        raw = self.r.get(_entry_key(entry_id))
        return json.loads(raw) if raw else None

    def _put(self, fields: dict) -> None:
        self._check_held()
        self.r.set(_entry_key(fields["id"]), json.dumps(fields, ensure_ascii=False, default=str))

    def _rows(self, collection=None, job=None, statuses=None, newest_first=False, limit=None):
        ids = self.r.zrevrange(IDS, 0, -1) if newest_first else self.r.zrange(IDS, 0, -1)
        if not ids:
            return []
        out = []
        for raw in self.r.mget([_entry_key(int(i)) for i in ids]):
            row = json.loads(raw) if raw else None
            if row is None or collection is not None and row["collection"] != collection:
                continue
            if job is not None and row["job"] != job or statuses and row["status"] not in statuses:
                continue
            out.append(row)
            if limit is not None and len(out) >= limit:
                break
        return out

    def _insert(self, fields):
        entry_id = int(self.r.incr(SEQ))
        self._put({"id": entry_id, **fields})
        self.r.zadd(IDS, {str(entry_id): entry_id})
        return entry_id

    def _update(self, row, changes):
        if changes:
            row.update(changes)
            self._put(row)

    # -- schedules -------------------------------------------------------------------------------
    def schedule(self, collection, job):
        raw = self.r.hget(SCHEDULE, f"{collection}\t{job}")
        if not raw:
            return None
        return schedule_of_fields(json.loads(raw))

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
        entries = [schedule_of_fields(json.loads(raw)) for raw in self.r.hvals(SCHEDULE)]
        return sorted(entries, key=lambda e: (e.collection, e.job))

    def put_entry(self, entry):
        with self._tx():
            fields = fields_of_entry(entry)
            self._put(fields)
            self.r.zadd(IDS, {str(entry.id): entry.id})
            if int(self.r.get(SEQ) or 0) < entry.id:
                self.r.set(SEQ, entry.id)

    def _drop_schedule(self, collection, job):
        self.r.hdel(SCHEDULE, f"{collection}\t{job}")
