"""The run queue: harvests asked for (by staff or by the scheduler) and what became of them.

The web console only *queues* a run; ``strata worker`` claims it, runs it in its own process and
reports progress here; the scheduler keeps each job's next-run time here. Everything survives a
restart: a run whose worker died or was stopped is marked ``interrupted`` and queued again (up to
``MAX_ATTEMPTS``), so no queued or running work is lost.

    queued ──claim──> running ──> finished | failed | cancelled | interrupted (+ a retry queued)
       └──cancel──> cancelled

At most one queued-or-running entry per job, and one running entry per collection (a collection
has one harvest writer at a time, ``Collection.harvest_lock``).

``RunQueue`` (``harvester.jobs.queue_model``) is the queue's logic, written once; ``SQLiteQueue``
stores it in one SQLite file per collections root (``<root>/.strata/queue.sqlite``, WAL, short
``BEGIN IMMEDIATE`` transactions, so several worker and web processes can share it),
``RedisQueue`` (``harvester.jobs.redisqueue``) in the root's Redis. ``open_queue`` picks the root's
backend (``index.storage.backend``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from harvester.jobs.queue_model import (
    ACTIVE,
    DONE,
    MAX_ATTEMPTS,
    MODES,
    QueuedRun,
    RunQueue,
    ScheduleEntry,
    fields_of_entry,
    schedule_of_fields,
    worker_alive,
    worker_id,
)
from harvester.jobs.redisqueue import RedisQueue
from index.collection import root_state_dir
from index.storage.backend import backend_of
from index.storage.db import immediate_transaction
from strata.errors import ConfigError
from strata.times import iso_micro as iso

__all__ = [
    "ACTIVE",
    "DONE",
    "MAX_ATTEMPTS",
    "MODES",
    "QueuedRun",
    "RunQueue",
    "ScheduleEntry",
    "SQLiteQueue",
    "RedisQueue",
    "open_queue",
    "worker_alive",
    "worker_id",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    collection TEXT NOT NULL, job TEXT NOT NULL, mode TEXT NOT NULL,
    status TEXT NOT NULL, reason TEXT NOT NULL, requested_by TEXT,
    queued_at TEXT NOT NULL, started_at TEXT, finished_at TEXT,
    worker TEXT, heartbeat TEXT, cancel_requested INTEGER NOT NULL DEFAULT 0,
    attempt INTEGER NOT NULL DEFAULT 1, retry_of INTEGER,
    run_id TEXT, progress TEXT NOT NULL DEFAULT '{}', summary TEXT NOT NULL DEFAULT '{}', error TEXT
);
CREATE INDEX IF NOT EXISTS queue_status ON queue (status, id);
CREATE INDEX IF NOT EXISTS queue_job ON queue (collection, job, id);
CREATE TABLE IF NOT EXISTS schedule (
    collection TEXT NOT NULL, job TEXT NOT NULL, frequency TEXT NOT NULL,
    next_due TEXT, last_queued TEXT, paused INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (collection, job)
);
"""


class SQLiteQueue(RunQueue):
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA busy_timeout=30000")
        self.conn.executescript(_SCHEMA)

    @classmethod
    def for_root(cls, root: Path) -> SQLiteQueue:
        return cls(root_state_dir(root) / "queue.sqlite")

    def close(self) -> None:
        self.conn.close()

    def _tx(self):
        return immediate_transaction(self.conn)

    def _fields(self, entry_id):
        row = self.conn.execute("SELECT * FROM queue WHERE id=?", (entry_id,)).fetchone()
        return None if row is None else dict(row)

    def _rows(self, collection=None, job=None, statuses=None, newest_first=False, limit=None):
        where, args = [], []
        if collection is not None:
            where.append("collection=?")
            args.append(collection)
        if job is not None:
            where.append("job=?")
            args.append(job)
        if statuses:
            where.append(f"status IN ({','.join('?' * len(statuses))})")
            args.extend(statuses)
        sql = "SELECT * FROM queue" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY id DESC" if newest_first else " ORDER BY id"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        return [dict(r) for r in self.conn.execute(sql, args)]

    def _insert(self, fields):
        cols = list(fields)
        cur = self.conn.execute(
            f"INSERT INTO queue ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", tuple(fields.values())
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def _update(self, row, changes):
        if changes:
            sets = ", ".join(f"{name}=?" for name in changes)
            self.conn.execute(f"UPDATE queue SET {sets} WHERE id=?", (*changes.values(), row["id"]))

    def _drop_schedule(self, collection, job):
        self.conn.execute("DELETE FROM schedule WHERE collection=? AND job=?", (collection, job))

    def schedule(self, collection, job):
        row = self.conn.execute("SELECT * FROM schedule WHERE collection=? AND job=?", (collection, job)).fetchone()
        return None if row is None else schedule_of_fields(row)

    def save_schedule(self, entry):
        self.conn.execute(
            "INSERT INTO schedule VALUES (?,?,?,?,?,?) ON CONFLICT (collection, job) DO UPDATE SET "
            "frequency=excluded.frequency, next_due=excluded.next_due, last_queued=excluded.last_queued, "
            "paused=excluded.paused",
            (
                entry.collection,
                entry.job,
                entry.frequency,
                iso(entry.next_due) if entry.next_due else None,
                iso(entry.last_queued) if entry.last_queued else None,
                int(entry.paused),
            ),
        )

    def schedules(self):
        return [schedule_of_fields(r) for r in self.conn.execute("SELECT * FROM schedule ORDER BY collection, job")]

    def put_entry(self, entry):
        fields = fields_of_entry(entry)
        cols = list(fields)
        self.conn.execute(
            f"INSERT OR REPLACE INTO queue ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            tuple(fields.values()),
        )


BACKENDS = {"sqlite": SQLiteQueue.for_root, "redis": RedisQueue.for_root}


def open_queue(root: Path, backend: str = "auto") -> RunQueue:
    """The run queue of a collections root: ``auto`` (the default) takes the root's backend
    (``index.storage.backend``: Redis when ``STRATA_REDIS`` or the root's settings name one, else SQLite);
    ``sqlite`` or ``redis`` name one."""
    if backend == "auto":
        backend = backend_of(Path(root)).kind
    try:
        factory = BACKENDS[backend]
    except KeyError:
        raise ConfigError(f"unknown queue backend {backend!r}; known: auto, {', '.join(BACKENDS)}") from None
    return factory(Path(root))
