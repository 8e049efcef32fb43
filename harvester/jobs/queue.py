"""The run queue: harvests asked for (by staff or by the scheduler) and what became of them.

The web console only *queues* a run; ``strata worker`` claims it, runs it in its own process and
reports progress here; the scheduler keeps each job's next-run time here. Everything survives a
restart: a run whose worker died or was stopped is marked ``interrupted`` and queued again (up to
``MAX_ATTEMPTS``), so no queued or running work is lost.

    queued ──claim──> running ──> finished | failed | cancelled | interrupted (+ a retry queued)
       └──cancel──> cancelled

At most one queued-or-running entry per job, and one running entry per collection (a collection
has one harvest writer at a time, ``Collection.harvest_lock``).

``RunQueue`` is the interface; ``SQLiteQueue`` keeps it in one SQLite file per collections root
(``<root>/.strata/queue.sqlite``, WAL, short ``BEGIN IMMEDIATE`` transactions, so several worker
and web processes can share it); ``RedisQueue`` (``harvester.jobs.redisqueue``) keeps it in the root's
Redis. ``open_queue`` picks the root's backend (``index.storage.backend``).
"""

from __future__ import annotations

import json
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
    entry_of_fields,
    fields_of_entry,
    is_stale,
    worker_alive,
    worker_id,
)
from harvester.jobs.redisqueue import RedisQueue
from index.collection import root_state_dir
from index.storage.backend import backend_of
from index.storage.db import immediate_transaction
from strata.errors import ConfigError, HarvestError
from strata.times import iso_micro as iso
from strata.times import parse_iso_micro as parse_iso
from strata.times import utc_now

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

    @staticmethod
    def _row(row: sqlite3.Row | None) -> QueuedRun | None:
        return None if row is None else entry_of_fields(dict(row))

    def _active(self, collection: str, job: str) -> QueuedRun | None:
        row = self.conn.execute(
            "SELECT * FROM queue WHERE collection=? AND job=? AND status IN ('queued','running') ORDER BY id LIMIT 1",
            (collection, job),
        ).fetchone()
        return self._row(row)

    def enqueue(
        self, collection, job, mode="auto", reason="manual", requested_by=None, now=None, retry_of=None, attempt=1
    ):
        if mode not in MODES:
            raise ConfigError(f"run mode must be one of {', '.join(MODES)}, not {mode!r}")
        now = now or utc_now()
        with self._tx():
            existing = self._active(collection, job)
            if existing is not None:
                return existing, False
            cur = self.conn.execute(
                "INSERT INTO queue (collection, job, mode, status, reason, requested_by, queued_at, attempt, retry_of) "
                "VALUES (?,?,?,?,?,?,?,?,?)",
                (collection, job, mode, "queued", reason, requested_by, iso(now), attempt, retry_of),
            )
            entry_id = cur.lastrowid
        return self.get(entry_id), True

    def claim(self, worker, now=None, skip=frozenset()):
        now = now or utc_now()
        with self._tx():
            rows = self.conn.execute(
                "SELECT q.id, q.collection FROM queue q WHERE q.status='queued' AND NOT EXISTS ("
                " SELECT 1 FROM queue r WHERE r.status='running' AND r.collection=q.collection) "
                "ORDER BY q.id"
            )
            row = next((r for r in rows if r["collection"] not in skip), None)
            if row is None:
                return None
            self.conn.execute(
                "UPDATE queue SET status='running', worker=?, started_at=?, heartbeat=? WHERE id=?",
                (worker, iso(now), iso(now), row["id"]),
            )
        return self.get(row["id"])

    def heartbeat(self, entry_id, worker, progress=None, run_id=None, now=None):
        now = now or utc_now()
        sets, args = ["heartbeat=?"], [iso(now)]
        if progress is not None:
            sets.append("progress=?")
            args.append(json.dumps(progress, ensure_ascii=False, default=str))
        if run_id is not None:
            sets.append("run_id=?")
            args.append(run_id)
        self.conn.execute(
            f"UPDATE queue SET {', '.join(sets)} WHERE id=? AND worker=? AND status='running'",
            (*args, entry_id, worker),
        )
        row = self.conn.execute("SELECT cancel_requested FROM queue WHERE id=?", (entry_id,)).fetchone()
        return bool(row and row[0])

    def finish(self, entry_id, status, summary=None, error=None, now=None):
        if status not in DONE:
            raise ValueError(f"not a final status: {status!r}")
        now = now or utc_now()
        summary = summary or {}
        with self._tx():
            self.conn.execute(
                "UPDATE queue SET status=?, finished_at=?, summary=?, error=?, run_id=COALESCE(?, run_id) "
                "WHERE id=? AND status='running'",
                (
                    status,
                    iso(now),
                    json.dumps(summary, ensure_ascii=False, default=str),
                    error,
                    summary.get("run_id"),
                    entry_id,
                ),
            )

    def cancel(self, entry_id, now=None):
        now = now or utc_now()
        with self._tx():
            entry = self.get(entry_id)
            if entry is None:
                raise HarvestError(f"no queued run {entry_id}")
            if entry.status == "queued":
                self.conn.execute(
                    "UPDATE queue SET status='cancelled', finished_at=?, error=? WHERE id=?",
                    (iso(now), "cancelled before it started", entry_id),
                )
            elif entry.status == "running":
                self.conn.execute("UPDATE queue SET cancel_requested=1 WHERE id=?", (entry_id,))
        return self.get(entry_id)

    def interrupt(self, entry_id, why, retry=True, now=None):
        now = now or utc_now()
        with self._tx():
            entry = self.get(entry_id)
            if entry is None or entry.status != "running":
                return None
            again = retry and not entry.cancel_requested and entry.attempt < MAX_ATTEMPTS
            note = why + ("; queued again" if again else "; not retried")
            self.conn.execute(
                "UPDATE queue SET status='interrupted', finished_at=?, error=? WHERE id=?", (iso(now), note, entry_id)
            )
            if again:
                self.conn.execute(
                    "INSERT INTO queue (collection, job, mode, status, reason, requested_by, queued_at, attempt, "
                    "retry_of) VALUES (?,?,?,?,?,?,?,?,?)",
                    (
                        entry.collection,
                        entry.job,
                        entry.mode,
                        "queued",
                        "retry",
                        entry.requested_by,
                        iso(now),
                        entry.attempt + 1,
                        entry.id,
                    ),
                )
        return self.get(entry_id)

    def stale(self, now=None, stale_after=60.0):
        now = now or utc_now()
        out = []
        for row in self.conn.execute("SELECT * FROM queue WHERE status='running' ORDER BY id"):
            entry = self._row(row)
            assert entry is not None  # a row was there
            if is_stale(entry, now, stale_after):
                out.append(entry)
        return out

    def get(self, entry_id):
        return self._row(self.conn.execute("SELECT * FROM queue WHERE id=?", (entry_id,)).fetchone())

    def entries(self, collection=None, job=None, statuses=None, limit=100):
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
        sql += " ORDER BY id DESC LIMIT ?"
        return [self._row(r) for r in self.conn.execute(sql, (*args, int(limit)))]

    def schedule(self, collection, job):
        row = self.conn.execute("SELECT * FROM schedule WHERE collection=? AND job=?", (collection, job)).fetchone()
        if row is None:
            return None
        return ScheduleEntry(
            row["collection"],
            row["job"],
            row["frequency"],
            parse_iso(row["next_due"]),
            parse_iso(row["last_queued"]),
            bool(row["paused"]),
        )

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

    def forget_job(self, collection, job, now=None):
        now = now or utc_now()
        with self._tx():
            self.conn.execute("DELETE FROM schedule WHERE collection=? AND job=?", (collection, job))
            self.conn.execute(
                "UPDATE queue SET status='cancelled', finished_at=?, error='job deleted' "
                "WHERE collection=? AND job=? AND status='queued'",
                (iso(now), collection, job),
            )
            self.conn.execute(
                "UPDATE queue SET cancel_requested=1 WHERE collection=? AND job=? AND status='running'",
                (collection, job),
            )

    def schedules(self):
        rows = self.conn.execute("SELECT * FROM schedule ORDER BY collection, job").fetchall()
        return [
            ScheduleEntry(
                r["collection"],
                r["job"],
                r["frequency"],
                parse_iso(r["next_due"]),
                parse_iso(r["last_queued"]),
                bool(r["paused"]),
            )
            for r in rows
        ]

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
