"""SQLite connections as Strata opens them: WAL, autocommit with explicit transactions, a busy
timeout, and the owner's schema applied. Used by the harvest state (``index.state``, the only module
with SQL on ``harvest.sqlite``), the run queue and the staff accounts."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

log = logging.getLogger(__name__)


class immediate_transaction:
    """``with immediate_transaction(conn):`` BEGIN IMMEDIATE, then COMMIT, or ROLLBACK on error
    (connections are opened in autocommit mode: transactions are always explicit)."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> None:
        self.conn.execute("COMMIT" if exc_type is None else "ROLLBACK")


def connect(path: Path, schema: str, version: int, journal: str = "wal") -> sqlite3.Connection:
    """``journal``: ``wal`` (one machine), or ``delete`` for a file that processes on several machines
    open (a root shared over NFS with Redis as its backend): WAL keeps its index in shared memory,
    which no network file system shares, so there a rollback journal and file locks are used."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA busy_timeout=30000")
    _journal_mode(conn, path, journal)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(schema)
    row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    if row is None:
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(version),))
    return conn


def _journal_mode(conn: sqlite3.Connection, path: Path, journal: str) -> None:
    """Set the file's journal mode. Leaving WAL needs the file to itself: while another process has
    it open it stays in WAL (said in the log), and the next connection tries again."""
    if journal == "wal":
        conn.execute("PRAGMA journal_mode=WAL")
        return
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "delete":
        return  # (waits, as any read, for a writer's lock)
    conn.execute("PRAGMA busy_timeout=0")
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
    except sqlite3.OperationalError as exc:
        log.warning("%s stays in WAL mode for now (%s): it leaves it once no other process has it open", path, exc)
    finally:
        conn.execute("PRAGMA busy_timeout=30000")
