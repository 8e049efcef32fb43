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
and web processes can share it). A Redis backend would implement the same methods; ``open_queue``
picks the backend by name.
"""

from __future__ import annotations

import abc
import dataclasses
import json
import os
import socket
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

from index.collection import root_state_dir
from index.db import immediate_transaction
from strata.errors import ConfigError, HarvestError
from strata.times import iso_micro as iso
from strata.times import parse_iso_micro as parse_iso
from strata.times import utc_now

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
    def claim(self, worker: str, now: datetime | None = None) -> QueuedRun | None:
        """Take the oldest queued run whose job and collection have nothing running."""

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
        if row is None:
            return None
        d = dict(row)
        for key in ("queued_at", "started_at", "finished_at", "heartbeat"):
            d[key] = parse_iso(d[key])
        d["progress"] = json.loads(d["progress"] or "{}")
        d["summary"] = json.loads(d["summary"] or "{}")
        d["cancel_requested"] = bool(d["cancel_requested"])
        return QueuedRun(**d)

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

    def claim(self, worker, now=None):
        now = now or utc_now()
        with self._tx():
            row = self.conn.execute(
                "SELECT q.id FROM queue q WHERE q.status='queued' AND NOT EXISTS ("
                " SELECT 1 FROM queue r WHERE r.status='running' AND r.collection=q.collection) "
                "ORDER BY q.id LIMIT 1"
            ).fetchone()
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
        limit = now - timedelta(seconds=stale_after)
        out = []
        # A live process on this host may be busy (a long index merge holds its loop); trust it
        # far longer than a silent worker elsewhere, but not forever (a pid reused after a reboot).
        patient = now - timedelta(seconds=max(stale_after * 10, 600))
        for row in self.conn.execute("SELECT * FROM queue WHERE status='running' ORDER BY id"):
            entry = self._row(row)
            assert entry is not None  # a row was there
            alive = worker_alive(entry.worker)
            beat = entry.heartbeat or entry.queued_at
            if alive is False or beat < (patient if alive else limit):
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


BACKENDS = {"sqlite": SQLiteQueue.for_root}


def open_queue(root: Path, backend: str = "sqlite") -> RunQueue:
    """The run queue of a collections root, from the backend named (``sqlite``; later ``redis``)."""
    try:
        factory = BACKENDS[backend]
    except KeyError:
        raise ConfigError(f"unknown queue backend {backend!r}; known: {', '.join(BACKENDS)}") from None
    return factory(Path(root))
